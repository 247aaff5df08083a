"""``mutransfer import``: tables of finished runs from elsewhere as run directories, and every analysis command on
them. The one-line refusals are rows of tests/robustness/test_bad_input.py; here: what an import writes and finds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import mutransfer
from mutransfer.analysis.compare import law_point_label
from mutransfer.analysis.no_seeds import RESIDUALS, SEEDS
from mutransfer.analysis.result import Summary
from mutransfer.cli import app
from mutransfer.errors import UserError
from mutransfer.importing.convert import to_trials
from mutransfer.importing.mapping import AxisColumn, ImportMapping
from mutransfer.importing.points import collinear_axes, merge_close
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.tables import TableDesign, simulate_table

KEPT_SWEEP = Path(__file__).resolve().parents[2] / "docs" / "data" / "default"
SIMULATED_AXES = ["--axis", "width", "--axis", "params=n_params", "--axis", "tokens", "--axis", "batch=bs"]


def invoke(*words: str) -> str:
    result = CliRunner().invoke(app, [str(w) for w in words])
    assert result.exit_code == 0, result.output
    return result.output


def summary_of(run_dir: Path) -> Summary:
    return Summary.from_json(json.loads((run_dir / "summary.json").read_text()))


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TableDesign]:
    """A table like a published one (one run per point and LR, no seeds, LRs √2 apart, 4 sizes × 3 budgets ×
    4 batches, width and depth chosen per size, a few percent diverged) from a known law, as a CSV file."""
    design = TableDesign()
    table = simulate_table(real_truth(diverge_after=2.5), design, np.random.default_rng(11)).table
    path = tmp_path_factory.mktemp("table") / "runs.csv"
    table.to_csv(path, index=False)
    return path, design


@pytest.fixture(scope="module")
def imported(simulated: tuple[Path, TableDesign], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imports") / "runs"
    invoke("import", simulated[0], "--lr", "lr", "--loss", "val/loss", *SIMULATED_AXES, "--diverged-above", "10",
           "--out", out)
    return out


def test_a_sweep_s_own_trials_exported_and_imported_give_the_same_numbers(tmp_path: Path) -> None:
    """Round trip: the kept default sweep's trials.csv as a table of finished runs (LR, loss, seed, setup,
    status), imported, gives its summary's optima, intervals, slopes and verdicts to the printed digit."""
    trials = pd.read_csv(KEPT_SWEEP / "trials.csv")
    table = trials.rename(columns={"val_loss": "final loss", "setup": "optimizer setup"})
    table[["lr", "final loss", "seed", "optimizer setup", "status", "width"]].to_csv(tmp_path / "export.csv",
                                                                                   index=False)
    invoke("import", tmp_path / "export.csv", "--lr", "lr", "--loss", "final loss", "--seed", "seed", "--setup",
           "optimizer setup", "--status", "status", "--axis", "width", "--out", tmp_path / "imported")
    invoke("plot", KEPT_SWEEP, "--out", tmp_path / "sweep")
    from mutransfer.analysis.summary import summarize_run

    sweep, back = summarize_run(KEPT_SWEEP), summary_of(tmp_path / "imported")
    assert back.noise is not None and back.noise.method == SEEDS
    assert set(back.setups()) == set(sweep.setups())
    for label, setup in sweep.setups().items():
        mine, theirs = back.setups()[label].line, setup.line
        assert mine.verdict == theirs.verdict
        assert f"{mine.slope:+.2f} {mine.slope_ci}"[:6] == f"{theirs.slope:+.2f} {theirs.slope_ci}"[:6]
        assert [f"{v:+.2f}" for v in mine.slope_ci] == [f"{v:+.2f}" for v in theirs.slope_ci]
        for width, point in theirs.points.items():
            other = mine.points[width]
            assert f"{other.x_star:.2f}" == f"{point.x_star:.2f}"
            assert [f"{v:.2f}" for v in other.ci] == [f"{v:.2f}" for v in point.ci]
            assert f"{other.best_loss:.4f}" == f"{point.best_loss:.4f}"


