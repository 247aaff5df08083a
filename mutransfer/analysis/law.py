"""One law for the optimum across every swept axis. Pure numpy/pandas.

Per setup, ``log2 LR* = c + s_w·log2(width) + s_d·log2(depth) + s_t·log2(steps) + s_B·log2(batch) +
s_D·log2(tokens)`` over the axes that vary among the measured points (the steps or the tokens, never both: under
a batch axis held at fixed tokens the horizon is the budget, and s_B is the batch slope at a fixed budget), by
weighted least squares on the per-point optima (``analysis.regression``: weights 1/(se² + σ_b²), the seeds'
spread pooled over the points as for width alone, σ_b the between-point scatter — estimated when every varying
axis has 4 or more values, the calibrated one otherwise — and the lack-of-fit F test; censored points and points
without a result are left out). Intervals use Student's t with the fit's degrees of freedom (normal quantiles for
resolution bounds), as the width slope does. Each axis's verdict (``judge_law``) is the width line's rule applied
to the law's slope: its 90 % interval inside ±``transfer_slope`` (``transfers``, with measured seed noise), wholly
beyond it (``drifts``), else ``inconclusive``, and ``inconclusive`` whatever the slope where the law fails its
lack-of-fit test or a censored point's bound contradicts it. A sweep's law leaves its censored points out and
counts them, reporting how far the slopes move when their bounds enter. An import's law is fitted with them as
bounds (``analysis.censored``), and with the optima within one grid step of their grid's edge as bounds too.
β = −s_t (or −s_D) is the horizon exponent (Bjorck et al., "Scaling Optimal LR Across Token Horizons":
LR* ∝ D^-β).

A prediction at a target point evaluates the law there for the axes whose slope is applied and at the swept
points' weighted centre for the others (a slope judged to transfer moves nothing), and its range is the law's
uncertainty at the target itself, q · √(gᵀ Σ g + σ_b²) with g = (1, log2 target per axis), stretched to reach
the value when a slope is not applied (as ``analysis.prediction`` does for width alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import axis_named
from ..words import TrialStatus, Verdict
from .censored import censored_fit
from .drift import PointTrials, SearchSettings, common_se, lack_of_fit_reason, setup_optima, undecided, verdict
from .optimum import CONFIDENCE, RESOLUTION, Optimum, fit_halfwidth
from .thresholds import Thresholds
from .result import Judgement, Law, LawPoint, PointResult, PointValue, point_value
from .regression import MIN_POINTS_TO_ESTIMATE, Regression, regress
from .stats import quantile

ROBUST_FROM = 40
"""Residual degrees of freedom from which an import's law takes each coefficient's variance at least as large as
the sandwich's (``analysis.censored.CensoredFit``): enough points to estimate it (the calibration threshold of a
table without seeds, ``analysis.no_seeds.MIN_RESIDUAL_DOF``)."""

__all__ = ["ROBUST_FROM", "LawData", "law_data", "law_of", "fit_law", "fit_laws", "evaluate_law", "judge_law"]


@dataclass
class LawData:
    """One setup's points as a law reads them: each point's coordinates, its optimum (None where every trial
    diverged or failed), the LRs it tried, and the pooled bowl; computed once, so a refit (``law_of`` with a
    subset, the backtest's) reuses the optima."""

    axes: list[str]
    at: list[dict[str, PointValue]]
    logs: np.ndarray
    """log2 of each point's value per axis (points × axes)."""
    optima: dict[int, Optimum]
    points: list[LawPoint]
    tried: list[tuple[float, float]]
    """The lowest and highest searched value each point tried."""
    asymmetry: float
    no_seeds: bool
    step: float
    """The grid's step in the searched scale (log2 LR)."""


def law_data(rows: pd.DataFrame, axes: Sequence[str], settings: SearchSettings, th: Thresholds = Thresholds(),
             no_seeds: bool = False) -> LawData:
    """Every point's optimum from one setup's trials (columns ``seed, x, loss, status`` and one per axis name)."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    groups = list(rows.groupby(list(axes)))
    optima, _, bowl = setup_optima({index: PointTrials.of(part) for index, (_, part) in enumerate(groups)},
                                   settings.step, halfwidth, th, own_shape=no_seeds)
    at = [{name: point_value(v) for name, v in zip(axes, np.atleast_1d(np.asarray(point, dtype=object)))}
          for point, _ in groups]
    logs = np.array([[math.log2(float(a[name])) for name in axes] for a in at]).reshape(len(at), len(axes))
    return LawData(list(axes), at, logs, {o.point: o for o in optima}, _law_points(groups, list(axes), optima),
                   [(float(part["x"].min()), float(part["x"].max())) for _, part in groups], bowl.ratio, no_seeds,
                   settings.step)


def law_of(data: LawData, keep: Optional[Sequence[int]] = None, censored_likelihood: bool = False) -> Optional[Law]:
    """The law over ``data``'s measured points (only those ``keep`` lists, when given), or None when no axis
    varies among them or fewer measured points than coefficients remain (the points' own errors and the
    between-point scatter, not the residuals alone, give the covariance, as for the width slope from two widths).
    Censored points are counted and left out of the weighted fit; with ``censored_likelihood`` (the law an import
    is judged by) they then enter as bounds (``analysis.censored``), which gives the coefficients and their
    covariance. Either way the slopes' shift between the two fits is reported, and a bound the law's range lies
    wholly beyond is recorded as a contradiction."""
    chosen = set(range(len(data.at)) if keep is None else keep)
    used = [o for i, o in data.optima.items() if i in chosen and o.measured]
    if not used:
        return None
    logs = np.array([data.logs[o.point] for o in used])
    varying = [i for i in range(len(data.axes)) if np.ptp(logs[:, i]) > 0]
    names = [data.axes[i] for i in varying]
    if not names or len(used) < len(names) + 1:
        return None
    fit = _regress(used, logs, varying, data.no_seeds)
    coefficients, covariance = fit.coefficients, fit.covariance
    censored = [o for i, o in data.optima.items() if i in chosen and o.censored]
    bounded = (_with_bounds(fit, used, censored, data, varying, censored_likelihood)
               if censored or censored_likelihood else None)
    if bounded is not None and censored_likelihood:
        coefficients, covariance = bounded
    dof = None if fit.dof is None else max(1, int(fit.dof))
    kind = CONFIDENCE if all(o.ci_kind == CONFIDENCE for o in used) else RESOLUTION
    law = Law(axes=names, coefficients={"intercept": float(coefficients[0]),
                                        **{n: float(c) for n, c in zip(names, coefficients[1:])}},
              covariance=covariance.tolist(), dof=dof, ci_kind=kind, points_used=len(used),
              centre={n: float(np.sum(fit.weights * logs[:, i]) / np.sum(fit.weights)) for n, i in zip(names, varying)},
              slope_ci=_slope_intervals(coefficients, covariance, names, quantile(0.975, dof)),
              lack_of_fit=fit.lack_of_fit, fails_lack_of_fit=fit.fails, between_sd=fit.between_sd,
              between_source=fit.between_source, lack_of_fit_line=fit.lack_of_fit_line(), asymmetry=data.asymmetry)
    law.slope_ci90 = _slope_intervals(coefficients, covariance, names, quantile(0.95, dof))
    if keep is None:
        law.points = data.points
    horizon = next((name for name in ("tokens", "steps") if name in names), None)
    if horizon is not None:
        lo, hi = law.slope_ci[horizon]
        law.beta, law.beta_ci = -law.coefficients[horizon], (-hi, -lo)
    law.censored = len(censored)
    if bounded is not None and censored:
        law.censored_shift = {name: float(bounded[0][k] - fit.coefficients[k]) for k, name in enumerate(names, 1)}
    if censored:
        law.contradicted = [data.at[o.point] for o in censored if _contradicts(law, o, data.at[o.point])]
    return law


def _regress(optima: Sequence[Optimum], logs: np.ndarray, varying: Sequence[int], no_seeds: bool) -> Regression:
    x = np.column_stack([np.ones(len(optima)), logs[:, list(varying)]])
    kind = CONFIDENCE if all(o.ci_kind == CONFIDENCE for o in optima) else RESOLUTION
    pure_dof = min((o.dof for o in optima if o.dof), default=None) if kind == CONFIDENCE else None
    enough = no_seeds or all(len(np.unique(logs[:, i])) >= MIN_POINTS_TO_ESTIMATE for i in varying)
    return regress(x, np.array([o.x_star for o in optima]), np.array([o.se for o in optima]), pure_dof, enough,
                   common_se(optima))


def _slope_intervals(coefficients: np.ndarray, covariance: np.ndarray, names: Sequence[str],
                     q: float) -> dict[str, tuple[float, float]]:
    return {n: (float(coefficients[k] - q * math.sqrt(covariance[k, k])),
                float(coefficients[k] + q * math.sqrt(covariance[k, k]))) for k, n in enumerate(names, start=1)}


def _with_bounds(fit: Regression, used: Sequence[Optimum], censored: Sequence[Optimum], data: LawData,
                 varying: Sequence[int], near_edge: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The coefficients and covariance with the censored points entered as bounds at their grid's edge, each point
    at the variance the weighted fit gives it (its se² and σ_b²; ``analysis.censored``). With ``near_edge`` (the
    law an import is judged by), a measured optimum within one grid step of its grid's edge enters as a bound one
    step inside that edge too: its vertex rests on runs from one side only, and the window's edge pulls it toward
    the grid's centre (on asymmetric, AdamW-like curves by up to 0.4 octave in simulation), a pull that moves with
    every axis that walks the optimum across one grid. With ``ROBUST_FROM``
    residual degrees of freedom or more, each coefficient's variance is at least the sandwich's (the model
    covariance scaled per coefficient, so it stays a covariance); the covariance carries the weighted fit's
    common error on the intercept as it does."""
    points = [*used, *censored]
    x = np.column_stack([np.ones(len(points)), np.array([data.logs[o.point] for o in points])[:, list(varying)]])
    variance = np.maximum(np.array([o.se for o in points]), 1e-6) ** 2 + fit.between_sd**2
    edge = {"low": 0, "high": 1}
    y = np.array([data.tried[o.point][edge[o.censored]] if o.censored else o.x_star for o in points])
    sides = [o.censored or "" for o in points]
    if near_edge:
        for k, o in enumerate(points):
            low, high = data.tried[o.point]
            if not o.censored and o.x_star < low + data.step:
                y[k], sides[k] = low + data.step, "low"
            elif not o.censored and o.x_star > high - data.step:
                y[k], sides[k] = high - data.step, "high"
    found = censored_fit(x, y, variance, sides, fit.coefficients)
    covariance = found.covariance.copy()
    if len(points) - x.shape[1] >= ROBUST_FROM:
        scale = np.sqrt(np.maximum(1.0, np.diag(found.robust) / np.diag(found.covariance)))
        covariance = covariance * np.outer(scale, scale)
    covariance[0, 0] += common_se(used) ** 2
    return found.coefficients, covariance


def _contradicts(law: Law, optimum: Optimum, at: Mapping[str, PointValue]) -> bool:
    """A censored point whose bound the law's 95 % range at that point lies wholly beyond: its optimum is at or
    below its lowest LR while the law puts it above (or the other way round)."""
    _, (low, high) = evaluate_law(law, {n: float(at[n]) for n in law.axes}, list(law.axes))
    bound_low, bound_high = optimum.ci
    return (optimum.censored == "low" and low > bound_high) or (optimum.censored == "high" and high < bound_low)


def fit_law(rows: pd.DataFrame, axes: Sequence[str], settings: SearchSettings,
            th: Thresholds = Thresholds(), no_seeds: bool = False) -> Optional[Law]:
    """One setup's law from its trials (columns ``seed, x, loss, status`` and one per axis name), or None when
    no axis varies or fewer measured points than coefficients remain (``law_of``)."""
    return law_of(law_data(rows, axes, settings, th, no_seeds))


def judge_law(law: Law, th: Thresholds = Thresholds()) -> None:
    """Each axis's verdict from the law's slope (``drift.verdict`` on its 90 % interval): ``inconclusive`` for
    every axis where the law fails its lack-of-fit test, or where a censored point's bound contradicts it."""
    for name in law.axes:
        plural = axis_named(name).plural
        if law.fails_lack_of_fit and law.lack_of_fit is not None:
            law.verdicts[name] = Judgement(Verdict.INCONCLUSIVE, lack_of_fit_reason(
                "the points lie off the law", law.between_sd or 0.0, law.lack_of_fit),
                "look at the curves (mutransfer plot) for a point whose optimum is off, or add points on every axis")
        elif law.contradicted:
            where = ", ".join(" ".join(f"{k}={v:g}" for k, v in at.items()) for at in law.contradicted[:3])
            law.verdicts[name] = Judgement(
                Verdict.INCONCLUSIVE, f"the optimum at the grid's edge at {where} lies beyond the law's range there",
                f"extend the LR grid at {where} past its edge, so that optimum is measured")
        else:
            ci90 = law.slope_ci90[name]
            judged = verdict(ci90, law.ci_kind, th)
            reason, fix = ("", "") if judged != Verdict.INCONCLUSIVE else undecided(ci90, th, law.ci_kind, plural)
            law.verdicts[name] = Judgement(judged, reason, fix)


def _law_points(groups: Sequence[tuple[Any, pd.DataFrame]], axes: list[str], optima: Sequence[Any]) -> list[LawPoint]:
    """Each group's coordinates and optimum (a flagged empty result where every trial diverged or failed)."""
    found = {o.point: o for o in optima}
    points = []
    for index, (point, part) in enumerate(groups):
        at = {name: point_value(v) for name, v in zip(axes, np.atleast_1d(np.asarray(point, dtype=object)))}
        if index in found:
            result = found[index].result()
        else:
            flag = "all_diverged" if (part["status"] == TrialStatus.DIVERGED).all() else "all_failed"
            result = PointResult(point=index, x_star=None, ci=None, flags=[flag])
        points.append(LawPoint(at, result))
    return points


def fit_laws(table: pd.DataFrame, axes: Sequence[str], settings: Mapping[str, SearchSettings],
             th: Thresholds = Thresholds(), no_seeds: bool = False) -> dict[str, Optional[Law]]:
    """``{setup: law}`` for one searched key's tidy table (``setup``, the axis columns, ``seed, x, loss, status``);
    ``no_seeds``: a table without seeds (``analysis.no_seeds``): σ_b estimated from the law's residuals whatever
    the number of values per axis (the points' errors leave out what a run's seed shares across its LRs), each
    point at its own bowl shape."""
    return {str(setup): fit_law(rows, axes, settings.get(str(setup), SearchSettings()), th, no_seeds)
            for setup, rows in table.groupby("setup", sort=False)}


def evaluate_law(law: Law, target: Mapping[str, float],
                 applied: Sequence[str]) -> tuple[float, tuple[float, float]]:
    """(log2 η*, its 95 % range) at ``target`` ({axis: value}); the slopes of ``applied`` axes move η*, the
    others are read at the swept points' centre. The range is the whole law's at the target (its covariance and
    the target's own scatter about the law), stretched to reach the value when a slope is not applied."""
    names = list(law.axes)
    coefficients = law.coefficients
    value = line = coefficients["intercept"]
    for name in names:
        at = math.log2(target[name]) if name in applied else law.centre[name]
        value += coefficients[name] * at
        line += coefficients[name] * math.log2(target[name])
    g = np.array([1.0] + [math.log2(target[name]) for name in names])
    spread = float(g @ np.array(law.covariance) @ g) + float(law.between_sd or 0.0) ** 2
    half = quantile(0.975, law.dof) * math.sqrt(max(spread, 0.0))
    return value, (min(line - half, value), max(line + half, value))
