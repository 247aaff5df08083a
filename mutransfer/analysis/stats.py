"""Quantiles for intervals and tail probabilities for tests: the normal, Student's t, and Fisher's F (χ² when
the denominator's degrees of freedom are infinite). Pure Python (no scipy): F's tail is the regularized
incomplete beta function by its continued fraction, χ²'s the regularized incomplete gamma function (Press,
Teukolsky, Vetterling and Flannery, "Numerical Recipes", §6.2 and §6.4), t's quantile is found by Newton's
method on t² = F(1, ν), and χ²'s by bisection on its tail."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np

__all__ = ["quantile", "t_quantile", "f_sf", "chi2_sf", "chi2_quantile", "satterthwaite", "welch_difference", "Z95"]

Z95 = NormalDist().inv_cdf(0.975)
"""The two-sided 95 % quantile of the standard normal (1.95996…)."""
BISECTIONS = 60
NEWTON_STEPS = 50
SERIES_TERMS = 500
TINY = 1e-300


@lru_cache(maxsize=1024)
def t_quantile(p: float, dof: float) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``dof`` degrees of freedom (any positive real):
    Newton's method on the upper tail P(T > t) = P(F(1, ν) > t²) / 2 with t's density, from the normal quantile
    (the tail is convex for t > 0, so the steps approach the root from below), bisection if that stalls."""
    if not 0.5 < p < 1 or not dof > 0:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and dof > 0, got p={p}, dof={dof}")
    tail = 1 - p
    log_scale = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    t = NormalDist().inv_cdf(p)
    for _ in range(NEWTON_STEPS):
        density = math.exp(log_scale - (dof + 1) / 2 * math.log1p(t * t / dof))
        step = (f_sf(t * t, 1, dof) / 2 - tail) / density
        t_next = t + step if t + step > 0 else t / 2
        if abs(t_next - t) <= 1e-12 * max(1.0, t):
            return t_next
        t = t_next
    return _t_bisection(tail, dof)


def _t_bisection(tail: float, dof: float) -> float:
    """t with P(T > t) = ``tail``, by bisection (the fallback of ``t_quantile``)."""
    lo, hi = 0.0, 1.0
    while f_sf(hi * hi, 1, dof) > 2 * tail:
        lo, hi = hi, 2 * hi
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if f_sf(mid * mid, 1, dof) > 2 * tail:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def quantile(p: float, dof: Optional[float] = None) -> float:
    """Student's t quantile for ``dof`` degrees of freedom, the normal one when ``dof`` is None."""
    return NormalDist().inv_cdf(p) if dof is None else t_quantile(p, dof)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > TINY else TINY)
    h = d
    for m in range(1, SERIES_TERMS):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > TINY else TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > TINY else TINY
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def chi2_sf(value: float, dof: float) -> float:
    """P(χ²_dof > value): the regularized upper incomplete gamma Q(dof/2, value/2)."""
    a, x = dof / 2.0, value / 2.0
    if x <= 0.0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        term = total = 1.0 / a
        for n in range(1, SERIES_TERMS):
            term *= x / (a + n)
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    b, c, d = x + 1.0 - a, 1.0 / TINY, 1.0 / (x + 1.0 - a)
    h = d
    for n in range(1, SERIES_TERMS):
        an = -n * (n - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > TINY else TINY)
        c = b + an / c
        c = c if abs(c) > TINY else TINY
        h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return math.exp(log_front) * h


@lru_cache(maxsize=1024)
def chi2_quantile(p: float, dof: float) -> float:
    """The ``p`` quantile (0 < p < 1) of χ² with ``dof`` degrees of freedom (any positive real): bisection on the
    upper tail P(χ² > value) = 1 − p, its bracket doubled from 1 until it holds the quantile."""
    if not 0 < p < 1 or not dof > 0:
        raise ValueError(f"chi2_quantile needs 0 < p < 1 and dof > 0, got p={p}, dof={dof}")
    tail = 1 - p
    lo, hi = 0.0, 1.0
    while chi2_sf(hi, dof) > tail:
        lo, hi = hi, 2 * hi
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if chi2_sf(mid, dof) > tail:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def f_sf(value: float, dof_num: float, dof_den: Optional[float]) -> float:
    """P(F > value) for Fisher's F with (``dof_num``, ``dof_den``) degrees of freedom; ``dof_den`` None is the
    limit of a known denominator variance, where dof_num · F is χ²_dof_num."""
    if not dof_num > 0:
        raise ValueError(f"f_sf needs dof_num > 0, got {dof_num}")
    if value <= 0.0:
        return 1.0
    if dof_den is None:
        return chi2_sf(dof_num * value, dof_num)
    return _beta_inc(dof_den / 2.0, dof_num / 2.0, dof_den / (dof_den + dof_num * value))


def satterthwaite(parts: Sequence[tuple[float, Optional[float]]]) -> Optional[float]:
    """Satterthwaite's degrees of freedom of a sum of variance components ``(variance, dof)``: (Σ v)² / Σ v²/ν over
    the estimated parts (a positive variance with finite positive ν; None or infinite ν: a known part). None when no
    part is estimated."""
    total = sum(v for v, _ in parts)
    denominator = sum(v * v / d for v, d in parts if d is not None and 0 < d < math.inf and v > 0)
    return total * total / denominator if denominator > 0 else None


def welch_difference(a: np.ndarray, b: np.ndarray, d: float, p: float = 0.975) -> Optional[tuple[float, float]]:
    """Welch's interval around the difference ``d`` (of B's and A's centres) from samples ``a`` and ``b``, from the
    ``p`` quantile (0.975: the 95 % interval; None with fewer than two in either)."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    if va + vb == 0:
        return d, d
    dof = satterthwaite([(va, len(a) - 1), (vb, len(b) - 1)])
    half = t_quantile(p, dof) * math.sqrt(va + vb)
    return d - half, d + half
