"""One law for the optimum across every swept axis. Pure numpy/pandas.

Per setup, ``log2 LR* = c + s_w·log2(width) + s_d·log2(depth) + s_t·log2(steps)`` over the axes that vary
among the measured points, by weighted least squares on the per-point optima (weights 1/se², the seeds'
spread pooled over the points as for width alone; censored points and points without a result are left out).
The coefficients' covariance is (XᵀWX)⁻¹; intervals use Student's t with the pooled degrees of freedom (normal
quantiles for resolution bounds), as the width slope does. β = −s_t is the horizon exponent (Bjorck et al.,
"Scaling Optimal LR Across Token Horizons": LR* ∝ D^-β).

A prediction at a target point evaluates the law there for the axes whose slope is applied and at the swept
points' weighted centre for the others (a slope judged to transfer moves nothing), and its range is the law's
uncertainty at the target itself: q · √(gᵀ Σ g) with g = (1, log2 target per axis).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from .drift import SearchSettings, pool
from .optimum import CONFIDENCE, RESOLUTION, Thresholds, fit_halfwidth, optimum_of_arrays
from .stats import quantile

__all__ = ["fit_law", "fit_laws", "evaluate_law"]


def fit_law(rows: pd.DataFrame, axes: Sequence[str], settings: SearchSettings,
            th: Thresholds = Thresholds()) -> Optional[dict[str, Any]]:
    """One setup's law from its trials (columns ``seed, x, loss, status`` and one per axis name), or None when
    no axis varies or fewer measured points than coefficients remain (the points' own errors, not the residuals,
    give the covariance, as for the width slope from two widths)."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    optima, coordinates = [], {}
    for index, (point, part) in enumerate(rows.groupby(list(axes))):
        status = part["status"].to_numpy()
        opt = optimum_of_arrays(index, part["x"].to_numpy(float), part["seed"].to_numpy(),
                                part["loss"].to_numpy(float), status == "ok", status == "diverged", settings.step,
                                halfwidth, th)
        if opt is not None:
            optima.append(opt)
            coordinates[index] = np.log2(np.atleast_1d(np.asarray(point, dtype=float)))
    used = [o for o in pool(optima) if o.measured]
    if not used:
        return None
    logs = np.array([coordinates[o.width] for o in used])
    varying = [i for i, _ in enumerate(axes) if np.ptp(logs[:, i]) > 0]
    names = [axes[i] for i in varying]
    if not names or len(used) < len(names) + 1:
        return None
    x = np.column_stack([np.ones(len(used)), logs[:, varying]])
    y = np.array([o.x_star for o in used])
    w = 1.0 / np.array([max(o.se, 1e-6) for o in used]) ** 2
    covariance = np.linalg.inv(x.T @ (w[:, None] * x))
    coefficients = covariance @ (x.T @ (w * y))
    kind = CONFIDENCE if all(o.ci_kind == CONFIDENCE for o in used) else RESOLUTION
    dof = min((o.dof for o in used if o.dof), default=None) if kind == CONFIDENCE else None
    q = quantile(0.975, dof)
    law: dict[str, Any] = {
        "axes": names, "coefficients": {"intercept": float(coefficients[0]),
                                        **{n: float(c) for n, c in zip(names, coefficients[1:])}},
        "covariance": covariance.tolist(), "dof": dof, "ci_kind": kind, "points_used": len(used),
        "centre": {n: float(np.sum(w * logs[:, i]) / np.sum(w)) for n, i in zip(names, varying)},
        "slope_ci": {n: [float(coefficients[k] - q * math.sqrt(covariance[k, k])),
                         float(coefficients[k] + q * math.sqrt(covariance[k, k]))]
                     for k, n in enumerate(names, start=1)}}
    if "steps" in names:
        lo, hi = law["slope_ci"]["steps"]
        law["beta"], law["beta_ci"] = -law["coefficients"]["steps"], [-hi, -lo]
    return law


def fit_laws(table: pd.DataFrame, axes: Sequence[str], settings: Mapping[str, SearchSettings],
             th: Thresholds = Thresholds()) -> dict[str, Optional[dict[str, Any]]]:
    """``{setup: law}`` for one searched key's tidy table (``setup``, the axis columns, ``seed, x, loss, status``)."""
    return {str(setup): fit_law(rows, axes, settings.get(str(setup), SearchSettings()), th)
            for setup, rows in table.groupby("setup", sort=False)}


def evaluate_law(law: Mapping[str, Any], target: Mapping[str, float],
                 applied: Sequence[str]) -> tuple[float, float]:
    """(log2 η*, the 95 % half-width) at ``target`` ({axis: value}); the slopes of
    ``applied`` axes move η*, the others are read at the swept points' centre."""
    names = list(law["axes"])
    coefficients = law["coefficients"]
    value = coefficients["intercept"]
    for name in names:
        at = math.log2(target[name]) if name in applied else law["centre"][name]
        value += coefficients[name] * at
    g = np.array([1.0] + [math.log2(target[name]) for name in names])
    spread = float(g @ np.array(law["covariance"]) @ g)
    return value, quantile(0.975, law.get("dof")) * math.sqrt(max(spread, 0.0))
