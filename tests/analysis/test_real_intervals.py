"""The parts that make the intervals hold on real curves, each on inputs with a known answer: F and χ² tails, the
two-sided bowl, the regression with its between-point scatter and lack-of-fit test, the stretched range, the
computed advice (on the range and on the verdict), and an optimum's and an effect's interval at the 90 % level."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from mutransfer.analysis.bowl import UNMEASURED, Asymmetry, asymmetry, pooled_asymmetry, vertex
from mutransfer.analysis.decay_effect import decay_effect
from mutransfer.analysis.levels import decay_interval, point_interval
from mutransfer.analysis.narrowing import MAX_EXTRA_SEEDS, verdict_advice
from mutransfer.analysis.optimum import confidence_interval
from mutransfer.analysis.prediction import narrowing_advice, predict
from mutransfer.analysis.regression import BETWEEN_POINT_SD, CALIBRATED_SOURCE, POOLED_SOURCE, regress
from mutransfer.analysis.result import AxisFit, PointResult
from mutransfer.analysis.stats import chi2_sf, f_sf, quantile, t_quantile


def test_f_and_chi2_tails_obey_their_identities() -> None:
    for dof in (1, 3, 8, 30):
        assert f_sf(t_quantile(0.975, dof) ** 2, 1, dof) == pytest.approx(0.05, abs=1e-6), "F(1, ν) is t²"
        assert f_sf(1.0, dof, dof) == pytest.approx(0.5, abs=1e-9), "F(ν, ν) has median 1"
    for x in (0.1, 1.0, 7.5, 40.0):
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-9)
    assert f_sf(2.5, 3, None) == pytest.approx(f_sf(2.5, 3, 10**7), rel=1e-4), "ν → ∞ is χ²/d"
    assert f_sf(0.0, 2, 5) == 1.0 and f_sf(1e6, 2, 5) < 1e-9


def two_sided(xs: np.ndarray, centre: float, ratio: float, curvature: float = 0.4) -> np.ndarray:
    d = xs - centre
    return 2.0 + curvature * d * d * np.where(d > 0, ratio, 1.0)


@pytest.mark.parametrize("ratio", [0.27, 1.0, 3.0])
def test_the_two_sided_fit_measures_the_asymmetry_and_unbiases_the_vertex(ratio: float) -> None:
    grid = np.arange(-7.0, -2.0)
    fit = asymmetry(grid, two_sided(grid, -4.6, ratio), 0.01)
    assert fit is not None and fit.ratio == pytest.approx(ratio, rel=0.01)
    window = np.array([-6.0, -5.0, -4.0])
    assert vertex(window, two_sided(window, -4.6, ratio), ratio, 1.0).x == pytest.approx(-4.6, abs=0.01)
    if ratio != 1.0:
        assert abs(vertex(window, two_sided(window, -4.6, ratio), 1.0, 1.0).x + 4.6) > 0.05, "symmetric is biased"


def test_a_vertex_beyond_the_reach_is_censored() -> None:
    window = np.array([-6.0, -5.0, -4.0])
    found = vertex(window, 3.0 - 0.1 * window, 1.0, 1.0)
    assert found.censored == "high" and found.x == pytest.approx(-3.0)


def test_pooling_carries_the_spread_of_the_asymmetry_between_points() -> None:
    same = pooled_asymmetry([Asymmetry(0.3, 0.1), Asymmetry(0.3, 0.1), Asymmetry(0.3, 0.1)])
    spread = pooled_asymmetry([Asymmetry(0.15, 0.1), Asymmetry(0.3, 0.1), Asymmetry(0.6, 0.1)])
    assert same.ratio == pytest.approx(0.3) and spread.ratio == pytest.approx(0.3)
    assert same.se_log == pytest.approx(0.1 / math.sqrt(3)) and spread.se_log > 3 * same.se_log
    assert pooled_asymmetry([None, None]) == UNMEASURED and UNMEASURED.se_log == pytest.approx(abs(math.log(0.27)))


def line_design(widths: list[int]) -> np.ndarray:
    return np.column_stack([np.ones(len(widths)), np.log2(widths)])


def test_three_points_carry_the_calibrated_scatter_and_four_pool_their_own() -> None:
    se = np.full(3, 0.05)
    on_line = regress(line_design([32, 64, 128]), np.array([-4.0, -4.0, -4.0]), se, 6, False)
    assert on_line.between_source == CALIBRATED_SOURCE and on_line.between_sd == BETWEEN_POINT_SD
    assert math.sqrt(on_line.covariance[1, 1]) == pytest.approx(math.sqrt((0.05**2 + BETWEEN_POINT_SD**2) / 2))
    scattered = regress(line_design([32, 64, 128, 256]), np.array([-4.0, -3.2, -4.6, -3.8]), np.full(4, 0.05), 8, True)
    assert scattered.between_source == POOLED_SOURCE and scattered.between_sd > BETWEEN_POINT_SD
    assert scattered.lack_of_fit is not None and scattered.lack_of_fit["p"] < 1e-6
    assert not scattered.fails, "the scatter it measured is carried, not a failure"


def test_lack_of_fit_beyond_the_calibrated_scatter_fails() -> None:
    fit = regress(line_design([32, 64, 128]), np.array([-4.0, -2.5, -4.0]), np.full(3, 0.02), 6, False)
    assert fit.lack_of_fit is not None and fit.lack_of_fit["dof"] == [1, 6] and fit.fails
    assert "F = " in fit.lack_of_fit_line() and "(calibrated)" in fit.lack_of_fit_line()


def summary_entry(slope: float, se: float, seeds: int = 3, widths: tuple[int, ...] = (32, 64, 128, 256)) -> AxisFit:
    """A setup's width line through its widths' optima, each measured with ``seeds`` seeds."""
    logs = np.log2(widths)
    y = -4.0 + slope * (logs - logs[0])
    fit = regress(line_design(list(widths)), y, np.full(len(widths), se), len(widths) * (seeds - 1), False)
    centre = float(np.sum(fit.weights * logs) / np.sum(fit.weights))
    g = np.array([1.0, centre])
    return AxisFit("width", "inconclusive", "confidence", slope=float(fit.coefficients[1]),
                   intercept=float(fit.coefficients[0]), centre=centre, se_slope=math.sqrt(fit.covariance[1, 1]),
                   se_centre=math.sqrt(float(g @ fit.covariance @ g)), dof=int(fit.dof or 0),
                   between_sd=fit.between_sd, lack_of_fit_line=fit.lack_of_fit_line(),
                   points={w: PointResult(w, float(v), None, se=se, seed_vertices=[0.0] * seeds, shape_se=0.0,
                                          censored=None) for w, v in zip(widths, y)})


def test_the_plain_range_reaches_from_the_plain_value_to_the_line() -> None:
    """A slope of +0.1 (inside the margin): the plain value is the centre's, the truth at 4096 is on the line."""
    info = summary_entry(0.1, 0.05)
    plain, corrected = predict(info, 4096, False, 1.0), predict(info, 4096, True, 1.0)
    assert plain.interval is not None and corrected.interval is not None
    assert plain.interval[0] <= plain.log2_lr <= plain.interval[1]
    assert plain.interval[0] <= corrected.interval[0] and plain.interval[1] >= corrected.interval[1]
    assert plain.half_width == pytest.approx(max(plain.log2_lr - plain.interval[0], plain.interval[1] - plain.log2_lr))
    assert "lack of fit" in plain.lack_of_fit


