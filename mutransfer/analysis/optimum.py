"""The optimum at one width, with an interval. Pure numpy.

Input: the trials of one (setup, width) — searched value x (log2 η for the learning rate), seed, final
validation loss and status (ok / diverged / ...).

Point estimate: every seed's mean loss at each x places a fit window — a local quadratic regression, least
squares through the points within ±h of a centre (h = the grid step, for log2 scales at least ``fit_octaves``),
the centre starting at the argmin and moving to the point nearest the fitted vertex until it stays put. x* is
then the vertex of the two-sided parabola (``analysis.bowl``) through the window's balanced mean, at the bowl's
asymmetry r (measured per width by ``width_asymmetry``, pooled per setup), allowed one spacing past the window.
The best loss is that parabola's value at its vertex (the fitted minimum of the seeds' mean curve); where no
parabola is fitted (a flat curve, fewer than three points, an optimum at the grid's edge) it is the mean curve's
lowest point. Each covering seed's own fitted minimum gives its spread (``seed_best_losses``).

Interval (``ci_kind``):
- ``confidence``: with two or more seeds that cover the fit window (the spec's seeds, or the sweep's noise
  probes), each seed's own window gives its own vertex at r; their spread is the seed-to-seed error of x*, and
  the interval is x* ± √((t₀.₉₇₅(k−1) · sd/√k)² + (1.96 · shape_se)²), shape_se the vertex's error from r's
  (``drift.analyze`` pools the spread over a setup's widths). A seed whose vertex lies past the allowed span is
  censored: it counts in the spread at that bound (the least it is off by; dropping it would leave the seeds
  that happen to agree), and the interval reaches the bound on its side.
- ``resolution``: one seed only. Its residuals cannot show how far the optimum moves between seeds (every
  point shares the init and the batches), so this is a grid-resolution bound, not a confidence interval:
  the delta-method vertex error σ_x = (σ_L / (a·h)) · √(1/8 + 3u²/2) at an assumed noise σ_L
  (``noise_floor``, or the fit's residuals when the window holds more than three points), ±1.96 σ_x (and the
  asymmetry's error) plus a quarter of the local spacing.
An optimum on the edge of the tried grid (the grid seeds' curve, which the grid's extension brackets) is
censored: a one-sided bound, never a point of the drift fit. Diverged trials cap the interval from above.
"""

from __future__ import annotations

import math
from copy import copy
from dataclasses import dataclass, field, fields
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..words import TrialStatus
from .result import PointResult
from .bowl import ASYMMETRY_BOUNDS, SYMMETRIC, Asymmetry, Vertex, asymmetry, vertex
from .stats import Z95, quantile, t_quantile
from .local_fit import LocalFit, fit_halfwidth, fit_window, local_fit, local_optimum, window_of
from .thresholds import Thresholds

__all__ = ["Thresholds", "Optimum", "optimum", "optimum_of_arrays", "fit_halfwidth", "local_optimum",
           "fit_window", "window_of", "grid_seeds", "width_asymmetry", "Z95", "CONFIDENCE", "RESOLUTION", "MIN_SE",
           "confidence_interval"]

CONFIDENCE = "confidence"
RESOLUTION = "resolution"
MIN_SE = 1e-3


