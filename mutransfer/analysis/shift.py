"""Did a change move the optimum? The statistics of two runs' optima side by side. Pure Python/numpy.

Each run's optimum at a width is x with a 95 % interval; as the comparison sees it (``Estimate``), its error is
the seeds' (standard error and degrees of freedom, pooled over the run's widths) plus the bowl's asymmetry
(``shape_se``, common to the run's widths), or for a one-seed resolution bound the bound's half-width read as
1.96 standard errors.

Two runs of one model have the same seed noise unless the change altered it, so both runs' seeds' errors are taken
as the larger of the two (``shared_noise``: a few seeds that happen to agree make one run's error implausibly
small), and the correlation of seeds across widths as the larger of the runs' ``seed_correlation``.

- Per width: the difference d_w = x_B − x_A, Welch's t with Satterthwaite's degrees of freedom, its 95 % interval
  and two-sided p-value (adjusted in the family below). Where a run's interval
  reaches further on one side than its standard error gives (a seed's vertex censored there), that side's error
  is widened to match, and each end of B − A's interval uses the sides that face it. An optimum censored at a
  grid edge gives a bound with an open end and no p-value.
- Pooled (the primary test): D = Σ ω_w d_w over the widths both runs measured, ω ∝ 1/var(d_w). Its variance keeps
  what the widths share: a run's seeds carry a part of their vertex shift to every width (covariance ρ·se_w·se_w'),
  and a run's asymmetry moves every width's vertex alike.
- One family of tests, Holm's weighted step-down at 5 % (``holm``): the pooled shift carries half the error rate
  (``PRIMARY_SHARE``), the widths share the other half; each gets an adjusted p-value.
- Verdict (``shift_verdict``), at the margin ``tolerance`` (octaves):
  ``moved``: the pooled shift's adjusted p is below 0.05 and its 90 % interval is not inside ±tolerance, or some
  width moved — its adjusted p below 0.05 (a bound: its closed end clear of 0) and its 95 % interval not inside
  ±tolerance;
  ``same``: D's 90 % interval lies inside ±tolerance (two one-sided tests at 5 %), every compared width was
  measured with the seeds' noise and none moved;
  ``inconclusive`` otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence

import numpy as np

from .result import PointResult
from .stats import Z95, f_sf, quantile, satterthwaite

__all__ = ["Estimate", "WidthDifference", "Shift", "Verdict", "estimate_of", "shared_noise", "width_difference",
           "pooled_shift", "holm", "shift_verdict", "ALPHA", "PRIMARY_SHARE", "SHIFT_VERDICTS"]

ALPHA = 0.05
"""The family-wise error rate of ``moved`` and each one-sided test of ``same``."""
SHIFT_VERDICTS = ("same", "moved", "inconclusive")
PRIMARY_SHARE = 0.5
"""The pooled shift's share of the error rate in the weighted Holm family; the widths share the rest."""


@dataclass(frozen=True)
class Estimate:
    """One run's optimum at one width, with the parts of its error the comparison needs."""

    x: float
    ci: tuple[float, float]
    se: float
    """The seeds' standard error (``confidence``), or the resolution bound's half-width / 1.96."""
    dof: float
    """The seeds' degrees of freedom; infinite for a resolution bound."""
    shape_se: float
    confidence: bool
    censored: Optional[str] = None
    se_low: Optional[float] = None
    """The seeds' error below x where the interval reaches further than ``se`` gives (a seed's vertex censored
    on that side); None: ``se``."""
    se_high: Optional[float] = None

    def side(self, which: str) -> float:
        """The seeds' error on the ``low`` or ``high`` side."""
        own = self.se_low if which == "low" else self.se_high
        return self.se if own is None else own


def _quantile(p: float, dof: float) -> float:
    """Student's t quantile, the normal's for infinite degrees of freedom."""
    return quantile(p, dof if math.isfinite(dof) else None)


def estimate_of(entry: PointResult) -> Estimate:
    """A point's optimum as an ``Estimate``: each side's seeds' error widened to the interval's reach on that
    side (never narrowed: a cap from diverged trials is not a smaller error)."""
    assert entry.x_star is not None
    x = float(entry.x_star)
    lo, hi = entry.ci if entry.ci is not None else (math.nan, math.nan)
    reach = {"low": x - lo, "high": hi - x}
    confidence = entry.ci_kind == "confidence" and bool(entry.dof) and entry.se is not None
    if not confidence:
        sides = {k: (h / Z95 if math.isfinite(h) else math.inf) for k, h in reach.items()}
        return Estimate(x, (lo, hi), max(sides.values()), math.inf, 0.0, False, entry.censored,
                        sides["low"], sides["high"])
    assert entry.se is not None and entry.dof is not None
    se, dof, shape = float(entry.se), float(entry.dof), float(entry.shape_se or 0.0)
    q = _quantile(0.975, dof)
    sides = {k: math.sqrt(max(h * h - (Z95 * shape) ** 2, 0.0)) / q if math.isfinite(h) else math.inf
             for k, h in reach.items()}
    return Estimate(x, (lo, hi), se, dof, shape, True, entry.censored, max(se, sides["low"]),
                    max(se, sides["high"]))


