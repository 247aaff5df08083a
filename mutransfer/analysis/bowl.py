"""The two-sided parabola an LR curve is near its optimum: L = c + a·d² below the vertex and c + a·r·d² above it
(d = log2 η − vertex), r the bowl's asymmetry. Pure numpy.

A symmetric parabola through a window of points on an asymmetric bowl puts its vertex toward the flatter side
(on a 1-octave grid with r = 0.27, by 0.1–0.3 octave depending on where the optimum falls between grid points):
a bias no seed spread shows. So the asymmetry is measured on the wider curve (``asymmetry``: the least-squares
(c, a, a·r) at each vertex on a fine profile, two or more points each side) and the vertex of each seed's window
is then fitted with r held (``vertex``: c, a and the vertex, as many unknowns as a 3-point window has points).
Where r cannot be measured (fewer than five points within reach: a coarse grid, divergence close above the
optimum) the bowl is taken as symmetric give or take the typical asymmetry, and that uncertainty is carried in
the vertex's interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["Asymmetry", "asymmetry", "vertex", "Vertex", "bowl_loss", "pooled_asymmetry", "TwoSided", "two_sided",
           "PROFILE_POINTS", "ASYMMETRY_BOUNDS", "SYMMETRIC", "MIN_SE_LOG", "TYPICAL_ASYMMETRY", "UNMEASURED",
           "WINDOW", "SeedBowl", "seed_bowl"]

PROFILE_POINTS = 400
"""Candidate vertices per profile (the vertex is resolved to its span / 400)."""
ASYMMETRY_BOUNDS = (0.125, 8.0)
"""The asymmetries a fit may return: beyond 8× either way a side is too flat to measure."""
MIN_SE_LOG = 0.05
"""The least error of one point's log r when pooling (a fit's own can be implausibly small)."""


@dataclass(frozen=True)
class Asymmetry:
    """r, and the standard error of log r from the fit's covariance at the loss noise it assumed."""

    ratio: float
    se_log: float


SYMMETRIC = Asymmetry(1.0, 0.0)
"""A bowl known to be symmetric."""
TYPICAL_ASYMMETRY = 0.27
"""r measured on this project's μP + Muon curves (the real-curve calibration's ``asymmetry``)."""
UNMEASURED = Asymmetry(1.0, abs(math.log(TYPICAL_ASYMMETRY)))
"""A bowl whose asymmetry could not be measured (too few points, a coarse grid): symmetric, give or take the
typical asymmetry either way, so the vertex's interval carries the bias an asymmetric bowl would give it."""


@dataclass(frozen=True)
class Vertex:
    """A fitted vertex and the parabola's loss there (``level``: the fitted minimum); ``censored`` names the side
    when the curve has no minimum inside the allowed span (the level is then the fit's at that bound, or the
    lowest point's where no candidate curves upward)."""

    x: float
    censored: Optional[str] = None
    level: float = math.nan
    curvature: float = math.nan
    """a: the loss rises by a·d² at d octaves below the vertex (a·r·d² above it); NaN where none was fitted."""


def _sides(d: np.ndarray, ratio: float) -> np.ndarray:
    return d * d * np.where(d > 0, ratio, 1.0)


def bowl_loss(xs: np.ndarray, fitted: Vertex, ratio: float) -> np.ndarray:
    """The fitted two-sided parabola's loss at ``xs``: its level plus a·d² below the vertex, a·r·d² above."""
    return fitted.level + fitted.curvature * _sides(np.asarray(xs, dtype=float) - fitted.x, ratio)