def test_the_advice_is_computed_from_the_measured_noise() -> None:
    """The advised number of noise seeds, applied, brings the range inside the tolerance; where the scatter
    about the line alone exceeds it, no sweep can."""
    noisy = summary_entry(0.0, 0.3, seeds=3)
    assert not predict(noisy, 512, False, 0.6).within_tolerance
    advice = narrowing_advice(noisy, 512, 0.6)
    assert "more noise seed" in advice, advice
    seeds = 3 + int(advice.split()[0])
    assert predict(summary_entry(0.0, 0.3 * math.sqrt(3 / seeds), seeds=seeds), 512, False, 0.6).within_tolerance
    assert "no sweep can" in narrowing_advice(summary_entry(0.0, 0.05), 4096, 0.2), "σ_b alone exceeds ±0.2"


def decided(info: AxisFit) -> bool:
    """The slope's 90 % interval lies inside the ±0.25 margin or wholly beyond it."""
    assert info.slope is not None and info.se_slope is not None
    return quantile(0.95, info.dof) * info.se_slope <= abs(abs(info.slope) - 0.25)


@pytest.mark.parametrize(("slope", "se", "widths", "says"), [
    (0.0, 0.4, (32, 64, 128, 256), "more noise seeds per width"),
    (0.0, 0.05, (32, 64), "sweeping width 128 as well"),
    (0.24, 0.1, (32, 64, 128, 256), f"neither {MAX_EXTRA_SEEDS} more noise seeds per width nor one more width")])
