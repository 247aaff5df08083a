"""The dry run's estimate: what it counts (grid, noise probes, anchors, the expected extension), the arithmetic
of a trial's measured parts, and the printed plan; once trials have finished, the cost model fitted to their
seconds (a known law recovered, the two- and one-width cases), what ``trials.csv`` gives it, and a resumed
trainer sweep's dry run priced by it. Its accuracy against real sweeps is measured by
``scripts/bench_estimate.py`` (docs/performance.md), not here."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.cli import app
from mutransfer.config import compose
from mutransfer.sweep.plan.estimate import EXTENSION_GIVEN_EDGE, SWEEP_OVERHEAD_S, TRIAL_OVERHEAD_S, PointEstimate, \
    SweepEstimate, extension_trials
from mutransfer.sweep.plan.finished import read_finished
from mutransfer.sweep.plan.measured_cost import ASSUMED_POWER, TrialSeconds, duration_text, fit_width_law, measured_cost
from mutransfer.sweep.spec.sweep_spec import SearchSpec, load_spec
from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.sweep.plan.policy import GridPolicy
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model
from mutransfer.train.timing import TrialCost, evaluations, measure_trial

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke" / "trials.csv"
COST = TrialCost(setup=0.5, step=0.01, step_low=0.008, step_high=0.02, evaluation=0.1)


def _estimate(spec_name: str, overrides: tuple[str, ...] = (), workers: int = 1) -> SweepEstimate:
    spec = load_spec(spec_name, list(overrides))
    groups: dict[tuple[str, object], list] = {}
    for key in SweepPlan.of(spec).studies:
        groups.setdefault((key.setup, key.point), []).append(key)
    return SweepEstimate(tuple(PointEstimate.of(keys, 1, 100, 50, COST) for keys in groups.values()), workers)


def test_trial_count_is_what_a_finished_sweep_holds() -> None:
    """The smoke baseline (no point past its grid's edge) holds exactly the trials the estimate counts
    before extension; the default sweep's 40 grid trials and 24 noise probes (four widths) are both counted (the
    old estimate counted the grid only)."""
    assert _estimate("smoke").trials("low") == len(pd.read_csv(BASELINE))
    default = _estimate("default")
    assert default.trials("low") == 64
    assert _estimate("default", ("search.noise_seeds=0",)).trials("low") == 40


def test_expected_extension_follows_the_edge_rule() -> None:
    grid = GridPolicy(SearchSpec(min=-8, max=-1, step=1, extend=True, extend_max=4), 0)
    assert extension_trials(grid) == pytest.approx((2 / 8 * EXTENSION_GIVEN_EDGE, 1))
    short = GridPolicy(SearchSpec(min=-8, max=-1, step=1, extend=True, extend_max=1), 0)
    assert extension_trials(short) == pytest.approx((2 / 8 * 1, 1))
    assert extension_trials(GridPolicy(SearchSpec(min=-8, max=-1, extend=False), 0)) == (0.0, 0)
    linear = GridPolicy(SearchSpec(key="optimizer.weight_decay", scale="linear", min=0, max=0.3, step=0.1), 0)
    assert extension_trials(linear) == (0.0, 0)
    assert _estimate("default").trials() == pytest.approx(64 + 8 * 2 / 5 * 1.5)


def test_wall_time_is_the_sum_of_measured_parts_over_workers() -> None:
    one, two = _estimate("smoke"), _estimate("smoke", workers=2)
    per_trial = COST.setup + 100 * COST.step_low + evaluations(100, 50) * COST.evaluation + TRIAL_OVERHEAD_S
    assert one.wall_seconds("low") == pytest.approx(SWEEP_OVERHEAD_S + 40 * per_trial)
    assert two.wall_seconds("low") - SWEEP_OVERHEAD_S == pytest.approx((one.wall_seconds("low") - SWEEP_OVERHEAD_S) / 2)
    assert one.wall_seconds("low") < one.wall_seconds() < one.wall_seconds("high")


@pytest.mark.parametrize("steps,every", [(40, 20), (45, 20), (10, 0), (7, 3)])
def test_evaluations_match_the_training_loop(steps: int, every: int) -> None:
    cfg = compose(["model.width=32", "model.depth=1", "parametrization.base_width=32", f"train.steps={steps}",
                   f"train.eval_every={every}", "train.batch_size=2", "train.seq_len=16", "train.eval_batches=1"])
    result, _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    assert len(result.evals) == evaluations(steps, every)


def test_measured_parts_are_ordered_and_positive() -> None:
    cfg = compose(["model.width=32", "model.depth=1", "parametrization.base_width=32", "train.batch_size=4",
                   "train.seq_len=32", "train.threads=1"])
    cost = measure_trial(cfg, min_steps=4, max_steps=6, budget_seconds=0.1)
    assert cost.setup > 0 and cost.evaluation > 0
    assert 0 < cost.step_low <= cost.step <= cost.step_high
    assert cost.seconds(10, 1, "low") <= cost.seconds(10, 1) <= cost.seconds(10, 1, "high")


def test_dry_run_names_the_corpus_and_prints_the_range() -> None:
    result = CliRunner().invoke(app, ["sweep", "smoke", "widths=[32]", "--dry-run"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "corpus stdlib:" in text and "sha256" in text
    assert "20 trials (grid, noise probes, anchors) + 1.5 expected from grid extension" in text
    assert "range" in text and "min –" in text


def test_the_fitted_law_recovers_a_known_one() -> None:
    """Seconds = 0.2 + 3e-5·width^1.6 with ±3 % jitter at four widths: the medians are the measured widths' own,
    and the fit extrapolates to width 1024 within 5 %."""
    a, b, p = 0.2, 3e-5, 1.6
    samples = [TrialSeconds(w, (a + b * w**p) * j) for w in (32, 64, 128, 256) for j in (0.97, 1.0, 1.03)]
    cost = measured_cost(samples)
    assert cost is not None and cost.trials == 12 and cost.law.fitted
    assert cost.seconds(64) == cost.medians[1][1] == pytest.approx(a + b * 64**p)
    assert cost.law.p == pytest.approx(p, abs=0.1)
    assert cost.seconds(1024) == pytest.approx(a + b * 1024**p, rel=0.05)


def test_two_widths_fit_exactly_and_take_width_squared_where_they_cannot_tell() -> None:
    """Two widths fit exactly for a range of p: a slow growth takes p = 2 with a fixed part, a fast one the power
    law through both points."""
    slow = fit_width_law([(32, 1.0), (64, 1.2)])
    assert slow.p == ASSUMED_POWER and slow.a > 0 and slow.fitted
    assert (slow.seconds(32), slow.seconds(64)) == (pytest.approx(1.0), pytest.approx(1.2))
    fast = fit_width_law([(32, 1.0), (64, 6.0)])
    assert fast.p == pytest.approx(math.log2(6), abs=0.05) and fast.a == pytest.approx(0.0, abs=0.05)
    assert fast.seconds(128) == pytest.approx(36.0, rel=0.1)


def test_one_width_assumes_width_squared_and_says_so() -> None:
    cost = measured_cost([TrialSeconds(64, 2.0)] * 3 + [TrialSeconds(32, math.nan)])
    assert cost is not None and not cost.law.fitted and cost.seconds(128) == pytest.approx(8.0)
    assert cost.basis() == ("from 3 finished trials: median 2.0 s at width 64; other widths b·width^2 assumed (one "
                            "width measured)")
    assert measured_cost([TrialSeconds(64, math.nan)]) is None
    assert [duration_text(s) for s in (0.048, 3.0, 9.96, 90.0, 7200.0)] == ["0.048 s", "3.0 s", "10 s", "1.5 min",
                                                                            "2.0 h"]


def _write_trials(run: Path, rows: list[dict[str, object]]) -> None:
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "trials.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["setup", "width", "status", "seconds", "batch_trials"])
        writer.writeheader()
        writer.writerows(rows)


def test_finished_trials_count_every_status_and_time_the_trained_ones(tmp_path: Path) -> None:
    """A stacked trial's seconds are its share; failed and diverged trials are done but not timed; a setup with no
    trained trial of its own is priced by every setup's, and says so."""
    _write_trials(tmp_path, [{"setup": "a", "width": 32, "status": "ok", "seconds": 2.0, "batch_trials": 2},
                             {"setup": "a", "width": 32, "status": "ok", "seconds": 1.0, "batch_trials": 1},
                             {"setup": "a", "width": 32, "status": "failed", "seconds": 0.1, "batch_trials": 1},
                             {"setup": "a", "width": 32, "status": "diverged", "seconds": 0.3, "batch_trials": ""}])
    finished = read_finished(tmp_path)
    assert finished.done("a", 32) == 4 and finished.done("a", 64) == 0 and finished.timed() == 2
    own, pooled = finished.cost("a"), finished.cost("b")
    assert own is not None and not own.pooled and own.cost.medians == ((32, 1.0),)
    assert pooled is not None and pooled.pooled and "b (none of its own finished" in pooled.basis()
    assert read_finished(tmp_path / "missing").rows == ()


