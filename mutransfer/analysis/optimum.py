"""The optimum at one width, with an interval. Pure pandas/numpy.

Input is a tidy table with columns ``seed, x, loss, status`` (x = the searched value in search units,
log2(LR) for the learning rate; loss = final validation loss; status ok/diverged/...).

Average the loss over seeds at each x, then a local quadratic regression — least squares through the ok
points within ±h of a centre (h = the grid step; for log2 scales at least ``fit_octaves``), the centre
starting at the argmin and moving to the point nearest the fitted vertex until it stays put; the vertex,
kept inside the window, is x*. With a 1-octave grid this is the parabola through the argmin and its two
neighbours; on a finer grid it averages the loss noise over ±1 octave.
Interval: with ≥ 3 seeds, a seeded bootstrap over seeds (2.5–97.5 %). Otherwise the delta-method error of
the vertex: from the fit's covariance when the window holds more than 3 points (noise = the fit's residual
RMS, at least ``noise_floor``), else σ_x = σ_L / (√2 · 2 a h) (σ_L = the seed spread at the argmin, or
``noise_floor`` with one seed; a = curvature); ±1.96 σ_x plus a quarter of the local point spacing.
Diverged trials are censored: the smallest diverged x caps the interval from above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

__all__ = ["Thresholds", "WidthOptimum", "optimum", "fit_halfwidth", "local_optimum", "Z95"]

Z95 = 1.959964
"""The two-sided 95 % quantile of the standard normal."""


@dataclass(frozen=True)
class Thresholds:
    transfer_slope: float = 0.25
    transfer_halfwidth: float = 0.5
    flat_tol: float = 0.01
    noise_floor: float = 0.01
    fit_octaves: float = 1.0
    bootstrap: int = 400
    seed: int = 0


@dataclass
class WidthOptimum:
    width: int
    x_star: float
    ci: tuple[float, float]
    best_loss: float
    flags: list[str] = field(default_factory=list)
    diverged_above: Optional[float] = None

    @property
    def sigma(self) -> float:
        return max((self.ci[1] - self.ci[0]) / (2 * Z95), 1e-6)

    def as_dict(self) -> dict[str, Any]:
        return {"log2_lr_star": self.x_star, "ci": list(self.ci), "best_loss": self.best_loss, "flags": self.flags,
                "diverged_above": self.diverged_above}


@dataclass(frozen=True)
class _Fit:
    """A local quadratic fit: vertex, curvature, argmin index, the vertex's standard error per unit of loss
    noise and the residual RMS (both NaN when the window has no residual degrees of freedom), and the
    window's point spacing."""

    x_star: float
    curvature: float
    argmin: int
    sigma_unit: float
    residual: float
    spacing: float


def _quadratic(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float, float, float]:
    """Vertex (inside the span; the best point when there is no minimum), curvature, the vertex's standard
    error per unit noise (delta method on the least-squares coefficients) and the residual RMS."""
    coeffs = np.polyfit(xs, ys, 2)
    a, b, _ = coeffs
    if a <= 0:
        return float(xs[np.argmin(ys)]), float(a), math.nan, math.nan
    vertex = float(np.clip(-b / (2 * a), xs.min(), xs.max()))
    dof = len(xs) - 3
    if dof <= 0:
        return vertex, float(a), math.nan, math.nan
    design = np.vander(xs, 3)
    resid = ys - design @ coeffs
    grad = np.array([b / (2 * a * a), -1 / (2 * a), 0.0])
    sigma_unit = float(np.sqrt(grad @ np.linalg.inv(design.T @ design) @ grad))
    return vertex, float(a), sigma_unit, float(np.sqrt(resid @ resid / dof))


def _point_estimate(curve: pd.DataFrame, halfwidth: float) -> _Fit:
    """Local quadratic regression on a per-x mean curve sorted by x (see the module docstring)."""
    xs, ys = curve["x"].to_numpy(float), curve["loss"].to_numpy(float)
    i = int(np.argmin(ys))
    if len(xs) < 3:
        return _Fit(float(xs[i]), 0.0, i, math.nan, math.nan, float(np.diff(xs).min()) if len(xs) > 1 else 1.0)
    centre, visited = i, set()
    while True:
        window = np.flatnonzero(np.abs(xs - xs[centre]) <= halfwidth + 1e-9)
        if len(window) < 3:
            window = np.argsort(np.abs(xs - xs[centre]), kind="stable")[:3]
            window.sort()
        x_star, a, sigma_unit, residual = _quadratic(xs[window], ys[window])
        nearest = int(np.argmin(np.abs(xs - x_star)))
        visited.add(centre)
        if nearest in visited:
            return _Fit(x_star, a, i, sigma_unit, residual, float(np.diff(xs[window]).min()))
        centre = nearest


