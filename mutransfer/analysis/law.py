"""One law for the optimum across every swept axis. Pure numpy/pandas.

Per setup, ``log2 LR* = c + s_w·log2(width) + s_d·log2(depth) + s_t·log2(steps) + s_B·log2(batch) +
s_D·log2(tokens)`` over the axes that vary among the measured points (the steps or the tokens, never both: under
a batch axis held at fixed tokens the horizon is the budget, and s_B is the batch slope at a fixed budget), by
weighted least squares on the per-point optima (``analysis.regression``: weights 1/(se² + σ_b²), the seeds'
spread pooled over the points as for width alone, σ_b the between-point scatter — estimated when every varying
axis has 4 or more values, the calibrated one otherwise — and the lack-of-fit F test; censored points and points
without a result are left out). Intervals use Student's t with the fit's degrees of freedom (normal quantiles for
resolution bounds), as the width slope does. β = −s_t (or −s_D) is the horizon exponent (Bjorck et al.,
"Scaling Optimal LR Across Token Horizons": LR* ∝ D^-β).

A prediction at a target point evaluates the law there for the axes whose slope is applied and at the swept
points' weighted centre for the others (a slope judged to transfer moves nothing), and its range is the law's
uncertainty at the target itself, q · √(gᵀ Σ g + σ_b²) with g = (1, log2 target per axis), stretched to reach
the value when a slope is not applied (as ``analysis.prediction`` does for width alone).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from .drift import PointTrials, SearchSettings, common_se, setup_optima
from .optimum import CONFIDENCE, RESOLUTION, fit_halfwidth
from .thresholds import Thresholds
from .result import Law, LawPoint, PointResult, point_value
from .regression import MIN_POINTS_TO_ESTIMATE, regress
from .stats import quantile

__all__ = ["fit_law", "fit_laws", "evaluate_law"]


def fit_law(rows: pd.DataFrame, axes: Sequence[str], settings: SearchSettings,
            th: Thresholds = Thresholds(), no_seeds: bool = False) -> Optional[Law]:
    """One setup's law from its trials (columns ``seed, x, loss, status`` and one per axis name), or None when
    no axis varies or fewer measured points than coefficients remain (the points' own errors and the
    between-point scatter, not the residuals alone, give the covariance, as for the width slope from two widths)."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    groups = list(rows.groupby(list(axes)))
    coordinates = {index: np.log2(np.atleast_1d(np.asarray(point, dtype=float)))
                   for index, (point, _) in enumerate(groups)}
    optima, _, bowl = setup_optima({index: PointTrials.of(part) for index, (_, part) in enumerate(groups)},
                                   settings.step, halfwidth, th, own_shape=no_seeds)
    used = [o for o in optima if o.measured]
    if not used:
        return None
    logs = np.array([coordinates[o.point] for o in used])
    varying = [i for i, _ in enumerate(axes) if np.ptp(logs[:, i]) > 0]
    names = [axes[i] for i in varying]
    if not names or len(used) < len(names) + 1:
        return None
    x = np.column_stack([np.ones(len(used)), logs[:, varying]])
    kind = CONFIDENCE if all(o.ci_kind == CONFIDENCE for o in used) else RESOLUTION
    pure_dof = min((o.dof for o in used if o.dof), default=None) if kind == CONFIDENCE else None
    enough = no_seeds or all(len(np.unique(logs[:, i])) >= MIN_POINTS_TO_ESTIMATE for i in varying)
    fit = regress(x, np.array([o.x_star for o in used]), np.array([o.se for o in used]), pure_dof, enough,
                  common_se(used))
    coefficients, covariance = fit.coefficients, fit.covariance
    dof = None if fit.dof is None else max(1, int(fit.dof))
    q = quantile(0.975, dof)
    slope_ci = {n: (float(coefficients[k] - q * math.sqrt(covariance[k, k])),
                    float(coefficients[k] + q * math.sqrt(covariance[k, k]))) for k, n in enumerate(names, start=1)}
    law = Law(axes=names, coefficients={"intercept": float(coefficients[0]),
                                        **{n: float(c) for n, c in zip(names, coefficients[1:])}},
              covariance=covariance.tolist(), dof=dof, ci_kind=kind, points_used=len(used),
              centre={n: float(np.sum(fit.weights * logs[:, i]) / np.sum(fit.weights)) for n, i in zip(names, varying)},
              slope_ci=slope_ci, lack_of_fit=fit.lack_of_fit, fails_lack_of_fit=fit.fails, between_sd=fit.between_sd,
              between_source=fit.between_source, lack_of_fit_line=fit.lack_of_fit_line(), asymmetry=bowl.ratio)
    law.points = _law_points(groups, list(axes), optima)
    horizon = next((name for name in ("tokens", "steps") if name in names), None)
    if horizon is not None:
        lo, hi = slope_ci[horizon]
        law.beta, law.beta_ci = -law.coefficients[horizon], (-hi, -lo)
    return law


def _law_points(groups: Sequence[tuple[Any, pd.DataFrame]], axes: list[str], optima: Sequence[Any]) -> list[LawPoint]:
    """Each group's coordinates and optimum (a flagged empty result where every trial diverged or failed)."""
    found = {o.point: o for o in optima}
    points = []
    for index, (point, part) in enumerate(groups):
        at = {name: point_value(v) for name, v in zip(axes, np.atleast_1d(np.asarray(point, dtype=object)))}
        if index in found:
            result = found[index].result()
        else:
            flag = "all_diverged" if (part["status"] == "diverged").all() else "all_failed"
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
