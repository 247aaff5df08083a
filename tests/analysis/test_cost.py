"""What an answer costs: ``scripts/bench_cost.py`` (precision per training second of a finished sweep) and
``scripts/bench_design.py`` (the default design chosen by simulation), on the run tables kept in docs/data."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import load_script
from mutransfer.analysis.prediction import predict
from mutransfer.analysis.summary import summarize_run
from mutransfer.sweep.spec.sweep_spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "docs" / "data" / "default_0.6"


def test_cost_rows_are_the_summarys_intervals_per_training_second() -> None:
    cost = load_script("bench_cost")
    rows = cost.cost_rows(BEFORE, 4096)
    trials = pd.read_csv(BEFORE / "trials.csv")
    summary = summarize_run(BEFORE).setups()
    assert [(r["setup"], r["axis"]) for r in rows] == [(s, "width") for s in sorted(summary)]
    for row in rows:
        info = summary[row["setup"]]
        assert info.line.slope_ci is not None
        half = (info.line.slope_ci[1] - info.line.slope_ci[0]) / 2
        seconds = trials.loc[trials["setup"] == row["setup"], "seconds"].sum()
        assert row["trials"] == (trials["setup"] == row["setup"]).sum() and row["training s"] == round(seconds)
        assert row["half-width"] == round(half, 2)
        assert row["precision per 1000 s"] == round(1000 / (half**2 * seconds), 1)
        forecast = predict(info.line, 4096, info.verdict != "transfers", 1.0)
        assert row["range half-width at target"] == round(forecast.half_width, 2)
    depth = cost.cost_rows(ROOT / "docs" / "data" / "depth", 4096)
    assert {r["axis"] for r in depth} == {"depth"} and all(r["range half-width at target"] == "" for r in depth)


def test_the_design_study_reads_both_designs_from_their_specs_and_prices_what_it_trained() -> None:
    design = load_script("bench_design")
    before, shipped, *others = design.candidates()
    spec = load_spec("default")
    assert shipped.widths == spec.widths and before.widths == (32, 64, 128, 256) and others
    for setup in spec.setups:
        search = setup.search[0]
        assert shipped.grids[setup.label] == design.Grid(search.min, search.max, search.step, search.noise_seeds)
    assert before.grids["mup_muon"] == design.Grid(-8, -1, 1, 2)
    seconds = design.seconds_per_trial(pd.read_csv(BEFORE / "trials.csv"))
    flat = {w: 2.0 for w in (32, 64, 128, 256)}
    truths = design.truths(summarize_run(BEFORE), -1.0)
    result = design.simulate_setup(truths["mup_muon"], before, "mup_muon", 20, 0, flat)
    assert result["seconds"] == pytest.approx(2.0 * 4 * 14, rel=0.1)  # 8 grid points + 2 seeds × 3 per width
    assert design.trial_seconds(seconds["mup_muon"], 64) == seconds["mup_muon"][64]
    assert seconds["mup_muon"][128] < design.trial_seconds(seconds["mup_muon"], 181) < seconds["mup_muon"][256]
    assert design.right_enough(0.9, 0.95, 500) and design.right_enough(0.74, 0.76, 500)
    assert not design.right_enough(0.6, 0.76, 500)


@pytest.mark.slow
def test_the_shipped_default_meets_the_design_goal(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Over 500 simulated sweeps per setup: ≤ 60 % of the 0.6 default's training seconds, the slope's median
    half-width ≤ 1.05× its, and the verdicts right as often (``scripts/bench_design.py``'s goal)."""
    design = load_script("bench_design")
    monkeypatch.setattr(sys, "argv", ["bench_design.py", "--sims", "500", "--design", design.SHIPPED_NAME])
    design.main()
    verdicts = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"| {design.SHIPPED_NAME} |")]
    assert verdicts[-1].endswith("| yes |"), verdicts