def test_the_verdict_advice_applied_decides_it(slope: float, se: float, widths: tuple[int, ...], says: str) -> None:
    """An undecided slope: the advised seeds, or the advised width, applied with the slope held, decide the
    verdict; near the margin neither the most seeds nor the widest width considered does, and the advice says so."""
    info = summary_entry(slope, se, seeds=3, widths=widths)
    assert not decided(info)
    advice = verdict_advice(info)
    assert says in advice, advice
    more, added = re.match(r"(\d+) more noise seeds? per width", advice), re.search(r"width (\d+) as well", advice)
    if more:
        seeds = 3 + int(more[1])
        assert decided(summary_entry(slope, se * math.sqrt(3 / seeds), seeds=seeds, widths=widths))
    elif added:
        assert decided(summary_entry(slope, se, seeds=3, widths=(*widths, int(added[1]))))
    else:
        most = 3 + MAX_EXTRA_SEEDS
        assert not decided(summary_entry(slope, se * math.sqrt(3 / most), seeds=most, widths=widths))
        assert not decided(summary_entry(slope, se, seeds=3, widths=(*widths, 8 * max(widths))))


def test_an_optimum_s_90_interval_comes_from_its_errors_and_keeps_its_bounds() -> None:
    """At 95 % the stored interval; at 90 % the seeds' and the asymmetry's errors at the 0.95 quantiles, each end
    that is a bound kept: the side a censored seed reached, and the cap of the lowest diverged point."""
    free = PointResult(64, -5.0, confidence_interval(-5.0, 0.2, 4, 0.3), se=0.2, dof=4, ci_kind="confidence",
                       shape_se=0.3)
    assert point_interval(free, 95) == free.ci
    lo, hi = point_interval(free, 90)
    half = math.hypot(t_quantile(0.95, 4) * 0.2, 1.6448536 * 0.3)
    assert (lo, hi) == pytest.approx((-5.0 - half, -5.0 + half)) and free.ci[0] < lo and hi < free.ci[1]
    bounded = PointResult(64, -5.0, (-7.0, -4.5), se=0.2, dof=4, ci_kind="confidence", shape_se=0.3,
                          seed_censored=["low"], diverged_above=-4.5)
    assert point_interval(bounded, 90) == (-7.0, -4.5)
    one_seed = PointResult(64, -5.0, (-6.0, -4.0), se=0.4, ci_kind="resolution")
    assert point_interval(one_seed, 90) == (-6.0, -4.0), "a resolution bound has no level"


def test_a_decay_s_effect_at_90_is_welch_s_interval_at_its_quantile() -> None:
    """The best decay's loss minus decay off's: the 90 % interval shares the 95 % one's centre, narrowed by the
    ratio of Welch's t quantiles (3 seeds a side: 4 degrees of freedom when the spreads are equal)."""
    point = PointResult(64, -5.0, None, best_loss=3.00, seed_best_losses=[2.98, 3.00, 3.02])
    point.decay = decay_effect(point, np.array([3.08, 3.10, 3.12]))
    wide, narrow = point.decay.effect_ci, decay_interval(point, 90)
    assert wide is not None and narrow is not None and decay_interval(point, 95) == wide
    assert sum(narrow) / 2 == pytest.approx(sum(wide) / 2) == pytest.approx(-0.10)
    ratio = t_quantile(0.95, 4) / t_quantile(0.975, 4)
    assert narrow[1] - narrow[0] == pytest.approx(ratio * (wide[1] - wide[0]))