def test_a_trainer_sweep_dry_run_prices_the_trials_left_from_the_finished_ones(tmp_path: Path,
                                                                              text_file: Path) -> None:
    """Before any trial: no estimate (nothing times the user's command). On a resume with width 32 done at 2 s a
    trial: width 64's 5 trials cost 2 s × 2² + 0.11 s each (one width: p = 2 assumed), plus the sweep's 4 s."""
    (tmp_path / "train.py").write_text("")
    spec = {"name": "mine", "trainer": {"command": [sys.executable, "train.py", "--lr", "{lr}"]},
            "setups": {"mine": {}}, "widths": [32, 64], "seeds": [0],
            "search": {"log2_min": -7, "log2_max": -3, "step": 1, "noise_seeds": 0, "extend": False},
            "overrides": ["data=text", f"data.path={text_file}"]}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(spec))
    fresh = CliRunner().invoke(app, ["sweep", str(path), "--dry-run", "--out", str(tmp_path / "fresh")])
    assert fresh.exit_code == 0, fresh.output
    assert "no time estimate yet" in " ".join(fresh.output.split()) and not (tmp_path / "fresh").exists()
    _write_trials(tmp_path / "run", [{"setup": "mine", "width": 32, "status": "ok", "seconds": 2.0,
                                      "batch_trials": 1}] * 5)
    resumed = CliRunner().invoke(app, ["sweep", str(path), "--dry-run", "--out", str(tmp_path / "run")])
    assert resumed.exit_code == 0, resumed.output
    text = " ".join(resumed.output.split())
    expected = SWEEP_OVERHEAD_S + 5 * (2.0 * 2**2 + TRIAL_OVERHEAD_S)
    assert "5 trials done of 10" in text and f"the 5 left take about {duration_text(expected)}" in text
    assert "from 5 finished trials: median 2.0 s at width 32; other widths b·width^2 assumed" in text