def test_a_known_law_over_three_axes_is_recovered_inside_its_intervals(imported: Path,
                                                                       simulated: tuple[Path, TableDesign]) -> None:
    """The simulated table's law over params (an axis no config key sets), tokens and batch: each slope inside
    its 95 % interval; width, which moves with params, is named and left out."""
    record = yaml.safe_load((imported / "config.yaml").read_text())
    assert record["axes"] == ["params", "tokens", "batch"] and record["dropped_axes"] == {"width": "moves with params"}
    assert record["mutransfer_version"] == mutransfer.__version__
    summary = summary_of(imported)
    law = summary.setups()["imported"].law
    assert law is not None and law.axes == ["params", "tokens", "batch"]
    for name, slope in simulated[1].slopes.items():
        low, high = law.slope_ci[name]
        assert low <= slope <= high, (name, slope, law.slope_ci[name])
    assert summary.noise is not None and summary.noise.method == RESIDUALS and summary.noise.calibrated
    assert len(law.points) == 4 * 3 * 4
    trials = pd.read_csv(imported / "trials.csv")
    assert {"params", "tokens", "batch_size", "width", "log2_lr", "val_loss", "status"} <= set(trials.columns)
    assert (trials["status"] == "diverged").any() and trials.loc[trials["status"] == "diverged", "val_loss"].isna().all()


def test_transfer_at_a_target_on_any_axis(imported: Path, simulated: tuple[Path, TableDesign]) -> None:
    """``--at params=… --at tokens=… --at batch=…``: η* with its range, each axis's extrapolation in octaves; a
    target on the axis left out as collinear is refused with one line."""
    out = invoke("transfer", "--from", imported, "--at", "params=7e9", "--at", "tokens=2e11", "--at", "batch=1024")
    assert "params is 3.5 octaves beyond the table's range" in out
    document = yaml.safe_load((imported / "transfer_params7e+09_tokens2e+11_batch1024.yaml").read_text())
    design = simulated[1]
    law_value = design.law({"params": 7e9, "tokens": 2e11, "batch": 1024.0})
    prediction = document["prediction"]
    low, high = prediction["interval"]
    assert low < prediction["log2_lr"] == document["log2_lr"] < high and abs(document["log2_lr"] - law_value) < 1.0
    assert prediction["extrapolated_octaves"]["batch"] == pytest.approx(1.0)
    assert document["config"] is None and document["source"]["noise"]["method"] == RESIDUALS
    refused = CliRunner().invoke(app, ["transfer", "--from", str(imported), "--at", "width=4096"])
    assert refused.exit_code == 2 and "left axis width out of the analysis (moves with params)" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


def test_plot_compare_and_verify_on_imports(imported: Path, simulated: tuple[Path, TableDesign],
                                            tmp_path: Path) -> None:
    """plot draws a bowl figure per axis, the drift figure and (a batch and a tokens axis) batch.png, whose
    analysis holds each size's point; compare matches two imports' law points on all their axes (the law judges
    an import over several axes); verify is refused in one line (an import holds nothing to train)."""
    invoke("plot", imported, "--out", tmp_path / "figures")
    assert {p.name for p in (tmp_path / "figures").glob("*.png")} == {
        "transfer_params.png", "transfer_tokens.png", "transfer_batch.png", "lr_drift.png", "batch.png"}
    batch = summary_of(imported).setups()["imported"].batch
    assert batch is not None and [p["at"] for p in batch["points"]] == [{"params": n} for n in
                                                                         simulated[1].params]
    table = pd.read_csv(simulated[0])
    table[table["n_params"] > 2e7].to_csv(tmp_path / "fewer.csv", index=False)
    invoke("import", tmp_path / "fewer.csv", "--lr", "lr", "--loss", "val/loss", *SIMULATED_AXES,
           "--diverged-above", "10", "--out", tmp_path / "fewer")
    invoke("compare", imported, tmp_path / "fewer", "--out", tmp_path / "compared")
    report = json.loads((tmp_path / "compared" / "compare.json").read_text())
    entry = report["setups"]["imported"]
    law_points = summary_of(imported).setups()["imported"].law
    assert law_points is not None
    labels = {law_point_label(p.at): float(p.at["params"]) for p in law_points.points if p.result.estimated}
    assert report["axis"] == "params" and set(entry["widths"]) == {k for k, n in labels.items() if n > 2e7}
    assert set(entry["only_a"]) == {k for k, n in labels.items() if n == 2e7} and entry["only_b"] == []
    assert "params=6e+07 tokens=1e+09 batch=64" in (tmp_path / "compared" / "compare.md").read_text()
    refused = CliRunner().invoke(app, ["verify", "--from", str(imported), "--width", "512"])
    assert refused.exit_code == 2 and "verify needs a trainer" in refused.output


