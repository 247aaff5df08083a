"""The comparison's statistics (``analysis.shift``) against hand computations, the best loss as a fitted minimum,
and the verdict's rule case by case."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from mutransfer.analysis.compare import compare_setup, loss_difference
from mutransfer.analysis.optimum import optimum_of_arrays
from mutransfer.analysis.result import AxisFit, PointResult
from mutransfer.analysis.shift import (Estimate, estimate_of, holm, pooled_shift, shift_verdict, width_difference)
from mutransfer.analysis.stats import t_quantile


def estimate(x: float, se: float = 0.1, dof: float = 6, shape: float = 0.0, censored: str | None = None) -> Estimate:
    return Estimate(x, (x - 0.3, x + 0.3), se, dof, shape, True, censored)


def test_holm_matches_the_step_down_rule() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, math.nan, 0.01]) == pytest.approx([0.5, math.nan, 0.02], nan_ok=True)
    assert holm([0.3, 0.2]) == pytest.approx([0.4, 0.4]), "adjusted p-values never decrease down the order"


def test_width_difference_is_welch_with_the_asymmetry_as_a_known_variance() -> None:
    a, b = estimate(-4.0, se=0.1, dof=4, shape=0.05), estimate(-3.5, se=0.15, dof=8, shape=0.05)
    d = width_difference(64, a, b)
    parts = [(0.01, 4), (0.0225, 8)]
    variance = 0.01 + 0.0225 + 2 * 0.05**2
    dof = variance**2 / sum(v * v / n for v, n in parts)
    assert d.kind == "welch" and d.value == pytest.approx(0.5)
    assert d.variance == pytest.approx({"low": variance, "high": variance}) and d.dof["low"] == pytest.approx(dof)
    assert d.ci[1] - d.value == pytest.approx(t_quantile(0.975, dof) * math.sqrt(variance))
    assert 0.0 < d.p < 0.05 and d.ci[0] > 0, "the p-value and the interval agree"
    open_end = width_difference(64, a, Estimate(-2.0, (-2.3, math.inf), 0.1, 6, 0.0, True, "high"))
    assert open_end.kind == "bound" and open_end.ci[1] == math.inf and math.isnan(open_end.p)
    assert open_end.ci[0] == pytest.approx(2.0 - math.hypot(0.3, 0.3))


def test_an_interval_that_reaches_further_widens_the_side_that_faces_the_other_run() -> None:
    """A's seeds' vertices past its window on the low side: its interval reaches 1.4 octaves down; B sits 1.3 down.
    The difference's lower end uses B's low side and A's high side, its upper end B's high and A's low."""
    entry = PointResult(32, -5.6, (-7.0, -5.0), ci_kind="confidence", se=0.1, dof=6, shape_se=0.1)
    a = estimate_of(entry)
    q = t_quantile(0.975, 6)
    assert a.side("low") == pytest.approx(math.sqrt(1.4**2 - (1.959964 * 0.1) ** 2) / q, rel=1e-4)
    assert a.side("high") == pytest.approx(math.sqrt(0.6**2 - (1.959964 * 0.1) ** 2) / q, rel=1e-4)
    b = estimate_of(replace(entry, x_star=-6.9, ci=(-7.2, -6.6)))
    assert b.side("low") == b.side("high") == 0.1, "an interval no wider than se gives: se"
    d = width_difference(32, a, b)
    assert d.ci[1] > 0 and d.value - d.ci[0] < d.ci[1] - d.value, "A's reach toward B keeps 0 in B − A's interval"
    assert d.p > 0.05
    capped = estimate_of(replace(entry, x_star=-5.0, ci=(-5.4, -5.01)))
    assert capped.side("high") == 0.1, "a cap from diverged trials never narrows the error"


