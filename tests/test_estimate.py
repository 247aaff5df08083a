"""The dry run's estimate: what it counts (grid, noise probes, anchors, the expected extension), the arithmetic
of a trial's measured parts, and the printed plan. Its accuracy against real sweeps is measured by
``scripts/bench_estimate.py`` (docs/performance.md), not here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from mutransfer.cli import app
from mutransfer.config import compose
from mutransfer.sweep.estimate import EXTENSION_GIVEN_EDGE, SWEEP_OVERHEAD_S, TRIAL_OVERHEAD_S, PointEstimate, \
    SweepEstimate, extension_trials
from mutransfer.sweep.spec import SearchSpec, load_spec
from mutransfer.sweep.studies import study_keys
from mutransfer.sweep.policy import GridPolicy
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model
from mutransfer.train.timing import TrialCost, evaluations, measure_trial

BASELINE = Path(__file__).parent / "baselines" / "smoke" / "trials.csv"
COST = TrialCost(setup=0.5, step=0.01, step_low=0.008, step_high=0.02, evaluation=0.1)


def _estimate(spec_name: str, overrides: tuple[str, ...] = (), workers: int = 1) -> SweepEstimate:
    spec = load_spec(spec_name, list(overrides))
    groups: dict[tuple[str, object], list] = {}
    for key in study_keys(spec):
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