def vertex(xs: np.ndarray, ys: np.ndarray, ratio: float, reach: float) -> Vertex:
    """The vertex of the two-sided parabola with asymmetry ``ratio`` fitted to (xs, ys) by least squares in
    (c, a) at each candidate vertex in [min xs − reach, max xs + reach]; censored at a bound of that span, or
    toward the lower loss when no candidate gives a positive curvature."""
    lo, hi = float(xs.min()) - reach, float(xs.max()) + reach
    candidates = np.linspace(lo, hi, PROFILE_POINTS + 1)
    q = _sides(xs[None, :] - candidates[:, None], ratio)
    qc = q - q.mean(axis=1, keepdims=True)
    yc = ys - ys.mean()
    sxx = (qc * qc).sum(axis=1)
    sxy = (qc * yc).sum(axis=1)
    safe = np.where(sxx > 0, sxx, 1.0)
    sse = float(yc @ yc) - np.where(sxx > 0, sxy * sxy / safe, 0.0)
    sse = np.where(sxy > 0, sse, np.inf)
    if not np.isfinite(sse).any():
        lowest = float(ys.min())
        return Vertex(lo, "low", lowest) if ys[np.argmin(xs)] < ys[np.argmax(xs)] else Vertex(hi, "high", lowest)
    best = int(np.argmin(sse))
    censored = "low" if best == 0 else "high" if best == len(candidates) - 1 else None
    curvature = float(sxy[best] / sxx[best])
    level = float(ys.mean() - curvature * q[best].mean())
    return Vertex(float(candidates[best]), censored, level, curvature)


@dataclass(frozen=True)
class TwoSided:
    """The least-squares two-sided parabola L = level + low·d² below the vertex and level + high·d² above it, and
    its sum of squared residuals."""

    x: float
    level: float
    low: float
    high: float
    sse: float


def _two_sided_design(d: np.ndarray) -> np.ndarray:
    """The columns (1, d² below the vertex, d² above it) of the least-squares fit at offsets ``d`` from it."""
    return np.stack([np.ones_like(d), np.where(d < 0, d * d, 0.0), np.where(d > 0, d * d, 0.0)], axis=-1)


def two_sided(xs: np.ndarray, ys: np.ndarray, candidates: np.ndarray) -> Optional[TwoSided]:
    """The two-sided parabola through (xs, ys) at the candidate vertex with the least squared residuals: at each
    candidate (level, low, high) by least squares, a candidate whose low or high curvature is not positive left
    out; None when every candidate is. Each candidate needs a point on either side of it."""
    design = _two_sided_design(xs[None, :] - candidates[:, None])
    normal = np.einsum("vni,vnj->vij", design, design)
    coeffs = np.linalg.solve(normal, np.einsum("vni,n->vi", design, ys)[..., None])[..., 0]
    resid = ys[None, :] - np.einsum("vni,vi->vn", design, coeffs)
    sse = np.where((coeffs[:, 1] > 0) & (coeffs[:, 2] > 0), (resid * resid).sum(axis=1), np.inf)
    if not np.isfinite(sse).any():
        return None
    best = int(np.argmin(sse))
    level, low, high = (float(c) for c in coeffs[best])
    return TwoSided(float(candidates[best]), level, low, high, float(sse[best]))


def asymmetry(xs: np.ndarray, ys: np.ndarray, noise_floor: float, reach: float = 0.0) -> Optional[Asymmetry]:
    """r of the two-sided parabola through the points (c, a, a·r by least squares at each candidate vertex
    between the second and the second-to-last point), and the error of log r at the fit's residual noise (at
    least ``noise_floor``); None with fewer than five points, two on a side, a side that reaches less than
    ``reach`` from the vertex (points close to it barely rise, and r from them is noise), or no positive
    curvature on both."""
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    if len(xs) < 5:
        return None
    candidates = np.linspace(xs[1], xs[-2], PROFILE_POINTS + 1)
    d = xs[None, :] - candidates[:, None]
    usable = ((d < 0).sum(axis=1) >= 2) & ((d > 0).sum(axis=1) >= 2)
    if not usable.any():
        return None
    fit = two_sided(xs, ys, candidates[usable])
    if fit is None:
        return None
    if fit.x - xs[0] < reach - 1e-9 or xs[-1] - fit.x < reach - 1e-9:
        return None
    design = _two_sided_design(xs - fit.x)
    dof = len(xs) - 4
    noise = max(noise_floor, math.sqrt(fit.sse / dof) if dof > 0 else 0.0)
    covariance = noise * noise * np.linalg.pinv(design.T @ design)
    grad = np.array([0.0, -1.0 / fit.low, 1.0 / fit.high])
    se_log = math.sqrt(max(float(grad @ covariance @ grad), 0.0))
    ratio = float(np.clip(fit.high / fit.low, *ASYMMETRY_BOUNDS))
    return Asymmetry(ratio, se_log)