def test_the_same_import_again_is_a_no_op_and_a_changed_one_is_refused(simulated: tuple[Path, TableDesign],
                                                                        tmp_path: Path) -> None:
    out = tmp_path / "runs"
    words = ["import", simulated[0], "--lr", "lr", "--loss", "val/loss", *SIMULATED_AXES, "--diverged-above", "10",
             "--out", out]
    invoke(*words)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "nothing to do" in invoke(*words)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    changed = CliRunner().invoke(app, [str(w) for w in words] + ["--where", "tokens < 1e10"])
    assert changed.exit_code == 2 and "holds a different import: mapping.where" in changed.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    table = pd.read_csv(simulated[0])
    table.iloc[:-1].to_csv(tmp_path / "edited.csv", index=False)
    edited = CliRunner().invoke(app, [str(w) for w in [words[0], tmp_path / "edited.csv", *words[2:]]])
    assert edited.exit_code == 2 and "holds a different import: source.size: " in edited.output
    invoke(*[words[0], tmp_path / "edited.csv", *words[2:]], "--force")
    assert len(pd.read_csv(out / "trials.csv")) == len(table) - 1


def test_an_optuna_tpe_study_from_a_plain_script_imports(tmp_path: Path) -> None:
    """A study written by plain Optuna (not this tool) to a journal file, its LRs sampled continuously by TPE:
    params and user attributes become columns, the LRs are analysed as they are, and the optimum per width lands
    near the truth (log2 η* = −9 − 0.5 · log2(width / 64))."""
    journal = tmp_path / "plain.journal"
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    study = optuna.create_study(study_name="lr_sweep", storage=storage, sampler=optuna.samplers.TPESampler(seed=0))
    rng = np.random.default_rng(0)
    for width in (64, 128, 256, 512):
        def objective(trial: optuna.Trial, width: int = width) -> float:
            x = math.log2(trial.suggest_float("lr", 1e-5, 1e-1, log=True))
            trial.set_user_attr("width", width)
            return 2.0 + 0.3 * (x + 9 + 0.5 * math.log2(width / 64)) ** 2 + rng.normal(0, 0.01)
        study.optimize(objective, n_trials=25)
    out = invoke("import", "--storage", journal, "--study", "lr_sweep", "--lr", "lr", "--loss", "value", "--status",
                 "state", "--axis", "width", "--out", tmp_path / "tpe")
    assert "analysed as they are" in out and "median spacing of continuously sampled LRs" in out
    line = summary_of(tmp_path / "tpe").setups()["imported"].line
    for width, point in line.points.items():
        assert abs(point.x_star - (-9 - 0.5 * math.log2(width / 64))) < 0.3
    assert line.slope == pytest.approx(-0.5, abs=0.1) and line.verdict == "inconclusive"


@pytest.mark.parametrize("suffix", [".tsv.gz", ".jsonl", ".parquet"])
def test_other_formats_read_as_the_csv_does(simulated: tuple[Path, TableDesign], tmp_path: Path, suffix: str) -> None:
    table = pd.read_csv(simulated[0])
    path = tmp_path / f"runs{suffix}"
    if suffix == ".jsonl":  # json writes an infinite loss as Infinity; pandas' to_json would write null (unfinished)
        path.write_text("".join(json.dumps(row) + "\n" for row in table.to_dict("records")), encoding="utf-8")
    elif suffix == ".parquet":
        table.to_parquet(path)
    else:
        table.to_csv(path, sep="\t", index=False)
    mapping = ImportMapping(lr="lr", loss="val/loss", axes=(AxisColumn("params", "n_params"),
                                                            AxisColumn("tokens", "tokens")), diverged_above=10.0)
    from mutransfer.importing.source import read_source

    read, source = read_source(path, None, None)
    assert source.kind == {".tsv.gz": "tsv", ".jsonl": "jsonl", ".parquet": "parquet"}[suffix]
    pd.testing.assert_frame_equal(to_trials(read, mapping).trials, to_trials(table, mapping).trials)


