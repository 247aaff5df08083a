"""The drift of the optimum across widths, and the verdict as an equivalence test. Pure numpy/pandas.

Drift: weighted least squares of x* against log2(width) over the widths whose optimum was measured (not
censored at a grid edge), each point weighted by 1/(se² + σ_b²): its seeds' error and the between-point scatter
of real optima about a line (``analysis.regression``: estimated from 4 or more widths, the calibrated value
below that; the lack-of-fit F test is reported either way). With seed noise measured, the per-width errors come
from the seeds' vertex spread pooled over the setup's widths (Σ(k_w − 1) degrees of freedom); with one seed they
are resolution bounds.

Verdict: ``transfers`` when the seeds' noise was measured (``ci_kind: confidence``), the slope's 90 % interval
lies inside ±``transfer_slope`` octaves per doubling and no width is censored or missing (two one-sided tests
at 5 %); ``drifts`` when the 90 % interval lies wholly beyond ±``transfer_slope`` (the slope is demonstrably past
the margin, at 5 % one-sided); ``inconclusive`` otherwise — and whenever the points fail the lack-of-fit test —
with the reason and what would decide it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import axis_named
from ..words import TrialStatus, Verdict
from .bowl import Asymmetry, pooled_asymmetry
from .cells import format_interval
from .failures import past_finished, unresolved_failures
from .levels import VERDICT_LEVEL
from .result import AxisFit, PointResult, PointValue, point_value
from .optimum import (CONFIDENCE, MIN_SE, RESOLUTION, Optimum, fit_halfwidth, optimum_of_arrays,
                      width_asymmetry)
from .thresholds import Thresholds
from .regression import MIN_POINTS_TO_ESTIMATE, Regression, regress
from .stats import quantile

__all__ = ["drift", "verdict", "pool", "analyze", "analyze_setup", "SearchSettings", "VERDICTS",
           "PointTrials", "setup_optima", "best_losses", "common_se", "seed_correlation", "lack_of_fit_reason",
           "undecided", "undecided_reason"]

VERDICTS = tuple(Verdict)


@dataclass(frozen=True)
class SearchSettings:
    """How one setup's key was searched: grid step, log2 scale, and the spec's range (to tell added points)."""

    step: float = 1.0
    log2: bool = True
    low: float = -math.inf
    high: float = math.inf


def pool(optima: Sequence[Optimum]) -> list[Optimum]:
    """Confidence intervals with the seeds' vertex spread pooled over widths (more degrees of freedom than
    any one width has); resolution bounds are left as they are."""
    spread = {id(o) for o in optima if o.ci_kind == CONFIDENCE and o.measured and o.dof}
    dof = sum(o.dof or 0 for o in optima if id(o) in spread)
    if len(spread) < 2:
        return list(optima)
    variance = sum((o.dof or 0) * o.se**2 * ((o.dof or 0) + 1) for o in optima if id(o) in spread) / dof
    return [o.with_se(max(math.sqrt(variance / ((o.dof or 0) + 1)), MIN_SE), dof) if id(o) in spread else o
            for o in optima]


def verdict(ci90: tuple[float, float], kind: str, th: Thresholds = Thresholds()) -> str:
    """The equivalence test on a measured slope (no censored or missing width, no failed lack of fit):
    ``transfers`` needs measured seed noise and the 90 % interval inside the margin; ``drifts`` the 90 % interval
    wholly beyond it."""
    if kind == CONFIDENCE and -th.transfer_slope <= ci90[0] and ci90[1] <= th.transfer_slope:
        return Verdict.TRANSFERS
    if ci90[0] > th.transfer_slope or ci90[1] < -th.transfer_slope:
        return Verdict.DRIFTS
    return Verdict.INCONCLUSIVE


def undecided(ci90: tuple[float, float], th: Thresholds, kind: str, plural: str) -> tuple[str, str]:
    """Why a slope's 90 % interval decides nothing, and what would decide it (in general: the sweep's notes and
    ``transfer`` print the advice ``analysis.narrowing`` computes from the measured noise)."""
    reason = undecided_reason(ci90, VERDICT_LEVEL, ci90, th, kind)
    if kind != CONFIDENCE and -th.transfer_slope <= ci90[0] and ci90[1] <= th.transfer_slope:
        return reason, "measure seed noise (search.noise_seeds ≥ 1) and resweep"
    more = "more noise probes (search.noise_seeds) or seeds" if kind == CONFIDENCE else \
        "seed noise measured (search.noise_seeds ≥ 1)"
    return reason, f"{more}, or {plural} further apart or more of them, narrow it"


def undecided_reason(interval: tuple[float, float], level: int, ci90: tuple[float, float], th: Thresholds,
                     kind: str) -> str:
    """Why a slope whose 90 % interval is ``ci90`` decides nothing, said with its ``level`` % ``interval``: it
    rests on one seed's resolution bounds (the 90 % one inside the margin), or it is neither inside the margin nor
    wholly beyond it (then neither is the interval at any wider level)."""
    shown = f"the slope's {level} % interval {format_interval(interval)}"
    if kind != CONFIDENCE and -th.transfer_slope <= ci90[0] and ci90[1] <= th.transfer_slope:
        return f"{shown} rests on one seed's resolution bounds, not measured seed noise"
    return f"{shown} is neither inside ±{th.transfer_slope:g} nor wholly beyond it"


def lack_of_fit_reason(what: str, between_sd: float, lack_of_fit: Mapping[str, float]) -> str:
    """Why a line (or a law) fails its lack-of-fit test: ``what`` lies off it more than the noise explains."""
    return (f"{what} more than the seeds' noise and the between-point scatter (σ_b {between_sd:.2f} octave) explain: "
            f"F = {lack_of_fit['F']:.1f}, p = {lack_of_fit['p']:.2g}")


def _misfit(fit: Regression, plural: str) -> tuple[str, str]:
    assert fit.lack_of_fit is not None
    return (lack_of_fit_reason(f"the optima lie off a line in log2 {plural}", fit.between_sd, fit.lack_of_fit),
            f"look at the curves (mutransfer plot) for a curve whose optimum is off, or sweep more {plural} "
            f"(with 4 or more the scatter is measured and carried)")


def drift(optima: Sequence[Optimum], th: Thresholds = Thresholds(), missing: Sequence[PointValue] = (),
          axis: str = "width") -> AxisFit:
    """The weighted slope of x* over log2(width) and the verdict; censored or ``missing`` widths (all their
    trials diverged or failed) make the verdict ``inconclusive``. ``axis`` names the axis in the reasons (the
    same rules fit the optimum against log2 depth or log2 steps)."""
    plural = axis_named(axis).plural
    used = [o for o in optima if o.measured]
    kind = CONFIDENCE if used and all(o.ci_kind == CONFIDENCE for o in used) else RESOLUTION
    dof = min((o.dof for o in used if o.dof), default=None) if kind == CONFIDENCE else None
    result = AxisFit(axis=axis, verdict=Verdict.INCONCLUSIVE, ci_kind=kind, dof=dof, used=[o.point for o in used])
    fit = _fit_line(result, used) if len(used) >= 2 else None
    blockers = _blockers(optima, missing, plural)
    if blockers:
        result.reason, result.fix = blockers
    elif result.slope is None or fit is None:
        result.reason, result.fix = f"fewer than two {plural} with a measured optimum", f"sweep more {plural}"
    elif fit.fails:
        result.reason, result.fix = _misfit(fit, plural)
    else:
        assert result.slope_ci90 is not None
        result.verdict = verdict(result.slope_ci90, kind, th)
        if result.verdict == Verdict.INCONCLUSIVE:
            result.reason, result.fix = undecided(result.slope_ci90, th, kind, plural)
    return result


def seed_correlation(optima: Sequence[Optimum]) -> float:
    """How much of a seed's vertex shift it carries to every width (seeds share their batches): the intraclass
    correlation of each seed's deviation from its width's mean vertex across the widths where it was measured,
    clipped to [0, 1] (0 with fewer than two widths or two seeds in common)."""
    deviations: dict[int, list[float]] = {}
    for o in optima:
        if len(o.seed_vertices) >= 2:
            mean = sum(o.seed_vertices) / len(o.seed_vertices)
            for s, v in zip(o.vertex_seeds, o.seed_vertices):
                deviations.setdefault(s, []).append(v - mean)
    shared = [np.array(d) for d in deviations.values() if len(d) >= 2]
    if len(shared) < 2:
        return 0.0
    total = sum(float(d @ d) for d in shared)
    cross = sum(float(d.sum() ** 2 - d @ d) for d in shared)
    pairs = sum(len(d) - 1 for d in shared) / len(shared)
    return float(np.clip(cross / (pairs * total), 0.0, 1.0)) if total > 0 else 0.0


def common_se(optima: Sequence[Optimum]) -> float:
    """The error every point shares: the bowl's asymmetry (the RMS of their ``shape_se``) and the part of the
    seeds' error their shared batches carry to every width (``seed_correlation`` · the mean se²). A shared
    error moves the line's centre, not its slope; the slope keeps the seeds' whole error (conservative)."""
    if not optima:
        return 0.0
    shapes = sum(o.shape_se**2 for o in optima) / len(optima)
    shared = seed_correlation(optima) * sum(o.se**2 for o in optima if o.ci_kind == CONFIDENCE) / len(optima)
    return math.sqrt(shapes + shared)


def _fit_line(result: AxisFit, used: Sequence[Optimum]) -> Regression:
    x = np.log2([o.point for o in used])
    y = np.array([o.x_star for o in used])
    se = np.array([o.se for o in used])
    fit = regress(np.column_stack([np.ones_like(x), x]), y, se, result.dof,
                  len(used) >= MIN_POINTS_TO_ESTIMATE, common_se(used))
    intercept, slope = (float(c) for c in fit.coefficients)
    centre = float(np.sum(fit.weights * x) / np.sum(fit.weights))
    se_slope = math.sqrt(fit.covariance[1, 1])
    g = np.array([1.0, centre])
    se_centre = math.sqrt(float(g @ fit.covariance @ g))
    q95, q90 = quantile(0.975, fit.dof), quantile(0.95, fit.dof)
    result.slope, result.se_slope, result.se_centre = slope, se_slope, se_centre
    result.centre, result.intercept, result.dof = centre, intercept, _whole(fit.dof)
    result.slope_ci = (slope - q95 * se_slope, slope + q95 * se_slope)
    result.slope_ci90 = (slope - q90 * se_slope, slope + q90 * se_slope)
    result.lack_of_fit, result.between_sd, result.between_source = fit.lack_of_fit, fit.between_sd, fit.between_source
    result.lack_of_fit_line = fit.lack_of_fit_line()
    result.seed_correlation = seed_correlation(used)
    return fit


def _whole(dof: Optional[float]) -> Optional[int]:
    """Degrees of freedom as the summary stores them (rounded down, at least 1)."""
    return None if dof is None else max(1, int(dof))


def _blockers(optima: Sequence[Optimum], missing: Sequence[PointValue], plural: str) -> Optional[tuple[str, str]]:
    """Why no verdict can be reached whatever the slope: censored optima or widths without any result."""
    if missing:
        names = ", ".join(map(str, missing))
        return (f"every trial diverged or failed at {plural} {names}",
                f"lower the grid (log2_min) or fix the failures at {plural} {names}, then resweep")
    for edge, word, sign in (("low", "below", -1), ("high", "above", 1)):
        hit = [o for o in optima if o.censored == edge]
        if hit:
            names = ", ".join(str(o.point) for o in hit)
            bound = min(o.x_star for o in hit) if sign < 0 else max(o.x_star for o in hit)
            return (f"the optimum is at the grid's {edge} edge (2^{bound:g}) at {plural} {names}",
                    f"extend the grid {word} 2^{bound:g} at {plural} {names} (search.extend, search.extend_max, "
                    f"or log2_{'min' if sign < 0 else 'max'})")
    return None


@dataclass(frozen=True)
class PointTrials:
    """The trials of one point (width, depth, horizon …) as parallel arrays."""

    x: np.ndarray
    seed: np.ndarray
    loss: np.ndarray
    ok: np.ndarray
    diverged: np.ndarray

    @classmethod
    def of(cls, rows: pd.DataFrame) -> "PointTrials":
        """From rows with columns ``x, seed, loss, status``."""
        status = rows["status"].to_numpy()
        return cls(rows["x"].to_numpy(float), rows["seed"].to_numpy(), rows["loss"].to_numpy(float),
                   status == TrialStatus.OK,
                   status == TrialStatus.DIVERGED)


def setup_optima(points: Mapping[Any, PointTrials], step: float, halfwidth: float,
                 th: Thresholds = Thresholds(), own_shape: bool = False) -> tuple[list[Optimum], list[Any], Asymmetry]:
    """Every point's optimum at the setup's pooled bowl asymmetry (``own_shape``: at each point's own where it
    can be measured — a table without seeds, whose dense grids show each bowl's shape, and whose many points
    would turn the shape's drift along the axes into a bias of the slopes), with the seeds' spread pooled over
    the points; the points without any result; the pooled asymmetry."""
    shapes = {key: width_asymmetry(t.x, t.seed, t.loss, t.ok, halfwidth, th) for key, t in points.items()}
    bowl = pooled_asymmetry(list(shapes.values()))
    optima, missing = [], []
    for key, t in points.items():
        shape = shapes[key]
        own = pooled_asymmetry([shape]) if own_shape and shape is not None else bowl
        opt = optimum_of_arrays(key, t.x, t.seed, t.loss, t.ok, t.diverged, step, halfwidth, th, bowl=own)
        if opt is None:
            missing.append(key)
        else:
            optima.append(opt)
    return pool(optima), missing, bowl


def best_losses(points: Mapping[str, PointTrials], step: float, log2: bool, th: Thresholds = Thresholds()) -> dict[str, float]:
    """Each point's best loss as summary.json reports it (the fitted minimum of the seeds' mean curve at the
    setup's pooled asymmetry; the lowest mean loss until a bowl can be fitted): the live sweep table's."""
    labels = list(points)
    optima, _, _ = setup_optima(dict(enumerate(points.values())), step, fit_halfwidth(step, log2, th), th)
    return {labels[o.point]: o.best_loss for o in optima}


def analyze_setup(rows: pd.DataFrame, settings: SearchSettings, th: Thresholds = Thresholds(),
                  axis: str = "width", no_seeds: bool = False) -> AxisFit:
    """One setup's fit along ``axis`` from its tidy rows (``point``: the axis value, ``seed, x, loss, status``):
    the optimum per point (intervals pooled over the points), the line, the verdict, the searched values past the
    spec's range."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    parts = {point_value(point): part for point, part in rows.groupby("point")}
    optima, missing, bowl = setup_optima({p: PointTrials.of(part) for p, part in parts.items()}, settings.step,
                                         halfwidth, th, own_shape=no_seeds)
    found = {opt.point: opt for opt in optima}
    fit = drift(optima, th, missing, axis)
    fit.asymmetry, fit.asymmetry_se_log = bowl.ratio, bowl.se_log
    for point, part in sorted(parts.items()):
        added = sorted(float(x) for x in part["x"].unique() if x < settings.low - 1e-9 or x > settings.high + 1e-9)
        failed = unresolved_failures(part)
        if point in found:
            result = found[point].result(added)
            fit.points[point] = replace(result, failed=failed, flags=result.flags + past_finished(part, result.x_star))
        else:
            flag = "all_diverged" if (part["status"] == TrialStatus.DIVERGED).all() else "all_failed"
            fit.points[point] = PointResult(point=point, x_star=None, ci=None, flags=[flag], added=added,
                                            failed=failed)
    return fit


def analyze(table: pd.DataFrame, settings: SearchSettings | Mapping[str, SearchSettings] = SearchSettings(),
            th: Thresholds = Thresholds(), axis: str = "width", no_seeds: bool = False) -> dict[str, AxisFit]:
    """Each setup's fit along ``axis`` for one searched key (``analyze_setup``); each setup with its own search
    settings when ``settings`` maps setup labels to them; ``no_seeds``: a table without seeds
    (``analysis.no_seeds``)."""
    out: dict[str, AxisFit] = {}
    for setup, rows in table.groupby("setup", sort=False):
        own = settings.get(str(setup), SearchSettings()) if isinstance(settings, Mapping) else settings
        out[str(setup)] = analyze_setup(rows, own, th, axis, no_seeds)
    return out
