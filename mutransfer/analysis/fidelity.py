"""How far a prediction missed at a width nobody swept: the optimum measured there, the error of the predicted
log2 η* in octaves, and the loss regret of training at the predicted η* instead. Pure numpy.

Input: the trials of one (setup, width) — x = log2 η, seed, validation loss, status — from a grid around the
prediction p (one seed, the *grid seed*), the noise probes' re-trained fit window, and p itself trained with
every seed. The optimum is measured by ``analysis.optimum`` from the grid and the probes: points off the grid's
lattice (p, or an earlier verify's prediction) are left out, so a prediction cannot pull the measurement
towards itself and every verify of a width measures the same optimum from the same grid.

- error = x* − p, and its interval is the measured optimum's interval shifted by p: the prediction is the
  number ``transfer`` wrote, a constant here; its own range is reported beside it.
- regret = L(p) − L(x*), per seed s that trained p: L_s(p) as trained, L_s(x*) from the parabola through that
  seed's three grid points nearest x* (the grid is the lattice of multiples of the step; points off it, such as
  an earlier prediction, are left out, since two points close together make the parabola unstable). The mean over seeds is the regret; the spread of the paired
  differences (seed-to-seed offsets in the loss cancel) gives a Student-t interval. It can be negative within
  noise. In % it is relative to L_s(x*). At a censored optimum L(x*) is the best trained point: a lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..words import TrialStatus
from .bowl import UNMEASURED, Asymmetry, pooled_asymmetry
from .optimum import Optimum, fit_halfwidth, optimum_of_arrays, width_asymmetry
from .thresholds import Thresholds
from .stats import t_quantile

__all__ = ["Regret", "Fidelity", "measure_fidelity", "on_lattice"]


@dataclass(frozen=True)
class Regret:
    nats: float
    nats_ci: Optional[tuple[float, float]]
    percent: float
    percent_ci: Optional[tuple[float, float]]
    seeds: int
    loss_at_prediction: float
    loss_at_optimum: float
    bound: bool
    """The optimum is censored at the grid's edge: the regret is at least this much."""

    def as_dict(self) -> dict[str, Any]:
        return {"nats": self.nats, "nats_ci": list(self.nats_ci) if self.nats_ci else None, "percent": self.percent,
                "percent_ci": list(self.percent_ci) if self.percent_ci else None, "seeds": self.seeds,
                "loss_at_prediction": self.loss_at_prediction, "loss_at_optimum": self.loss_at_optimum,
                "bound": self.bound}


@dataclass(frozen=True)
class Fidelity:
    predicted: float
    measured: Optional[Optimum]
    error: float
    error_ci: Optional[tuple[float, float]]
    regret: Optional[Regret]
    note: str
    """Why a number is missing or only a bound ('' when everything was measured)."""

    def within(self, tolerance: float) -> bool:
        """|error| ≤ tolerance octaves, the optimum measured inside the grid."""
        return self.measured is not None and self.measured.censored is None and abs(self.error) <= tolerance

    def as_dict(self) -> dict[str, Any]:
        return {"predicted_log2_lr": self.predicted,
                "measured": self.measured.result().to_json() if self.measured else None,
                "error": self.error, "error_ci": list(self.error_ci) if self.error_ci else None,
                "regret": self.regret.as_dict() if self.regret else None, "note": self.note}


def on_lattice(x: np.ndarray, step: float) -> np.ndarray:
    """Which values lie on the lattice of multiples of ``step`` (a verify grid, its extensions included)."""
    return np.abs(x / step - np.round(x / step)) < 1e-6


def _mean_interval(values: np.ndarray) -> tuple[float, Optional[tuple[float, float]]]:
    mean = float(values.mean())
    if len(values) < 2:
        return mean, None
    half = t_quantile(0.975, len(values) - 1) * float(values.std(ddof=1)) / math.sqrt(len(values))
    return mean, (mean - half, mean + half)