def test_points_merge_float_noise_and_collinear_axes_are_named() -> None:
    merged = merge_close(pd.Series([1e8, 1e8 * (1 + 1e-9), 2e8, 2e8 * (1 - 5e-7), 3e8 * (1 + 1e-5)]))
    assert merged.nunique() == 3 and merged.dtype == np.int64
    points = pd.DataFrame({"batch": [1, 1, 2, 2, 4, 4], "steps": [8, 16, 8, 16, 8, 16],
                           "tokens": [8, 16, 16, 32, 32, 64], "params": [5] * 6})
    dropped = collinear_axes(points, ["params", "batch", "steps", "tokens"])
    assert dropped == {"params": (), "batch": ("steps", "tokens")}


def test_duplicates_and_binning(tmp_path: Path) -> None:
    """Rows repeating a point and LR without seeds: ``--duplicates mean`` averages them; ``--step`` bins
    continuous LRs on a log2 grid (the runs of one bin averaged)."""
    rows = [{"width": w, "lr": 2.0**k, "loss": 3 + 0.1 * (k + 8) ** 2} for w in (64, 128) for k in range(-11, -4)]
    table = pd.DataFrame(rows + [{**rows[0], "loss": rows[0]["loss"] + 0.2}])
    with pytest.raises(UserError, match=r"rows 1, 15 repeat a point, learning rate and seed \('s'\)"):
        to_trials(table.assign(s=1), ImportMapping(lr="lr", loss="loss", seed="s", axes=(AxisColumn("width", "width"),)))
    mapping = ImportMapping(lr="lr", loss="loss", axes=(AxisColumn("width", "width"),), duplicates="mean")
    trials = to_trials(table, mapping).trials
    assert len(trials) == len(rows)
    assert trials.loc[0, "val_loss"] == pytest.approx(rows[0]["loss"] + 0.1)
    jitter = table.iloc[:-1].assign(lr=lambda t: t["lr"] * np.exp(np.linspace(-0.05, 0.05, len(t))))
    binned = to_trials(jitter, ImportMapping(lr="lr", loss="loss", axes=(AxisColumn("width", "width"),), step=1.0))
    assert binned.binned and sorted(binned.trials["log2_lr"].unique()) == pytest.approx(
        sorted({math.log2(r["lr"]) + 0.0 for r in rows}), abs=0.1)


def test_setup_names_that_break_markdown_are_escaped(tmp_path: Path) -> None:
    rows = [{"opt": "adam|w`x", "width": w, "lr": 2.0**k, "loss": 3 + 0.1 * (k + 8) ** 2}
            for w in (64, 128) for k in range(-11, -4)]
    imported = to_trials(pd.DataFrame(rows), ImportMapping(lr="lr", loss="loss", setup="opt",
                                                           axes=(AxisColumn("width", "width"),)))
    assert imported.renamed_setups == {"adam|w`x": "adam_w_x"} and set(imported.trials["setup"]) == {"adam_w_x"}


def test_thin_points_are_skipped_and_counted() -> None:
    rows = [{"width": w, "lr": 2.0**k, "loss": 3 + 0.1 * (k + 8) ** 2} for w in (64, 128) for k in range(-11, -4)]
    rows += [{"width": 256, "lr": 2.0**k, "loss": 3.0} for k in (-9, -8)]
    imported = to_trials(pd.DataFrame(rows), ImportMapping(lr="lr", loss="loss", axes=(AxisColumn("width", "width"),)))
    assert imported.counts["points_skipped"] == 1 and imported.skipped_points == [{"setup": "imported", "width": 256,
                                                                                   "lrs": 2}]


@pytest.mark.slow
def test_no_seed_intervals_cover_the_truth_on_simulated_tables() -> None:
    """A small run of scripts/import_coverage.py's check (docs/import.md has the full one): on 40 tables of the
    3 sizes × 3 budgets × 3 batches design, every slope's and each point's 95 % interval holds the truth at
    least 85 % of the time (a broken interval — no σ_b, or the pooled bowl shape's bias — covers far less)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_coverage", Path(__file__).resolve().parents[2] / "scripts"
                                                  / "import_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(3)
    tally: dict[str, list[int]] = {"point": [], "slope": [], "target": []}
    for _ in range(40):
        for kind, hits in module.one_table(module.DESIGNS["3 sizes x 3 budgets x 3 batches"], rng, "muon").items():
            if kind in tally:
                tally[kind] += hits
    assert np.mean(tally["slope"]) >= 0.85 and np.mean(tally["point"]) >= 0.9 and np.mean(tally["target"]) >= 0.85