@dataclass
class Optimum:
    """The optimum of one searched key at one point of the swept axes (``point``: the caller's label for it)."""

    point: float
    x_star: float
    ci: tuple[float, float]
    best_loss: float
    se: float
    dof: Optional[int]
    ci_kind: str
    flags: list[str] = field(default_factory=list)
    diverged_above: Optional[float] = None
    censored: Optional[str] = None
    seed_vertices: list[float] = field(default_factory=list)
    window: list[float] = field(default_factory=list)
    shape_se: float = 0.0
    """The vertex's error from the bowl's measured asymmetry: common to every seed, so in no seed spread."""
    seed_censored: list[str] = field(default_factory=list)
    """The sides where a seed's vertex lay past the window by more than ``reach``: the interval reaches there."""
    reach: float = 0.0
    vertex_seeds: list[int] = field(default_factory=list)
    """The seed of each of ``seed_vertices`` (seeds share their batches across widths)."""
    seed_best_losses: list[float] = field(default_factory=list)
    """Each covering seed's fitted minimum (its own window's parabola at its vertex): the spread of ``best_loss``."""
    curvature: Optional[float] = None
    """The fitted bowl's a (``analysis.bowl.Vertex``) where x* is its vertex; None where no bowl was fitted."""
    asymmetry: float = 1.0
    """The bowl's r the vertex was fitted at."""
    grid_seeds: list[int] = field(default_factory=list)
    """The seeds that trained the grid (``grid_seeds``): the curve the figures draw and censoring is judged on."""

    @property
    def measured(self) -> bool:
        """A point of the drift fit: not censored at a grid edge."""
        return self.censored is None

    def with_se(self, se: float, dof: int) -> "Optimum":
        """The same optimum with a pooled standard error (confidence intervals only)."""
        lo, hi = confidence_interval(self.x_star, se, dof, self.shape_se)
        if "low" in self.seed_censored:
            lo = min(lo, min(self.window) - self.reach)
        if "high" in self.seed_censored:
            hi = max(hi, max(self.window) + self.reach)
        if self.diverged_above is not None:
            hi = min(hi, max(self.diverged_above, self.x_star))
        return Optimum(**{**self.__dict__, "se": se, "dof": dof, "ci": (lo, hi)})

    def result(self, added: Sequence[float] = ()) -> PointResult:
        """The optimum as ``summary.json`` records it (every field the two share; the estimator's own, such as
        ``reach``, left out); ``added``: the searched values past the spec's range."""
        shared = {f.name for f in fields(PointResult)} & set(self.__dict__)
        return PointResult(**{name: copy(getattr(self, name)) for name in shared}, added=list(added))


def grid_seeds(x: np.ndarray, seed: np.ndarray, halfwidth: float) -> np.ndarray:
    """The seeds that trained the grid: those whose points span more than a fit window (noise probes train
    one window only); every seed when none does (a grid no wider than the window)."""
    seeds = np.unique(seed)
    wide = [s for s in seeds if np.ptp(x[seed == s]) > 2 * halfwidth + 1e-9]
    return np.array(wide if wide else seeds)


