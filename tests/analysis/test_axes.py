"""The training horizon as a transfer axis and the one law over every swept axis: specs with `steps`, the
fitted law in summary.json, `transfer --steps` and `verify --steps`, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import invoke, refused_in_one_line, sweep_tables
from mutransfer.analysis.drift import SearchSettings
from mutransfer.analysis.law import evaluate_law, fit_law
from mutransfer.analysis.result import Summary
from mutransfer.analysis.summary import summarize


def axes_spec(tmp_path: Path, text_file: Path, **extra: object) -> Path:
    """One setup (μP + Muon) at widths 32, 64 and horizons 8, 16 steps of a tiny model: three studies."""
    spec = {"name": "horizon", "setups": {"mup_muon": ["parametrization=mup", "optimizer=muon"]},
            "widths": [32, 64], "steps": [8, 16], "seeds": [0],
            "search": {"log2_min": -4, "log2_max": 2, "step": 1, "extend_max": 2, "noise_seeds": 1},
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.batch_size=4", "train.seq_len=32",
                          "train.eval_batches=2", "data=text", f"data.path={text_file}"],
            **extra}
    if "depths" in extra:
        spec["overrides"] = spec["overrides"][1:]
    path = tmp_path / "horizon.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_spec_sweeps_horizons_through_the_base_point(tmp_path: Path, text_file: Path) -> None:
    from mutransfer.sweep.spec.sweep_spec import Point, load_spec
    from mutransfer.sweep.plan.sweep_plan import SweepPlan
    from mutransfer.sweep.plan.trial import trial_config

    spec = load_spec(str(axes_spec(tmp_path, text_file, depths=[1, 2])))
    assert spec.swept() == ("width", "depth", "steps")
    assert spec.points() == [Point(32, 1, 8), Point(64, 1, 8), Point(32, 2, 8), Point(32, 1, 16)]
    long = next(k for k in SweepPlan.of(spec).studies if k.point.steps == 16)
    assert long.name("p") == "p.mup_muon.log2_lr.w32.d1.t16.s0"
    cfg = trial_config(spec, long, -3.0)
    assert (cfg.train.steps, cfg.model.depth, cfg.train.warmup_frac) == (16, 1, trial_config(
        spec, SweepPlan.of(spec).studies[0], -3.0).train.warmup_frac)
    assert len(load_spec(str(axes_spec(tmp_path, text_file)), ["axes=product"]).points()) == 4


@pytest.mark.parametrize(("words", "says"), [
    (["steps=[150]"], "steps=[150] names one value"), (["steps=[-1, 10]"], "steps=-1 must be > 0"),
    (["steps=[10, 1.5]"], "steps=1.5"), (["train.steps=300"], "also overrides train.steps")])
def test_bad_horizons_are_one_line(runner, tmp_path: Path, text_file: Path, words: list[str],  # noqa: ANN001
                                   says: str) -> None:
    refused_in_one_line(runner, axes_spec(tmp_path, text_file), words, says, tmp_path / "run")


def bowls(truth: dict[tuple[int, int, int], float], seeds: int = 3, jitter: float = 0.1) -> pd.DataFrame:
    """Seeded quadratic bowls around each point's true optimum (the analysis's input, no training)."""
    rng = np.random.default_rng(5)
    rows = []
    for (width, depth, steps), centre in truth.items():
        for seed in range(seeds):
            shift = rng.normal(0, jitter)
            for x in np.arange(-10.0, 0.5, 1.0):
                rows.append({"setup": "s", "width": width, "depth": depth, "horizon": steps, "seed": seed,
                             "search_key": "optimizer.lr", "log2_lr": x, "val_loss": 3 + 0.2 * (x - centre - shift) ** 2,
                             "status": "ok"})
    return pd.DataFrame(rows)


TRUTH = {(32, 2, 100): -4.0, (64, 2, 100): -4.0, (128, 2, 100): -4.0, (32, 4, 100): -4.5, (32, 8, 100): -5.0,
         (32, 2, 200): -4.6, (32, 2, 400): -5.2, (32, 2, 800): -5.8}
"""Width flat, −0.5 octave per depth doubling, β = 0.6 (a drift must be shown wholly beyond the ±0.25 margin)."""


def test_the_law_recovers_each_axis_and_reports_beta() -> None:
    settings = {"optimizer.lr": {"s": SearchSettings(step=1.0, low=-10, high=0)}}
    info = summarize(bowls(TRUTH), settings).setups()["s"]
    law = info.law
    assert law is not None
    assert law.axes == ["width", "depth", "steps"] and law.points_used == 8
    for axis, slope in (("width", 0.0), ("depth", -0.5), ("steps", -0.6)):
        lo, hi = law.slope_ci[axis]
        assert lo <= slope <= hi and hi - lo < 0.5, (axis, law.slope_ci)
    assert law.beta == pytest.approx(-law.coefficients["steps"])
    assert law.beta_ci is not None and law.beta_ci[0] <= 0.6 <= law.beta_ci[1]
    assert info.axes["steps"].verdict == "drifts" and info.axes["width"].verdict == "transfers"
    assert sorted(info.axes["steps"].points) == [100, 200, 400, 800]
    value, (lo, hi) = evaluate_law(law, {"width": 4096, "depth": 8, "steps": 6400}, ["depth", "steps"])
    truth = -4.0 - 0.5 * 2 - 0.6 * 6
    assert lo <= truth <= hi and lo <= value <= hi and hi - lo < 5.5


def test_a_law_needs_a_varying_axis_and_enough_points() -> None:
    rows = bowls({(32, 2, 100): -4.0, (64, 2, 100): -4.0})
    rows = rows.rename(columns={"val_loss": "loss", "log2_lr": "x", "horizon": "steps"})
    settings = SearchSettings(step=1.0, low=-10, high=0)
    law = fit_law(rows, ["width", "depth", "steps"], settings)
    assert law is not None and law.axes == ["width"]
    assert fit_law(rows[rows["width"] == 32], ["width", "depth"], settings) is None


@pytest.mark.slow
def test_a_horizon_sweep_measures_beta_and_transfer_and_verify_take_steps(runner, tmp_path: Path,  # noqa: ANN001
                                                                          text_file: Path) -> None:
    run = tmp_path / "run"
    trials = sweep_tables(runner, axes_spec(tmp_path, text_file), run, "steps")
    assert sorted(set(zip(trials["width"], trials["horizon"]))) == [(32, 8), (32, 16), (64, 8)]
    assert (trials.loc[trials["status"] == "ok", "steps"] == trials.loc[trials["status"] == "ok", "horizon"]).all()
    summary = Summary.from_json(json.loads((run / "summary.json").read_text())).setups()["mup_muon"]
    assert summary.law is not None and summary.law.axes == ["width", "steps"] and summary.law.beta is not None
    assert (run / "transfer_steps.png").stat().st_size > 10_000
    base = invoke(runner, "transfer", "--width", "128", "--from", str(run), "--out", str(tmp_path / "a.yaml"))
    long = invoke(runner, "transfer", "--width", "128", "--steps", "64", "--from", str(run),
                  "--out", str(tmp_path / "b.yaml"))
    assert base.exit_code == 0 and long.exit_code == 0, long.output
    assert long.output.splitlines()[1].startswith("prediction at width 128, steps 64: log2 η* =")
    a, b = (yaml.safe_load((tmp_path / f).read_text()) for f in ("a.yaml", "b.yaml"))
    assert b["config"]["train"]["steps"] == 64 and a["config"]["train"]["steps"] == 8
    assert b["prediction"]["half_width"] > a["prediction"]["half_width"]
    law = summary.law
    applied = "steps" in b["prediction"]["applied_slopes"]
    assert applied == (summary.axes["steps"].verdict != "transfers")
    assert b["log2_lr"] == pytest.approx(a["log2_lr"] + (law.coefficients["steps"] * 3 if applied else 0.0), abs=2e-3)
    dry = invoke(runner, "verify", "--width", "64", "--steps", "24", "--from", str(run), "--dry-run", "--workers", "1")
    assert dry.exit_code == 0, dry.output
    assert "24" in dry.output


def test_transfer_to_another_horizon_without_a_horizon_sweep_says_it_is_assumed(runner, tmp_path: Path) -> None:  # noqa: ANN001
    baseline = Path(__file__).parents[1] / "baselines" / "smoke"
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "trials.csv", "curves.csv"):
        (run / name).write_bytes((baseline / name).read_bytes())
    same = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--out", str(tmp_path / "a.yaml"))
    long = invoke(runner, "transfer", "--width", "256", "--steps", "5000", "--from", str(run),
                  "--out", str(tmp_path / "b.yaml"))
    assert same.exit_code == 0 and long.exit_code == 0, long.output
    assert "assumed, not measured" in " ".join(long.output.split())
    a, b = (yaml.safe_load((tmp_path / f).read_text()) for f in ("a.yaml", "b.yaml"))
    assert a["log2_lr"] == b["log2_lr"] and b["config"]["train"]["steps"] == 5000
    assert a["prediction"]["interval"] == b["prediction"]["interval"]
