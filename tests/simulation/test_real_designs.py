"""Tables laid out as published sweeps are (``simulation.tables.RealDesign``: each size its own token budgets, each
cell its own batches, each size its own LR grid): the law over every point is the answer where no line through a
base point exists; every point's fate is counted; the backtest refits without each axis's largest value; a run no
setup of which can be fitted is refused in one line, with nothing written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.analysis.fates import Fates, count_fates, no_optimum_reason
from mutransfer.analysis.law import judge_law
from mutransfer.analysis.result import Judgement, Summary
from mutransfer.analysis.summary import summarize_run
from mutransfer.cli import app
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.tables import RealDesign, SimulatedTable, simulate_real_table

AXES = ["--axis", "width", "--axis", "params=n_params", "--axis", "tokens", "--axis", "batch=bs"]
KEPT_SWEEP = Path(__file__).resolve().parents[2] / "docs" / "data" / "readme"


def run_cli(*words: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(w) for w in words])
    return result.exit_code, result.output


def import_table(table: pd.DataFrame, directory: Path, name: str = "runs") -> tuple[int, str, Path]:
    path = directory / f"{name}.csv"
    table.to_csv(path, index=False)
    out = directory / name
    code, output = run_cli("import", path, "--lr", "lr", "--loss", "val/loss", *AXES, "--diverged-above", "10",
                           "--out", out)
    return code, output, out


@pytest.fixture(scope="module")
def real() -> tuple[SimulatedTable, RealDesign]:
    design = RealDesign()
    return simulate_real_table(real_truth(diverge_after=2.5), design, np.random.default_rng(1)), design


@pytest.fixture(scope="module")
def imported(real: tuple[SimulatedTable, RealDesign], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    code, output, out = import_table(real[0].table, tmp_path_factory.mktemp("real"))
    assert code == 0, output
    return out, output


def test_the_design_is_laid_out_as_published_sweeps_are(real: tuple[SimulatedTable, RealDesign]) -> None:
    """Sizes with their own budgets (the smallest budget the smallest size's alone), batch sets that differ per
    cell, per-size LR grids, a few percent diverged."""
    table = real[0].table
    budgets = table.groupby("n_params")["tokens"].apply(lambda t: frozenset(t.unique()))
    assert len(budgets) == 5 and all(3 <= len(b) <= 4 for b in budgets)
    smallest = table["tokens"].min()
    assert set(table.loc[table["tokens"] == smallest, "n_params"]) == {table["n_params"].min()}
    batches = table.groupby(["n_params", "tokens"])["bs"].apply(lambda b: frozenset(b.unique()))
    assert batches.nunique() > 1
    grids = table.groupby("n_params")["lr"].apply(lambda lr: frozenset(np.round(np.log2(lr.unique()), 6)))
    assert grids.nunique() == len(grids)
    diverged = (~np.isfinite(table["val/loss"]) | (table["val/loss"] > 10)).mean()
    assert 0.03 <= diverged <= 0.15


def test_the_law_is_the_answer_where_no_base_point_line_exists(imported: tuple[Path, str],
                                                               real: tuple[SimulatedTable, RealDesign]) -> None:
    run_dir, output = imported
    summary = summarize_run(run_dir)
    setup = summary.setups()["imported"]
    trials = pd.read_csv(run_dir / "trials.csv")
    base = trials[(trials["tokens"] == trials["tokens"].min()) & (trials["batch_size"] == trials["batch_size"].min())]
    assert base["params"].nunique() < 2, "no params line through the base point"
    assert setup.primary == "law" and setup.line is None and setup.law is not None
    law = setup.law
    assert set(law.axes) == {"params", "tokens", "batch"}
    for name, slope in real[1].slopes.items():
        low, high = law.slope_ci[name]
        assert low < slope < high, (name, law.slope_ci[name])
    assert law.verdicts["params"].verdict == "drifts" and law.verdicts["batch"].verdict == "drifts"
    assert setup.verdict == law.verdicts[setup.first_axis].verdict
    params_line, batch_line = setup.axes["params"], setup.axes["batch"]
    assert params_line.at == {"tokens": trials["tokens"].min(), "batch": trials["batch_size"].min()}
    assert len(params_line.points) == 1, "each budget is one size's: no cut holds two sizes"
    assert batch_line.at is not None and len(batch_line.measured()) >= 2
    assert setup.fates is not None and setup.fates.total == len(law.points)
    assert setup.fates.measured == law.points_used
    assert f"imported: {setup.fates.line()}" in output
    assert "law log2 η*" in output and "params -0.6" in output


def test_censored_points_are_counted_and_their_pull_reported(imported: tuple[Path, str]) -> None:
    law = summarize_run(imported[0]).setups()["imported"].law
    assert law is not None
    censored = [p for p in law.points if p.result.censored]
    assert law.censored == len(censored) > 0
    assert set(law.censored_shift) == set(law.axes)
    assert all(abs(shift) < 0.3 for shift in law.censored_shift.values())


def test_a_contradicting_bound_or_a_failed_law_blocks_every_verdict(imported: tuple[Path, str]) -> None:
    law = summarize_run(imported[0]).setups()["imported"].law
    assert law is not None and law.verdicts["params"].verdict == "drifts"
    law.contradicted = [{"params": 2e7, "tokens": 1e8, "batch": 32}]
    judge_law(law)
    assert {j.verdict for j in law.verdicts.values()} == {"inconclusive"}
    assert "lies beyond the law's range there" in law.verdicts["params"].reason
    law.contradicted, law.fails_lack_of_fit = [], True
    judge_law(law)
    assert {j.verdict for j in law.verdicts.values()} == {"inconclusive"}
    assert "lie off the law" in law.verdicts["batch"].reason


def test_transfer_evaluates_the_law_and_prints_the_backtest(imported: tuple[Path, str],
                                                            real: tuple[SimulatedTable, RealDesign]) -> None:
    run_dir = imported[0]
    code, output = run_cli("transfer", "--from", run_dir, "--at", "params=7e9", "--at", "tokens=1.4e11", "--at",
                           "batch=4096")
    assert code == 0, output
    document = yaml.safe_load((run_dir / "transfer_params7e+09_tokens1.4e+11_batch4096.yaml").read_text())
    truth = real[1].law({"params": 7e9, "tokens": 1.4e11, "batch": 4096.0})
    low, high = document["prediction"]["interval"]
    assert low < truth < high
    assert "backtest: " in output and "held-out points" in document["backtest"]["line"]


def test_the_backtest_of_an_import_holds_out_each_axis_s_largest_value(imported: tuple[Path, str]) -> None:
    run_dir = imported[0]
    before = json.loads((run_dir / "summary.json").read_text())
    code, output = run_cli("backtest", run_dir)
    assert code == 0, output
    summary = summarize_run(run_dir)
    setup = summary.setups()["imported"]
    backtest = setup.backtest
    assert backtest is not None and backtest.fit == "law"
    law = setup.law
    assert law is not None
    largest = {name: max(float(p.at[name]) for p in law.points if p.result.estimated) for name in law.axes}
    for point in backtest.points:
        assert float(point.at[point.axis]) == largest[point.axis]
        low, high = point.interval
        if point.miss is not None:
            assert point.measured is not None and point.miss == pytest.approx(point.predicted - point.measured)
            assert point.held == (low <= point.measured <= high)
    assert {p.axis for p in backtest.points} == set(law.axes)
    kept = json.loads((run_dir / "summary.json").read_text())
    assert kept["keys"]["optimizer.lr"]["setups"]["imported"]["backtest"]["share_held"] == backtest.share_held
    assert kept["keys"]["optimizer.lr"]["setups"]["imported"]["law"] == before["keys"]["optimizer.lr"]["setups"][
        "imported"]["law"]
    assert f"{len(backtest.measured())} held-out points" in output


def test_the_backtest_of_a_sweep_leaves_its_largest_width_out(tmp_path: Path) -> None:
    """On the kept default sweep: one refit of each setup's width line without width 256, its prediction there
    the refit line's own value, the regret read off width 256's bowl."""
    run_dir = tmp_path / "readme"
    run_dir.mkdir()
    for name in ("trials.csv", "config.yaml"):
        (run_dir / name).write_bytes((KEPT_SWEEP / name).read_bytes())
    summary = summarize_run(run_dir)
    for label, setup in summary.setups().items():
        assert setup.primary == "line" and setup.backtest is not None and setup.backtest.fit == "line"
        (point,) = setup.backtest.points
        assert point.axis == "width" and point.at == {"width": 256}
        assert point.measured == setup.line.points[256].x_star
        kept = {w: p for w, p in setup.line.points.items() if w != 256 and p.measured}
        xs = np.log2(list(kept))
        ys = np.array([p.x_star for p in kept.values()])
        assert abs(point.predicted - ys.mean()) < 3 * abs(ys.max() - ys.min()) + 1.0
        assert point.regret is None or point.regret >= 0
        assert len(xs) == 3
    code, output = run_cli("backtest", run_dir)
    assert code == 0 and "fitted without width 256 predicts it within" in output


def test_a_table_whose_optima_all_sit_at_the_lowest_lr_is_refused_and_nothing_written(
        real: tuple[SimulatedTable, RealDesign], tmp_path: Path) -> None:
    """Every point's grid moved above its optimum: each estimate sits at its lowest LR (the points left with
    fewer than three LRs have none)."""
    table = real[0].table.copy()
    truth = real[0].truth
    optimum = table.apply(lambda r: truth[(r["n_params"], r["tokens"], int(r["bs"]))], axis=1)
    table = table[np.log2(table["lr"]) > optimum + 1.0]
    code, output, out = import_table(table, tmp_path)
    assert code == 2 and len(output.strip().splitlines()) == 1
    assert "sit at their lowest LR" in output and "extend the grids below" in output
    assert not out.exists()


def test_transfer_and_backtest_refuse_a_run_no_setup_of_which_is_fitted(imported: tuple[Path, str],
                                                                         tmp_path: Path) -> None:
    run_dir = tmp_path / "edited"
    run_dir.mkdir()
    for name in ("config.yaml", "trials.csv"):
        (run_dir / name).write_bytes((imported[0] / name).read_bytes())
    trials = pd.read_csv(run_dir / "trials.csv")
    trials["status"], trials["val_loss"] = "ok", 3.0 - 0.01 * trials["log2_lr"]  # every lowest loss at the top
    trials.to_csv(run_dir / "trials.csv", index=False)
    before = sorted(p.name for p in run_dir.iterdir())
    for words in (("transfer", "--from", run_dir, "--at", "params=7e9"), ("backtest", run_dir)):
        code, output = run_cli(*words)
        assert code == 2 and len(output.strip().splitlines()) == 1, output
        assert "no setup could be fitted" in output and "highest LR" in output
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_backtest_refuses_a_run_with_fewer_than_three_values_on_every_axis(tmp_path: Path) -> None:
    run_dir = tmp_path / "two"
    run_dir.mkdir()
    trials = pd.read_csv(KEPT_SWEEP / "trials.csv")
    trials[trials["width"].isin([32, 64])].to_csv(run_dir / "trials.csv", index=False)
    (run_dir / "config.yaml").write_bytes((KEPT_SWEEP / "config.yaml").read_bytes())
    code, output = run_cli("backtest", run_dir)
    assert code == 2 and len(output.strip().splitlines()) == 1
    assert "no axis with three or more values" in output
    assert not (run_dir / "summary.json").exists()


def test_fates_read_in_words_and_name_their_cause() -> None:
    fates = Fates(fitted=3, censored_low=1, all_diverged=2)
    assert fates.line() == "6 points: 3 fitted, 1 censored low, 2 all diverged"
    assert no_optimum_reason(Fates(censored_low=4)) == ("every point's optimum is at its lowest LR",
                                                        "extend the grids below")
    assert "every run diverged" in no_optimum_reason(Fates(all_diverged=2))[0]
    assert "2 censored low" in no_optimum_reason(Fates(censored_low=2, censored_high=1))[0]
    assert no_optimum_reason(Fates(censored_high=2, few_lrs=1))[1].startswith("extend the grids above")
    assert count_fates([], few_lrs=2) == Fates(few_lrs=2)


def test_a_layout_3_summary_round_trips(imported: tuple[Path, str]) -> None:
    summary = summarize_run(imported[0])
    document = json.loads(json.dumps(summary.to_json()))
    back = Summary.from_json(document)
    assert back.setups()["imported"].law.verdicts == summary.setups()["imported"].law.verdicts  # type: ignore[union-attr]
    assert back.setups()["imported"].backtest == summary.setups()["imported"].backtest
    assert back.setups()["imported"].fates == summary.setups()["imported"].fates
    assert isinstance(next(iter(back.setups()["imported"].law.verdicts.values())), Judgement)  # type: ignore[union-attr]
    assert math.isfinite(back.setups()["imported"].law.coefficients["params"])  # type: ignore[union-attr]