def _mean_curve(x: np.ndarray, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xs, inverse = np.unique(x, return_inverse=True)
    return xs, np.bincount(inverse, weights=loss) / np.bincount(inverse)


def _covering(x: np.ndarray, seed: np.ndarray, window_x: np.ndarray) -> list[int]:
    """The seeds that trained every point of the window."""
    keys = np.round(window_x, 9)
    return [s for s in np.unique(seed) if np.isin(keys, np.round(x[seed == s], 9)).all()]


def _resolution_se(fit: LocalFit, xs: np.ndarray, step: float, th: Thresholds) -> float:
    """The vertex error a grid of this spacing allows at the assumed noise (one seed: not a confidence)."""
    if math.isfinite(fit.sigma_unit):
        return fit.sigma_unit * max(fit.residual, th.noise_floor)
    centre = xs[fit.window[len(fit.window) // 2]] if len(fit.window) else fit.x_star
    u = (fit.x_star - centre) / step
    return th.noise_floor / (fit.curvature * step) * math.sqrt(1 / 8 + 1.5 * u * u)


def _balanced_curve(x: np.ndarray, seed: np.ndarray, loss: np.ndarray, window_x: np.ndarray,
                    seeds: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The mean curve over the window of the given seeds (each weighs the same at every point)."""
    inside = np.isin(np.round(x, 9), np.round(window_x, 9)) & np.isin(seed, seeds)
    return _mean_curve(x[inside], loss[inside])


def width_asymmetry(x: np.ndarray, seed: np.ndarray, loss: np.ndarray, ok: np.ndarray, halfwidth: float,
                    th: Thresholds = Thresholds()) -> Optional[Asymmetry]:
    """The bowl's asymmetry at one width: the two-sided parabola through the grid seeds' mean curve within twice
    the fit window's half-width of the point nearest its vertex (``analysis.bowl.asymmetry``, at the loss noise
    the seeds show, at least ``noise_floor``, each side reaching a half-width from the vertex); None where it
    cannot be measured."""
    good = ok & np.isfinite(loss)
    if good.sum() < 5:
        return None
    x, seed, loss = x[good], seed[good], loss[good]
    on_grid = np.isin(seed, grid_seeds(x, seed, halfwidth))
    xs, ys = _mean_curve(x[on_grid], loss[on_grid])
    if len(xs) < 5:
        return None
    centre = xs[np.argmin(np.abs(xs - local_fit(xs, ys, halfwidth).x_star))]
    near = np.abs(xs - centre) <= 2 * halfwidth + 1e-9
    return asymmetry(xs[near], ys[near], max(th.noise_floor, _pure_error(x, loss)), halfwidth)


def _pure_error(x: np.ndarray, loss: np.ndarray) -> float:
    """The loss noise the seeds show where several trained the same point: the pooled sd about each point's
    mean (0 where no point was trained twice)."""
    keys, inverse, counts = np.unique(np.round(x, 9), return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=loss) / counts
    dof = int(np.sum(counts - 1))
    return math.sqrt(float(np.sum((loss - means[inverse]) ** 2)) / dof) if dof > 0 else 0.0


def _shape_se(xs: np.ndarray, ys: np.ndarray, bowl: Asymmetry, reach: float) -> float:
    """The vertex's error from the asymmetry's: half the vertex's change between r·e^(±se of log r)."""
    if bowl.se_log <= 0:
        return 0.0
    lo = vertex(xs, ys, max(bowl.ratio * math.exp(-min(bowl.se_log, 5.0)), ASYMMETRY_BOUNDS[0]), reach).x
    hi = vertex(xs, ys, min(bowl.ratio * math.exp(min(bowl.se_log, 5.0)), ASYMMETRY_BOUNDS[1]), reach).x
    return abs(hi - lo) / 2


@dataclass(frozen=True)
class _Placement:
    """Where the fit window sits on every seed's mean curve (``xs``, ``ys``), the spacing a vertex may reach past
    it, and whether the grid seeds' optimum lies at the grid's edge (``censored``) or the curve is flat."""

    xs: np.ndarray
    ys: np.ndarray
    fit: LocalFit
    window_x: np.ndarray
    reach: float
    censored: Optional[str]
    flat: bool

    @property
    def fitted(self) -> bool:
        """Whether the curve has the three points a parabola needs."""
        return len(self.xs) >= 3

    def flags(self) -> list[str]:
        return (([] if self.fitted else ["few_points"]) + ([f"edge_of_grid:{self.censored}"] if self.censored else [])
                + (["flat"] if self.flat else []))


def _place(x: np.ndarray, loss: np.ndarray, on_grid: np.ndarray, tried: np.ndarray, step: float, halfwidth: float,
           th: Thresholds) -> _Placement:
    xs, ys = _mean_curve(x, loss)
    fit = local_fit(xs, ys, halfwidth)
    window_x = xs[fit.window]
    grid_x, grid_y = _mean_curve(x[on_grid], loss[on_grid])
    censored = {tried[0]: "low", tried[-1]: "high"}.get(float(grid_x[np.argmin(grid_y)]))
    flat = len(xs) >= 3 and fit.curvature * halfwidth**2 < th.flat_tol
    reach = float(np.diff(window_x).min()) if len(window_x) > 1 else step
    return _Placement(xs, ys, fit, window_x, reach, censored, flat)


@dataclass(frozen=True)
class _SeedVertices:
    """Each seed's own vertex where two or more seeds trained the whole window (none otherwise)."""

    seeds: list[int]
    fits: list[Vertex]

    @property
    def vertices(self) -> list[float]:
        return [v.x for v in self.fits]

    @property
    def sides(self) -> list[str]:
        """The sides past which some seed's vertex is censored."""
        return sorted({v.censored for v in self.fits if v.censored})


def _seed_vertices(x: np.ndarray, seed: np.ndarray, loss: np.ndarray, place: _Placement,
                   bowl: Asymmetry) -> _SeedVertices:
    covering = _covering(x, seed, place.window_x) if place.fitted else []
    if len(covering) < 2:
        return _SeedVertices([], [])
    return _SeedVertices([int(s) for s in covering],
                         [vertex(*_balanced_curve(x, seed, loss, place.window_x, [s]), bowl.ratio, place.reach)
                          for s in covering])


@dataclass(frozen=True)
class _Centre:
    """The estimate's vertex on the balanced curve, its error from the asymmetry's, the fitted minimum loss, the
    curvature there (None when not fitted or censored) and the side past which the vertex is censored."""

    x_star: float
    shape_se: float
    best_loss: float
    curvature: Optional[float]
    censored: Optional[str]


def _centre(x: np.ndarray, seed: np.ndarray, loss: np.ndarray, place: _Placement, seeds: _SeedVertices,
            bowl: Asymmetry) -> _Centre:
    """The two-sided parabola's vertex through the covering seeds' balanced curve (every seed's mean curve where
    fewer than two cover the window); the local fit's vertex and the lowest mean where no parabola is fitted."""
    if not place.fitted or place.flat or place.censored is not None:
        return _Centre(place.fit.x_star, 0.0, float(place.ys.min()), None, None)
    curve = (_balanced_curve(x, seed, loss, place.window_x, seeds.seeds) if len(seeds.fits) >= 2
             else (place.window_x, place.ys[place.fit.window]))
    found = vertex(*curve, bowl.ratio, place.reach)
    curvature = found.curvature if found.censored is None and math.isfinite(found.curvature) else None
    x_star = found.x if found.censored is None else float(place.window_x.min() if found.censored == "low" else
                                                          place.window_x.max())
    return _Centre(x_star, _shape_se(*curve, bowl, place.reach), found.level, curvature, found.censored)


@dataclass(frozen=True)
class _Interval:
    kind: str
    dof: Optional[int]
    se: float
    lo: float
    hi: float


def _interval(place: _Placement, vertices: list[float], centre: _Centre, step: float, th: Thresholds) -> _Interval:
    """A flat or short curve: the points within ``flat_tol`` of its lowest, widened by half a step; two or more
    seeds' vertices: their t interval with the asymmetry's error; one seed: the grid's resolution bound."""
    if place.flat or not place.fitted:
        near = place.xs[place.ys <= place.ys.min() + th.flat_tol]
        lo, hi = float(near.min()) - step / 2, float(near.max()) + step / 2
        return _Interval(RESOLUTION, None, (hi - lo) / (2 * Z95), lo, hi)
    if len(vertices) >= 2:
        dof = len(vertices) - 1
        se = max(float(np.std(vertices, ddof=1)) / math.sqrt(len(vertices)), MIN_SE)
        return _Interval(CONFIDENCE, dof, se, *confidence_interval(centre.x_star, se, dof, centre.shape_se))
    se = _resolution_se(place.fit, place.xs, place.reach, th)
    half = math.hypot(Z95 * se, Z95 * centre.shape_se) + place.reach / 4
    return _Interval(RESOLUTION, None, se, centre.x_star - half, centre.x_star + half)


def _bounded(interval: _Interval, place: _Placement, sides: list[str],
             diverged_above: Optional[float]) -> tuple[float, float]:
    """The interval reaching a censored seed's bound on its side, open on a censored edge of the grid, and capped
    by the lowest diverged point."""
    lo, hi = interval.lo, interval.hi
    if "low" in sides:
        lo = min(lo, float(place.window_x.min()) - place.reach)
    if "high" in sides:
        hi = max(hi, float(place.window_x.max()) + place.reach)
    lo, hi = (-math.inf if place.censored == "low" else lo), (math.inf if place.censored == "high" else hi)
    return lo, (min(hi, diverged_above) if diverged_above is not None else hi)


def optimum_of_arrays(point: float, x: np.ndarray, seed: np.ndarray, loss: np.ndarray, ok: np.ndarray,
                      diverged: np.ndarray, step: float, halfwidth: float,
                      th: Thresholds = Thresholds(), grid: Optional[Sequence[int]] = None,
                      bowl: Asymmetry = SYMMETRIC) -> Optional[Optimum]:
    """The optimum at one width from parallel arrays (the fast path the coverage simulations use).

    Every seed's mean loss at each point places the fit window (where the noise probes trained, their losses
    move it, as they move the probes: ``sweep.plan.policy.probe_points``); the grid seeds' curve, which the grid's
    extension brackets, decides censoring at the grid's edge; the seeds that trained the whole window (grid seeds
    and noise probes alike) give the estimate, balanced, and their spread its error. Every vertex is the two-sided
    parabola's at the asymmetry ``bowl`` (the setup's, ``analysis.bowl``), allowed one grid spacing past the
    window; a seed whose vertex lies beyond that is censored: a point of the spread at that bound, and the interval
    reaches to the bound on its side. ``grid`` names the grid seeds when the caller knows them (default:
    ``grid_seeds`` infers them)."""
    good = ok & np.isfinite(loss)
    if not good.any():
        return None
    tried = np.unique(x)
    diverged_above = float(x[diverged].min()) if diverged.any() else None
    x, seed, loss = x[good], seed[good], loss[good]
    on_grid = np.isin(seed, grid_seeds(x, seed, halfwidth) if grid is None else np.asarray(grid))
    if not on_grid.any():
        return None
    place = _place(x, loss, on_grid, tried, step, halfwidth, th)
    seeds = _seed_vertices(x, seed, loss, place, bowl)
    centre = _centre(x, seed, loss, place, seeds, bowl)
    sides = seeds.sides + ([centre.censored] if centre.censored and centre.censored not in seeds.sides else [])
    interval = _interval(place, seeds.vertices, centre, step, th)
    lo, hi = _bounded(interval, place, sides, diverged_above)
    return Optimum(point=point, x_star=centre.x_star, ci=(min(lo, centre.x_star), max(hi, centre.x_star)),
                   best_loss=centre.best_loss, se=interval.se, dof=interval.dof, ci_kind=interval.kind,
                   flags=place.flags() + [f"seed_censored:{side}" for side in sides], diverged_above=diverged_above,
                   censored=place.censored, seed_vertices=[float(v) for v in seeds.vertices],
                   window=[float(v) for v in place.window_x], shape_se=centre.shape_se, seed_censored=sides,
                   reach=place.reach, vertex_seeds=seeds.seeds, seed_best_losses=[v.level for v in seeds.fits],
                   curvature=centre.curvature, asymmetry=bowl.ratio,
                   grid_seeds=sorted(int(s) for s in np.unique(seed[on_grid])))


def confidence_interval(x_star: float, se: float, dof: int, shape_se: float,
                        p: float = 0.975) -> tuple[float, float]:
    """x* ± the seeds' t interval and the asymmetry's normal one, added in quadrature, each from its ``p``
    quantile (0.975: the 95 % interval)."""
    half = math.hypot(t_quantile(p, dof) * se, quantile(p) * shape_se)
    return x_star - half, x_star + half


def optimum(table: pd.DataFrame, point: float, step: float, th: Thresholds = Thresholds(),
            halfwidth: Optional[float] = None) -> Optional[Optimum]:
    """The optimum at one width from rows of one setup (columns seed, x, loss, status); ``halfwidth`` is the
    fit window's half-width (default: ``step``)."""
    status = table["status"].to_numpy()
    return optimum_of_arrays(point, table["x"].to_numpy(float), table["seed"].to_numpy(), table["loss"].to_numpy(float),
                             status == TrialStatus.OK, status == TrialStatus.DIVERGED, step,
                             step if halfwidth is None else halfwidth, th)
