"""Quantiles for intervals: the normal, and Student's t for the degrees of freedom an estimate really has.
Pure Python (no scipy): the t CDF is integrated in the angle θ = atan(t/√ν), where its density ∝ cos^(ν−1) θ
is smooth and bounded, and inverted by bisection."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Optional

__all__ = ["quantile", "t_quantile", "Z95"]

Z95 = NormalDist().inv_cdf(0.975)
"""The two-sided 95 % quantile of the standard normal (1.95996…)."""
SIMPSON_INTERVALS = 2000


def _mass(theta: float, dof: float) -> float:
    """∫_0^θ cos^(ν−1) φ dφ by Simpson's rule."""
    n = SIMPSON_INTERVALS
    h = theta / n
    total = 1.0 + math.cos(theta) ** (dof - 1)
    for i in range(1, n):
        total += (4 if i % 2 else 2) * math.cos(i * h) ** (dof - 1)
    return total * h / 3


@lru_cache(maxsize=256)
def t_quantile(p: float, dof: float) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``dof`` degrees of freedom."""
    if not 0.5 < p < 1 or not dof > 0:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and dof > 0, got p={p}, dof={dof}")
    target = (p - 0.5) * 2 * _mass(math.pi / 2, dof)
    lo, hi = 0.0, math.pi / 2
    for _ in range(50):
        mid = (lo + hi) / 2
        if _mass(mid, dof) < target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(dof) * math.tan((lo + hi) / 2)


def quantile(p: float, dof: Optional[float] = None) -> float:
    """Student's t quantile for ``dof`` degrees of freedom, the normal one when ``dof`` is None."""
    return NormalDist().inv_cdf(p) if dof is None else t_quantile(p, dof)