def _loss_at(x: np.ndarray, loss: np.ndarray, at: float) -> float:
    """One seed's loss at ``at``: the parabola through its three grid points nearest ``at`` (a local
    interpolation one step apart, so the curve's shape across the whole fit window cannot bias it)."""
    xs, inverse = np.unique(np.round(x, 9), return_inverse=True)
    if len(xs) < 3:
        return math.nan
    ys = np.bincount(inverse, weights=loss) / np.bincount(inverse)
    nearest = np.argsort(np.abs(xs - at), kind="stable")[:3]
    return float(np.polyval(np.polyfit(xs[nearest], ys[nearest], 2), at))


def _regret(measured: Optimum, p: float, x: np.ndarray, seed: np.ndarray, loss: np.ndarray,
            good: np.ndarray, lattice: np.ndarray) -> Optional[Regret]:
    """Paired per-seed regret (module docstring); None when no seed trained both p and the fit window."""
    at_p = good & np.isclose(x, p, atol=1e-9)
    pairs = []
    for s in np.unique(seed[at_p]):
        mine = good & (seed == s)
        if measured.censored:
            best = float(loss[mine].min())
        else:
            best = _loss_at(x[mine & lattice], loss[mine & lattice], measured.x_star)
        if math.isfinite(best):
            pairs.append((float(loss[at_p & (seed == s)].mean()), best))
    if not pairs:
        return None
    table = np.array(pairs)
    nats, nats_ci = _mean_interval(table[:, 0] - table[:, 1])
    percent, percent_ci = _mean_interval(100 * (table[:, 0] - table[:, 1]) / table[:, 1])
    return Regret(nats, nats_ci, percent, percent_ci, len(pairs), float(table[:, 0].mean()),
                  float(table[:, 1].mean()), measured.censored is not None)


def measure_fidelity(width: int, x: np.ndarray, seed: np.ndarray, loss: np.ndarray, status: np.ndarray, p: float,
                     grid_seed: int, step: float, th: Thresholds = Thresholds(),
                     swept: Asymmetry = UNMEASURED) -> Fidelity:
    """The optimum at the target, the prediction's error and its regret (module docstring); the grid is the
    lattice of multiples of ``step``. The vertex is fitted at the bowl's asymmetry measured at the target, or,
    where its grid cannot measure it (an optimum near the grid's edge), at the sweep's (``swept``)."""
    ok, diverged = status == TrialStatus.OK, status == TrialStatus.DIVERGED
    good = ok & np.isfinite(loss)
    keep = on_lattice(x, step)
    halfwidth = fit_halfwidth(step, True, th)
    own = width_asymmetry(x[keep], seed[keep], loss[keep], ok[keep], halfwidth, th)
    bowl = swept if own is None else pooled_asymmetry([own])
    measured = optimum_of_arrays(width, x[keep], seed[keep], loss[keep], ok[keep], diverged[keep], step,
                                 halfwidth, th, grid=[grid_seed], bowl=bowl)
    if measured is None:
        return Fidelity(p, None, math.nan, None, None, "no trial at the target width trained without diverging")
    error = measured.x_star - p
    error_ci = (measured.ci[0] - p, measured.ci[1] - p)
    regret = _regret(measured, p, x, seed, loss, good, keep)
    notes = []
    if measured.censored:
        notes.append(f"the optimum is at the {measured.censored} edge of the grid even after extending it: the error "
                     "is a bound; widen --span")
    if regret is None:
        at_p = np.isclose(x, p, atol=1e-9)
        trained = diverged[at_p].any()
        notes.append("the predicted η* diverged at this width" if trained else
                     "no seed trained both the predicted η* and the fit window: no regret")
    elif regret.nats_ci is None:
        notes.append("one seed: the regret has no interval (search.noise_seeds ≥ 1 in the sweep gives one)")
    return Fidelity(p, measured, error, error_ci, regret, "; ".join(notes))