def optimum(table: pd.DataFrame, width: int, step: float, th: Thresholds = Thresholds(),
            halfwidth: Optional[float] = None) -> Optional[WidthOptimum]:
    """The optimum at one width from rows of one setup (columns seed, x, loss, status); ``halfwidth`` is the
    fit window's half-width (default: ``step``)."""
    ok = table[(table["status"] == "ok") & np.isfinite(table["loss"])]
    diverged = table[table["status"] == "diverged"]
    if ok.empty:
        return None
    halfwidth = step if halfwidth is None else halfwidth
    curve = ok.groupby("x", as_index=False)["loss"].mean().sort_values("x").reset_index(drop=True)
    fit = _point_estimate(curve, halfwidth)
    x_star, a, i = fit.x_star, fit.curvature, fit.argmin
    grid = sorted(table["x"].unique())
    flags: list[str] = []
    if len(curve) < 3:
        flags.append("few_points")
    div_above = float(diverged["x"].min()) if not diverged.empty else None
    if curve["x"].iloc[i] == grid[0]:
        flags.append("edge_of_grid:low")
    if curve["x"].iloc[i] == grid[-1]:
        flags.append("edge_of_grid:high")
    curvature_loss = a * halfwidth**2
    flat = len(curve) >= 3 and curvature_loss < th.flat_tol
    if flat:
        flags.append("flat")
    seeds = sorted(ok["seed"].unique())
    if flat or len(curve) < 3:
        near = curve[curve["loss"] <= curve["loss"].min() + th.flat_tol]["x"]
        lo, hi = float(near.min()) - step / 2, float(near.max()) + step / 2
    elif len(seeds) >= 3:
        lo, hi = _bootstrap(ok, seeds, th, halfwidth)
    elif math.isfinite(fit.sigma_unit):
        half = Z95 * fit.sigma_unit * max(fit.residual, th.noise_floor) + fit.spacing / 4
        lo, hi = x_star - half, x_star + half
    else:
        at_min = ok[ok["x"] == curve["x"].iloc[i]]["loss"]
        noise = float(at_min.std(ddof=1)) if len(at_min) > 1 else th.noise_floor
        noise = max(noise, th.noise_floor)
        sigma_x = noise / (math.sqrt(2) * 2 * a * step)
        half = Z95 * sigma_x + step / 4
        lo, hi = x_star - half, x_star + half
    if div_above is not None:
        hi = min(hi, div_above)
    lo, hi = min(lo, x_star), max(hi, x_star)
    return WidthOptimum(width=width, x_star=x_star, ci=(lo, hi), best_loss=float(curve["loss"].min()), flags=flags,
                        diverged_above=div_above)


def _bootstrap(ok: pd.DataFrame, seeds: list[int], th: Thresholds, halfwidth: float) -> tuple[float, float]:
    rng = np.random.default_rng(th.seed)
    by_seed = {s: ok[ok["seed"] == s] for s in seeds}
    draws = []
    for _ in range(th.bootstrap):
        pick = rng.choice(seeds, size=len(seeds), replace=True)
        sample = pd.concat([by_seed[s] for s in pick])
        curve = sample.groupby("x", as_index=False)["loss"].mean().sort_values("x").reset_index(drop=True)
        draws.append(_point_estimate(curve, halfwidth).x_star)
    return float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))


def fit_halfwidth(step: float, log2: bool, th: Thresholds = Thresholds()) -> float:
    """Half-width of the local fit window: the grid step, and at least ``fit_octaves`` on a log2 scale."""
    return max(step, th.fit_octaves) if log2 else step


def local_optimum(points: dict[float, float], halfwidth: float) -> tuple[float, float]:
    """(x*, the grid point nearest it) of ``{x: loss}`` by the same local quadratic regression as ``optimum``."""
    curve = pd.DataFrame({"x": list(points), "loss": list(points.values())}).sort_values("x").reset_index(drop=True)
    x_star = _point_estimate(curve, halfwidth).x_star
    xs = curve["x"].to_numpy(float)
    return x_star, float(xs[np.argmin(np.abs(xs - x_star))])