def test_pooled_shift_keeps_what_the_widths_share() -> None:
    a = [estimate(-4.0, se=0.2, dof=6), estimate(-4.0, se=0.2, dof=6)]
    b = [estimate(-3.6, se=0.2, dof=6), estimate(-3.8, se=0.2, dof=6)]
    differences = [width_difference(w, x, y) for w, x, y in zip((32, 64), a, b)]
    alone = pooled_shift(differences, a, b, 0.0, 0.0)
    assert alone is not None and alone.value == pytest.approx(0.3) and alone.weights == pytest.approx([0.5, 0.5])
    assert alone.se == pytest.approx(math.sqrt(2 * 0.04 / 2)), "independent widths: the variance halves"
    shared = pooled_shift(differences, a, b, 1.0, 1.0)
    assert shared is not None and shared.se == pytest.approx(math.sqrt(2 * 0.04)), "fully shared seeds: no gain"
    shaped = [Estimate(e.x, e.ci, e.se, e.dof, 0.1, True) for e in a]
    with_shape = pooled_shift(differences, shaped, b, 0.0, 0.0)
    assert with_shape is not None and with_shape.se == pytest.approx(math.sqrt(0.04 + 0.1**2)), \
        "a run's asymmetry moves every width alike: its part does not shrink by pooling"
    assert alone.ci90[1] - alone.ci90[0] < alone.ci[1] - alone.ci[0]


@pytest.mark.parametrize(("b_x", "se", "expected"), [
    (-4.0, 0.05, "same"),       # D = 0, 90 % interval well inside ±0.25
    (-3.0, 0.05, "moved"),      # D = +1, clear of 0 and beyond the margin
    (-3.9, 0.02, "same"),       # D = +0.1, clear of 0 (every width too) but inside ±0.25: same
    (-4.0, 0.4, "inconclusive"),  # D = 0, too noisy to be inside ±0.25
])
def test_the_verdict_rule(b_x: float, se: float, expected: str) -> None:
    a = [estimate(-4.0, se=se, dof=12) for _ in range(3)]
    b = [estimate(b_x, se=se, dof=12) for _ in range(3)]
    differences = [width_difference(w, x, y) for w, x, y in zip((32, 64, 128), a, b)]
    shift = pooled_shift(differences, a, b)
    judged = shift_verdict(shift, differences, True, 0.25)
    assert judged.verdict == expected, (shift, judged)
    assert bool(judged.reason) == (expected == "inconclusive")
    assert judged.p_holm == pytest.approx(holm([shift.p] + [d.p for d in differences])[1:]), \
        "the pooled shift and the widths are one family"


def test_one_width_that_moved_is_enough_and_a_resolution_bound_is_never_same() -> None:
    a = [estimate(-4.0, se=0.05, dof=12) for _ in range(4)]
    b = [estimate(-4.0, se=0.05, dof=12) for _ in range(3)] + [estimate(-2.5, se=0.05, dof=12)]
    differences = [width_difference(w, x, y) for w, x, y in zip((32, 64, 128, 256), a, b)]
    judged = shift_verdict(pooled_shift(differences, a, b), differences, True, 0.25)
    assert judged.verdict == "moved" and judged.moved == [256]
    entry = PointResult(64, -4.0, (-4.2, -3.8), ci_kind="resolution", se=0.05, dof=None)
    one_seed = estimate_of(entry)
    assert not one_seed.confidence and one_seed.dof == math.inf and one_seed.se == pytest.approx(0.2 / 1.959964)
    same_a = [estimate(-4.0, se=0.01) for _ in range(2)]
    diffs = [width_difference(w, x, x) for w, x in zip((32, 64), same_a)]
    judged = shift_verdict(pooled_shift(diffs, same_a, same_a), diffs, False, 0.25)
    assert judged.verdict == "inconclusive" and "one seed" in judged.reason


