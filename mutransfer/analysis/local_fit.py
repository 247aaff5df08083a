"""The local quadratic fit that places the fit window on a mean loss curve: least squares through the points
within ±h of a centre, the centre moving from the argmin to the point nearest the fitted vertex until it stays
put (h = the grid step, on log2 scales at least ``fit_octaves``). Pure numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .thresholds import Thresholds

__all__ = ["LocalFit", "local_fit", "fit_window", "fit_halfwidth", "window_of", "local_optimum"]


@dataclass(frozen=True)
class LocalFit:
    """A local quadratic fit: vertex, curvature, argmin index, the window's indices, the vertex's standard
    error per unit of loss noise and the residual RMS (NaN without residual degrees of freedom)."""

    x_star: float
    curvature: float
    argmin: int
    window: np.ndarray
    sigma_unit: float
    residual: float


def _quadratic(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float, float, float]:
    """Vertex (inside the span; the best point when there is no minimum), curvature, the vertex's standard
    error per unit noise (delta method on the least-squares coefficients) and the residual RMS."""
    design = np.vander(xs, 3)
    coeffs = np.linalg.lstsq(design, ys, rcond=None)[0]
    a, b, _ = coeffs
    if a <= 0:
        return float(xs[np.argmin(ys)]), float(a), math.nan, math.nan
    vertex = float(np.clip(-b / (2 * a), xs.min(), xs.max()))
    dof = len(xs) - 3
    if dof <= 0:
        return vertex, float(a), math.nan, math.nan
    resid = ys - design @ coeffs
    grad = np.array([b / (2 * a * a), -1 / (2 * a), 0.0])
    sigma_unit = float(np.sqrt(grad @ np.linalg.inv(design.T @ design) @ grad))
    return vertex, float(a), sigma_unit, float(np.sqrt(resid @ resid / dof))


def fit_window(xs: np.ndarray, centre: int, halfwidth: float) -> np.ndarray:
    """Indices of the points within ±halfwidth of ``xs[centre]`` (at least the three nearest)."""
    window = np.flatnonzero(np.abs(xs - xs[centre]) <= halfwidth + 1e-9)
    if len(window) < 3:
        window = np.sort(np.argsort(np.abs(xs - xs[centre]), kind="stable")[:3])
    return window


def local_fit(xs: np.ndarray, ys: np.ndarray, halfwidth: float) -> LocalFit:
    """Local quadratic regression on a mean curve sorted by x: the fit window ±``halfwidth`` around the argmin,
    moved to the point nearest the fitted vertex until it stays put."""
    i = int(np.argmin(ys))
    if len(xs) < 3:
        return LocalFit(float(xs[i]), 0.0, i, np.arange(len(xs)), math.nan, math.nan)
    centre, visited = i, set()
    while True:
        window = fit_window(xs, centre, halfwidth)
        x_star, a, sigma_unit, residual = _quadratic(xs[window], ys[window])
        nearest = int(np.argmin(np.abs(xs - x_star)))
        visited.add(centre)
        if nearest in visited:
            return LocalFit(x_star, a, i, window, sigma_unit, residual)
        centre = nearest


def fit_halfwidth(step: float, log2: bool, th: Thresholds = Thresholds()) -> float:
    """Half-width of the local fit window: the grid step, and at least ``fit_octaves`` on a log2 scale."""
    return max(step, th.fit_octaves) if log2 else step


def window_of(xs: np.ndarray, ys: np.ndarray, halfwidth: float) -> np.ndarray:
    """The x values of the fit window the local regression settles on for a sorted mean curve (the points the
    noise probes re-train)."""
    return xs[local_fit(xs, ys, halfwidth).window]


def local_optimum(points: Mapping[float, float], halfwidth: float) -> tuple[float, float]:
    """(x*, the grid point nearest it) of ``{x: loss}`` by the same local quadratic regression as ``optimum``."""
    xs = np.array(sorted(points), dtype=float)
    ys = np.array([points[x] for x in sorted(points)], dtype=float)
    x_star = local_fit(xs, ys, halfwidth).x_star
    return x_star, float(xs[np.argmin(np.abs(xs - x_star))])