def shared_noise(a: Estimate, b: Estimate) -> tuple[Estimate, Estimate]:
    """Both runs' seeds' errors raised to the larger of the two, with its degrees of freedom, when both were
    measured (two runs of one model have the same seed noise unless the change altered it, and a few seeds
    that happen to agree make one run's error implausibly small)."""
    if not (a.confidence and b.confidence):
        return a, b
    larger = a if a.se >= b.se else b
    def raised(e: Estimate) -> Estimate:
        return replace(e, se=larger.se, dof=larger.dof, se_low=max(e.side("low"), larger.se),
                       se_high=max(e.side("high"), larger.se))
    return raised(a), raised(b)


def _satterthwaite(parts: Sequence[tuple[float, float]]) -> float:
    """``stats.satterthwaite``, infinite when every part is known (a normal quantile)."""
    dof = satterthwaite(parts)
    return math.inf if dof is None else dof


def _p_value(value: float, variance: float, dof: float) -> float:
    """Two-sided p-value of t = value / √variance on ``dof`` degrees of freedom."""
    if variance <= 0:
        return 0.0 if value != 0 else 1.0
    return f_sf(value * value / variance, 1, dof if math.isfinite(dof) else None)


FACING = {"low": ("low", "high"), "high": ("high", "low")}
"""For each end of B − A's interval, the sides of B's and of A's optimum that face it."""


@dataclass(frozen=True)
class WidthDifference:
    """x_B − x_A at one width: its 95 % interval, how it was formed (``welch`` from both runs' seeds;
    ``combined`` when a one-seed resolution bound is in it; ``bound`` when an optimum is censored and an end is
    open), the variance and degrees of freedom behind each end, and the two-sided p-value (from the end that
    faces 0; NaN for a bound)."""

    width: int
    value: float
    ci: tuple[float, float]
    kind: str
    variance: dict[str, float]
    dof: dict[str, float]
    p: float

    @property
    def mean_variance(self) -> float:
        return (self.variance["low"] + self.variance["high"]) / 2


def _end(a: Estimate, b: Estimate, end: str) -> tuple[float, float]:
    """(variance, dof) behind one end of B − A's interval."""
    side_b, side_a = FACING[end]
    parts = [(b.side(side_b) ** 2, b.dof), (a.side(side_a) ** 2, a.dof), (b.shape_se**2, math.inf),
             (a.shape_se**2, math.inf)]
    return sum(v for v, _ in parts), _satterthwaite(parts)


def width_difference(width: int, a: Estimate, b: Estimate) -> WidthDifference:
    """B − A at one width (see the module docstring)."""
    d = b.x - a.x
    if a.censored or b.censored:
        lo = d - math.hypot(b.x - b.ci[0], a.ci[1] - a.x) if math.isfinite(b.ci[0] + a.ci[1]) else -math.inf
        hi = d + math.hypot(b.ci[1] - b.x, a.x - a.ci[0]) if math.isfinite(b.ci[1] + a.ci[0]) else math.inf
        nan = {"low": math.nan, "high": math.nan}
        return WidthDifference(width, d, (lo, hi), "bound", nan, nan, math.nan)
    ends = {end: _end(a, b, end) for end in FACING}
    lo = d - _quantile(0.975, ends["low"][1]) * math.sqrt(ends["low"][0])
    hi = d + _quantile(0.975, ends["high"][1]) * math.sqrt(ends["high"][0])
    facing = ends["low" if d >= 0 else "high"]
    kind = "welch" if a.confidence and b.confidence else "combined"
    return WidthDifference(width, d, (lo, hi), kind, {k: v for k, (v, _) in ends.items()},
                           {k: n for k, (_, n) in ends.items()}, _p_value(d, *facing))


def holm(p_values: Sequence[float], weights: Optional[Sequence[float]] = None) -> list[float]:
    """Holm's step-down adjusted p-values, weighted (Holm 1979, "A simple sequentially rejective multiple test
    procedure": hypothesis i is tested at α·w_i / Σ the weights still in play; equal weights give the usual
    rule). NaN stays NaN and is not counted."""
    weights = [1.0] * len(p_values) if weights is None else list(weights)
    tested = sorted((p / weights[i], i) for i, p in enumerate(p_values) if not math.isnan(p))
    adjusted = [math.nan] * len(p_values)
    remaining = sum(weights[i] for _, i in tested)
    running = 0.0
    for ratio, i in tested:
        running = max(running, min(1.0, remaining * ratio))
        adjusted[i] = running
        remaining -= weights[i]
    return adjusted


