"""Stopping when decided without inflating the verdicts' error rates: a group-sequential test whose interim looks
spend the error by the O'Brien–Fleming-type function of Lan & DeMets ("Discrete sequential boundaries for
clinical trials", Biometrika 1983), and whose final look is the fixed design's own test.

The verdict is two one-sided tests of the slope at level ``ALPHA`` each (``analysis.drift.verdict``: its 90 %
interval inside the margin, or wholly beyond it). At an interim look with information fraction t the interval is
widened to the look's boundary: the one-sided error spent by then is α(t) = 2 − 2Φ(z_{1−α/2} / √t), and the
boundaries c_k solve P(no earlier crossing, crossing at look k) = α(t_k) − α(t_{k−1}) for a Brownian motion
observed at the looks (the recursive integration of Armitage, McPherson & Rowe, "Repeated significance tests on
accumulating data", JRSS A 1969). The final look keeps the fixed design's interval, so a sweep that never stops
early gives the fixed design's verdicts exactly; the error added is at most what the interim looks spent
(α(t) at t = 0.4 is 0.2 % of the 5 %). docs/sweeps.md has the simulated error rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np

from ..words import Verdict
from .drift import verdict
from .result import AxisFit
from .stats import t_quantile
from .thresholds import Thresholds

__all__ = ["ALPHA", "Look", "spent", "boundaries", "looks", "decided_at"]

ALPHA = 0.05
"""Each one-sided test's level: the verdict's 90 % interval."""
GRID_POINTS = 4001
"""Points of the numerical integration's grid over the continuation region."""


@dataclass(frozen=True)
class Look:
    """One planned look: its information fraction, its one-sided boundary (a z value) and the nominal one-sided
    level that boundary stands for (the t quantile a fit's interval takes at its own degrees of freedom)."""

    index: int
    fraction: float
    z: float
    level: float
    final: bool

    def as_dict(self) -> dict[str, float | int | bool]:
        return {"look": self.index + 1, "fraction": round(self.fraction, 4), "z": round(self.z, 4),
                "level": self.level, "final": self.final}


def spent(t: float, alpha: float = ALPHA) -> float:
    """The one-sided error the O'Brien–Fleming-type function has spent by information fraction ``t``."""
    if t <= 0:
        return 0.0
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return min(alpha, 2.0 - 2.0 * NormalDist().cdf(z / math.sqrt(min(t, 1.0))))


def _normal_sf(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.array([math.erfc(v / math.sqrt(2.0)) for v in x.ravel()]).reshape(x.shape)


def boundaries(fractions: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """One-sided z boundaries at information ``fractions`` (increasing, the last 1) that spend ``spent`` at
    each; the sum process S_k = Z_k √t_k is tracked as a sub-density on a grid below each boundary."""
    z_out: list[float] = []
    density: Optional[np.ndarray] = None
    grid: Optional[np.ndarray] = None
    previous_t, previous_spent = 0.0, 0.0
    for t in fractions:
        target = spent(t, alpha) - previous_spent
        step = t - previous_t
        if density is None or grid is None:
            z = NormalDist().inv_cdf(1.0 - target)
        else:
            weights = density * np.gradient(grid)

            def crossing(c: float) -> float:
                return float(weights @ _normal_sf((c * math.sqrt(t) - grid) / math.sqrt(step)))

            low, high = -8.0, 40.0
            for _ in range(80):
                middle = (low + high) / 2
                low, high = (middle, high) if crossing(middle) > target else (low, middle)
            z = (low + high) / 2
        z_out.append(z)
        upper = z * math.sqrt(t)
        new_grid = np.linspace(upper - 10.0 * math.sqrt(t) - 1.0, upper, GRID_POINTS)
        if density is None or grid is None:
            density = np.exp(-new_grid**2 / (2 * t)) / math.sqrt(2 * math.pi * t)
        else:
            kernel = np.exp(-(new_grid[:, None] - grid[None, :]) ** 2 / (2 * step)) / math.sqrt(2 * math.pi * step)
            density = kernel @ (density * np.gradient(grid))
        grid, previous_t, previous_spent = new_grid, t, previous_spent + target
    return z_out


def looks(fractions: Sequence[float], alpha: float = ALPHA) -> list[Look]:
    """The planned looks at ``fractions``: interim ones at their spending boundaries, the last at the fixed
    design's level ``alpha``."""
    if not fractions:
        return []
    interim = boundaries(fractions[:-1], alpha) if len(fractions) > 1 else []
    out = [Look(i, t, z, 1.0 - NormalDist().cdf(z), False) for i, (t, z) in enumerate(zip(fractions, interim))]
    return out + [Look(len(fractions) - 1, float(fractions[-1]), NormalDist().inv_cdf(1 - alpha), alpha, True)]


def decided_at(fit: AxisFit, look: Look, th: Thresholds = Thresholds()) -> Optional[str]:
    """The verdict a setup stops with at ``look``: its fit's verdict when the interval widened to the look's level
    still gives it (``transfers`` or ``drifts``), else None (undecided: train on). A fit the fixed design calls
    ``inconclusive`` (censored, missing, failed lack of fit, or a wide interval) is never decided earlier."""
    if fit.verdict not in (Verdict.TRANSFERS, Verdict.DRIFTS) or fit.slope is None or fit.se_slope is None:
        return None
    if look.final:
        return fit.verdict
    dof = fit.dof if fit.dof is not None else None
    q = t_quantile(1.0 - look.level, dof) if dof else NormalDist().inv_cdf(1.0 - look.level)
    interval = (fit.slope - q * fit.se_slope, fit.slope + q * fit.se_slope)
    return fit.verdict if verdict(interval, fit.ci_kind, th) == fit.verdict else None