def bowl_trials(x0: float, seeds: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A symmetric bowl 2 + 0.4 (x − x0)² on the 1-octave grid −8 … −2, each seed trained at every point."""
    grid = np.arange(-8.0, -1.5, 1.0)
    x = np.tile(grid, seeds)
    seed = np.repeat(np.arange(seeds), len(grid))
    loss = 2.0 + 0.4 * (x - x0) ** 2 + rng.normal(0.0, noise, len(x))
    return x, seed, loss


def test_the_best_loss_is_the_fitted_minimum_not_a_trained_point() -> None:
    x, seed, loss = bowl_trials(-4.4, 3, 0.0, np.random.default_rng(0))
    ok = np.ones(len(x), dtype=bool)
    opt = optimum_of_arrays(64, x, seed, loss, ok, ~ok, 1.0, 1.0)
    assert opt is not None and opt.x_star == pytest.approx(-4.4, abs=0.02)
    assert opt.best_loss == pytest.approx(2.0, abs=1e-3) and loss.min() == pytest.approx(2.064)
    assert opt.seed_best_losses == pytest.approx([2.0] * 3, abs=1e-3)
    assert opt.result().seed_best_losses == opt.seed_best_losses


def test_the_loss_difference_interval_is_welch_on_the_seeds_fitted_minima() -> None:
    a = PointResult(64, -4.0, None, best_loss=3.00, seed_best_losses=[2.99, 3.00, 3.01])
    b = PointResult(64, -4.0, None, best_loss=2.90, seed_best_losses=[2.88, 2.90, 2.92])
    d, ci = loss_difference(a, b)
    se = math.sqrt(0.01**2 / 3 + 0.02**2 / 3)
    dof = se**4 / ((0.01**2 / 3) ** 2 / 2 + (0.02**2 / 3) ** 2 / 2)
    assert d == pytest.approx(-0.10) and ci is not None
    assert ci[1] - d == pytest.approx(t_quantile(0.975, dof) * se)
    assert loss_difference(a, PointResult(64, -4.0, None, best_loss=2.9, seed_best_losses=[])) == (pytest.approx(-0.1), None)


def test_compare_setup_lists_widths_only_one_run_measured() -> None:
    def entry(width: int) -> PointResult:
        return PointResult(width, -4.0, (-4.2, -3.8), ci_kind="confidence", se=0.05, dof=6, shape_se=0.0,
                           best_loss=3.0, seed_best_losses=[3.0, 3.01])

    info_a = AxisFit("width", "inconclusive", "confidence", points={32: entry(32), 64: entry(64)}, seed_correlation=0.0)
    info_b = AxisFit("width", "inconclusive", "confidence", points={64: entry(64), 128: entry(128)},
                     seed_correlation=0.0)
    rows, row = compare_setup(info_a, info_b, 0.25, setup="s")
    assert [r["width"] for r in rows] == [64] and row["only_a"] == [32] and row["only_b"] == [128]
    assert row["verdict"] == "same" and row["shift"] == 0.0 and rows[0]["weight"] == 1.0


def test_satterthwaite_by_hand_and_known_parts_count_as_known() -> None:
    """(Σv)²/Σ v²/ν over the estimated parts: Welch's degrees of freedom for two samples; a part with no or an
    infinite ν, or no variance, adds nothing; nothing estimated: None."""
    from mutransfer.analysis.stats import satterthwaite

    va, vb = 0.04 / 3, 0.09 / 5
    assert satterthwaite([(va, 2), (vb, 4)]) == pytest.approx((va + vb) ** 2 / (va**2 / 2 + vb**2 / 4), rel=1e-15)
    assert satterthwaite([(0.5, 3), (0.5, None)]) == pytest.approx(1.0**2 / (0.25 / 3))
    assert satterthwaite([(0.5, 3), (0.5, math.inf), (0.0, 7)]) == satterthwaite([(0.5, 3), (0.5, None)])
    assert satterthwaite([(0.5, None), (0.2, math.inf)]) is None


def test_a_gain_over_its_anchor_by_hand() -> None:
    """The anchor's mean over its finite seeds, anchor − best, and Welch's interval from the seeds' best losses."""
    from mutransfer.analysis.anchored import gain_over_anchor
    from mutransfer.analysis.stats import t_quantile

    best, anchor = np.array([2.0, 2.2, 2.1]), np.array([2.5, 2.7, np.nan, 2.6])
    found = gain_over_anchor(2.1, best, anchor)
    assert (found.anchor, found.anchor_seeds, found.gain) == (pytest.approx(2.6), [2.5, 2.7, 2.6], pytest.approx(0.5))
    va = vb = 0.01 / 3
    half = t_quantile(0.975, (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)) * math.sqrt(va + vb)
    assert found.ci == pytest.approx((0.5 - half, 0.5 + half))
    assert gain_over_anchor(None, best, anchor).gain is None and gain_over_anchor(2.1, best[:1], anchor).ci is None
