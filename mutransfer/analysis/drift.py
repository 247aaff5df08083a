"""The drift of the optimum across widths and the verdict. Pure pandas/numpy.

Drift: weighted least squares of x* against log2(width), weights 1/σ², with a 95 % normal interval
(inflated by √(χ²/dof) when the points scatter more than their errors allow). Verdict: ``transfers`` when
the slope is small and its interval narrow, ``drifts`` when the interval excludes 0 and the slope is not
small, else ``inconclusive``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd

from .optimum import Z95, Thresholds, WidthOptimum, optimum

__all__ = ["Drift", "drift", "verdict", "analyze"]


@dataclass
class Drift:
    slope: float
    ci: tuple[float, float]
    intercept: float
    verdict: str


def verdict(slope: float, ci: tuple[float, float], th: Thresholds = Thresholds()) -> str:
    half = (ci[1] - ci[0]) / 2
    if abs(slope) <= th.transfer_slope and half <= th.transfer_halfwidth:
        return "transfers"
    if abs(slope) > th.transfer_slope and (ci[0] > 0 or ci[1] < 0):
        return "drifts"
    return "inconclusive"


def drift(optima: list[WidthOptimum], th: Thresholds = Thresholds()) -> Optional[Drift]:
    """Weighted least-squares slope of x* against log2(width), with its 95 % interval and the verdict."""
    if len(optima) < 2:
        return None
    x = np.log2([o.width for o in optima])
    y = np.array([o.x_star for o in optima])
    w = 1.0 / np.array([o.sigma for o in optima]) ** 2
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    slope = float(np.sum(w * (x - xm) * (y - (np.sum(w * y) / np.sum(w)))) / sxx)
    intercept = float(np.sum(w * y) / np.sum(w) - slope * xm)
    se = math.sqrt(1.0 / sxx)
    dof = len(optima) - 2
    if dof > 0:
        chi2 = float(np.sum(w * (y - intercept - slope * x) ** 2))
        se *= math.sqrt(max(1.0, chi2 / dof))
    ci = (slope - Z95 * se, slope + Z95 * se)
    return Drift(slope=slope, ci=ci, intercept=intercept, verdict=verdict(slope, ci, th))


def analyze(table: pd.DataFrame, step: float, th: Thresholds = Thresholds(),
            halfwidth: Optional[float] = None) -> dict[str, Any]:
    """``{setup: {slope, slope_ci, verdict, widths: {width: {...}}}}`` for one searched key."""
    out: dict[str, Any] = {}
    for setup, rows in table.groupby("setup", sort=False):
        optima = [o for width, part in rows.groupby("width")
                  if (o := optimum(part, int(width), step, th, halfwidth))]
        fit = drift(optima, th)
        out[str(setup)] = {
            "slope": fit.slope if fit else None,
            "slope_ci": list(fit.ci) if fit else None,
            "intercept": fit.intercept if fit else None,
            "verdict": fit.verdict if fit else "inconclusive",
            "widths": {str(o.width): o.as_dict() for o in optima},
        }
    return out