def pooled_asymmetry(fits: list[Optional[Asymmetry]]) -> Asymmetry:
    """One r for a setup's points: the inverse-variance mean of their log r (``UNMEASURED`` when none could be
    measured). Its error, as a point uses it, is the mean's plus the spread of log r between the points beyond
    their own errors (DerSimonian and Laird's moment estimate): r changes along the axes, the pooled r does not."""
    measured = [f for f in fits if f is not None]
    if not measured:
        return UNMEASURED
    weights = np.array([1.0 / max(f.se_log, MIN_SE_LOG) ** 2 for f in measured])
    logs = np.log([f.ratio for f in measured])
    mean = float(np.sum(weights * logs) / np.sum(weights))
    q = float(np.sum(weights * (logs - mean) ** 2))
    scale = float(np.sum(weights) - np.sum(weights**2) / np.sum(weights))
    between = max(0.0, (q - (len(measured) - 1)) / scale) if scale > 0 else 0.0
    return Asymmetry(float(np.clip(math.exp(mean), *ASYMMETRY_BOUNDS)), math.sqrt(1.0 / float(np.sum(weights)) + between))


WINDOW = 2.0
"""Octaves either side of a curve's lowest point that its two-sided parabola is fitted to: the least that holds two
points on each side on a 1-octave grid (four coefficients need five points)."""
VERTEX_COARSE, VERTEX_FINE = 0.05, 0.001
"""The vertex is profiled on a grid of this spacing (octaves), then refined around the best coarse value."""


@dataclass(frozen=True)
class SeedBowl:
    """L = level + curvature·d² for d < 0 and level + curvature·asymmetry·d² for d > 0, d = x − vertex (octaves),
    fitted by least squares to one seed's curve within ±``WINDOW`` of its lowest point (the simulator's
    calibration measures the real curves' shapes and noise with it, ``scripts/calibrate_simulator.py``)."""

    vertex: float
    level: float
    curvature: float
    asymmetry: float
    offsets: np.ndarray
    residuals: np.ndarray
    leverage: np.ndarray
    """Each point's leverage in the fit (the vertex counted as a fourth coefficient): residual / √(1 − leverage)
    has the noise's variance."""
    points: tuple[tuple[float, float], ...]
    """The fitted (x, loss), rounded to 6 decimals: two bowls of the same points are one curve."""

    @property
    def dof(self) -> int:
        return len(self.residuals) - 4

    @property
    def standardized(self) -> np.ndarray:
        return self.residuals / np.sqrt(np.clip(1.0 - self.leverage, 1e-9, None))


def seed_bowl(x: np.ndarray, loss: np.ndarray, window: float = WINDOW) -> Optional[SeedBowl]:
    """The two-sided parabola of one seed's curve (``SeedBowl``), or None when the window holds fewer than two points
    on either side of the lowest one or no vertex gives both sides a positive curvature."""
    order = np.argsort(x)
    x, loss = np.asarray(x, float)[order], np.asarray(loss, float)[order]
    lowest = x[np.argmin(loss)]
    keep = np.abs(x - lowest) <= window + 1e-9
    x, loss = x[keep], loss[keep]
    if (x < lowest).sum() < 2 or (x > lowest).sum() < 2:
        return None
    coarse = two_sided(x, loss, np.arange(x[1], x[-2] + 1e-9, VERTEX_COARSE))
    if coarse is None:
        return None
    fine = np.arange(max(coarse.x - VERTEX_COARSE, x[1]), min(coarse.x + VERTEX_COARSE, x[-2]) + 1e-9, VERTEX_FINE)
    fit = two_sided(x, loss, fine)
    if fit is None:
        return None
    d = x - fit.x
    side = np.where(d < 0, fit.low, fit.high)
    jacobian = np.column_stack([np.ones_like(d), np.where(d < 0, d * d, 0.0), np.where(d > 0, d * d, 0.0),
                                -2.0 * side * d])
    leverage = np.einsum("nk,kn->n", jacobian, np.linalg.pinv(jacobian))
    return SeedBowl(fit.x, fit.level, fit.low, fit.high / fit.low, d, loss - (fit.level + side * d * d), leverage,
                tuple(zip(np.round(x, 6).tolist(), np.round(loss, 6).tolist())))