@dataclass(frozen=True)
class Shift:
    """The pooled shift D of the optimum over the widths both runs measured, with its intervals and p-value."""

    value: float
    se: float
    dof: float
    ci: tuple[float, float]
    ci90: tuple[float, float]
    p: float
    widths: list[int]
    weights: list[float]


def _run_variance(weights: np.ndarray, runs: Sequence[Estimate], side: str, rho: float) -> list[tuple[float, float]]:
    """One run's share of Var(D) on one side of its optima, as (variance, dof) parts: the seeds' (correlated ρ
    across widths) and the asymmetry's (common to the widths)."""
    se = np.array([e.side(side) for e in runs])
    correlation = np.full((len(runs), len(runs)), rho if all(e.confidence for e in runs) else 0.0)
    np.fill_diagonal(correlation, 1.0)
    seeds = float((weights * se) @ correlation @ (weights * se))
    shape = float(np.sum(weights * np.array([e.shape_se for e in runs]))) ** 2
    return [(seeds, min(e.dof for e in runs)), (shape, math.inf)]


def pooled_shift(differences: Sequence[WidthDifference], a: Sequence[Estimate], b: Sequence[Estimate],
                 rho_a: float = 0.0, rho_b: float = 0.0) -> Optional[Shift]:
    """D over the widths with a p-value (not a ``bound``), each run's estimates in the same order; None when no
    width was measured by both runs."""
    use = [i for i, d in enumerate(differences) if d.kind != "bound"]
    if not use:
        return None
    inverse = np.array([1.0 / max(differences[i].mean_variance, 1e-12) for i in use])
    weights = inverse / inverse.sum()
    value = float(np.sum(weights * np.array([differences[i].value for i in use])))
    ends = {}
    for end, (side_b, side_a) in FACING.items():
        parts = (_run_variance(weights, [b[i] for i in use], side_b, rho_b)
                 + _run_variance(weights, [a[i] for i in use], side_a, rho_a))
        ends[end] = (sum(v for v, _ in parts), _satterthwaite(parts))
    (v_lo, n_lo), (v_hi, n_hi) = ends["low"], ends["high"]

    def interval(p: float) -> tuple[float, float]:
        return value - _quantile(p, n_lo) * math.sqrt(v_lo), value + _quantile(p, n_hi) * math.sqrt(v_hi)

    p = _p_value(value, *ends["low" if value >= 0 else "high"])
    return Shift(value, math.sqrt((v_lo + v_hi) / 2), min(n_lo, n_hi), interval(0.975), interval(0.95), p,
                 [differences[i].width for i in use], [float(w) for w in weights])


@dataclass(frozen=True)
class Verdict:
    """A setup's verdict, the widths that moved, why it is inconclusive, and the Holm-adjusted p-values (the
    pooled shift's and each width's, NaN for a bound) of the one family they form."""

    verdict: str
    moved: list[int]
    reason: str
    shift_p_holm: float
    p_holm: list[float]


def shift_verdict(shift: Optional[Shift], differences: Sequence[WidthDifference], confidence: bool,
                  tolerance: float) -> Verdict:
    """The rule in the module docstring; ``confidence``: every compared optimum has the seeds' noise measured."""
    adjusted = holm([shift.p if shift else math.nan] + [d.p for d in differences],
                    [PRIMARY_SHARE] + [(1 - PRIMARY_SHARE) / max(len(differences), 1)] * len(differences))
    shift_p, width_p = adjusted[0], adjusted[1:]
    moved = [d.width for d, p in zip(differences, width_p)
             if ((d.kind != "bound" and p < ALPHA) or (d.kind == "bound" and (d.ci[0] > 0 or d.ci[1] < 0)))
             and not (-tolerance <= d.ci[0] and d.ci[1] <= tolerance)]
    if shift is None:
        return Verdict("moved" if moved else "inconclusive", moved,
                       "" if moved else "no width's optimum was measured by both runs (an optimum at a grid edge)",
                       shift_p, width_p)
    inside = -tolerance <= shift.ci90[0] and shift.ci90[1] <= tolerance
    if moved or (shift_p < ALPHA and not inside):
        return Verdict("moved", moved, "", shift_p, width_p)
    bounds = [d.width for d in differences if d.kind == "bound"]
    if inside and confidence and not bounds:
        return Verdict("same", moved, "", shift_p, width_p)
    if not inside:
        why = (f"the shift {shift.value:+.2f} is not clear of 0 (Holm-adjusted p {shift_p:.2f}) and its 90 % "
               f"interval [{shift.ci90[0]:+.2f}, {shift.ci90[1]:+.2f}] is not inside ±{tolerance:g}: more noise "
               f"seeds (search.noise_seeds) or a finer grid narrow it")
    elif bounds:
        why = f"the optimum is at a grid edge at width {', '.join(map(str, bounds))}"
    else:
        why = "one seed: the intervals are resolution bounds, not the seeds' noise (add search.noise_seeds)"
    return Verdict("inconclusive", moved, why, shift_p, width_p)
