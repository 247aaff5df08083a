"""What would narrow an interval a line along one axis gives, computed from the measured noise: more noise seeds
at each point, one more point further out on the axis, or neither. The one home of that advice: the sweep's notes
under its table and ``transfer``'s warnings print what this module says, so the two commands advise alike.

Two intervals are narrowed (``Goal``). The slope's decides the verdict: its 90 % interval must come inside the
margin, or wholly beyond it, with the slope where it is, so its half-width must fall to the slope's distance from
the margin. The range at a target must come inside ``transfer``'s ``--tolerance``. A candidate design keeps the
measured points: k + m seeds at a point divide its seed error by √((k + m)/k), and an added point gets the
points' median error. The between-point scatter σ_b, the error every point shares and the quantile stay as
measured (more seeds would also add degrees of freedom, so the advice errs towards more). A law over several
axes gets its own advice (``law_advice``): what narrows it depends on where the target lies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..defaults import INTERVAL_LEVEL
from ..schema import axis_named
from .drift import undecided, undecided_reason
from .levels import STORED_LEVEL, VERDICT_LEVEL, slope_interval, upper_p
from .optimum import CONFIDENCE
from .result import AxisFit, Law, PointValue, SetupResult, point_key
from .stats import quantile
from .thresholds import Thresholds

__all__ = ["MAX_EXTRA_SEEDS", "SLOPE_REACH", "Design", "Goal", "Narrowing", "narrowing", "narrowing_advice",
           "verdict_advice", "law_advice", "why_inconclusive"]

MAX_EXTRA_SEEDS = 32
"""The most noise seeds per point the advice considers adding before it says seeds will not do."""
SLOPE_REACH = 3
"""Doublings past the largest swept value at which the advice on a slope still considers adding a point (8×)."""
RESOLUTION_ONLY = "measure seed noise (search.noise_seeds ≥ 1)"
"""The advice where one seed gives a resolution bound: no count of seeds or points is computed from it."""


@dataclass(frozen=True)
class Design:
    """The points a line is fitted through: each value, its seeds' spread (the error of one seed) and count, the
    between-point scatter σ_b and the error every point shares."""

    values: tuple[PointValue, ...]
    spread: tuple[float, ...]
    seeds: tuple[int, ...]
    between: float
    common: float

    @classmethod
    def of(cls, info: AxisFit) -> Optional["Design"]:
        """The design of a fit's measured points with seed noise (None with fewer than two)."""
        used = {p: o for p, o in info.measured().items() if o.seed_vertices}
        if len(used) < 2:
            return None
        seeds = tuple(len(o.seed_vertices) for o in used.values())
        spread = tuple(float(o.se or 0.0) * math.sqrt(k) for o, k in zip(used.values(), seeds))
        common = math.sqrt(sum(o.shape_se**2 for o in used.values()) / len(used))
        return cls(tuple(used), spread, seeds, float(info.between_sd or 0.0), common)

    @property
    def se(self) -> np.ndarray:
        return np.asarray(self.spread) / np.sqrt(np.asarray(self.seeds, dtype=float))

    def with_seeds(self, extra: int) -> "Design":
        return replace(self, seeds=tuple(k + extra for k in self.seeds))

    def with_point(self, value: PointValue) -> "Design":
        return replace(self, values=(*self.values, value), spread=(*self.spread, float(np.median(self.se))),
                       seeds=(*self.seeds, 1))

    def _line(self) -> tuple[np.ndarray, float, float]:
        """The weights 1/(se² + σ_b²), the weighted centre and the weighted sum of squares about it."""
        x = np.log2(np.asarray(self.values, dtype=float))
        w = 1.0 / (self.se**2 + self.between**2)
        centre = float(np.sum(w * x) / np.sum(w))
        return w, centre, float(np.sum(w * (x - centre) ** 2))

    def slope_se(self) -> float:
        return math.sqrt(1.0 / self._line()[2])

    def range_se(self, at: float) -> float:
        """The error of the line at log2 ``at`` as a prediction of the optimum there (``prediction.line_range``)."""
        w, centre, sxx = self._line()
        return math.sqrt(1.0 / float(np.sum(w)) + self.common**2 + (at - centre) ** 2 / sxx + self.between**2)


@dataclass(frozen=True)
class Goal:
    """An interval to narrow: ``q`` standard errors must come to at most ``limit``; ``at``: log2 of the target
    whose range it is (None: the slope's interval)."""

    q: float
    limit: float
    at: Optional[float] = None

    def met(self, design: Design) -> bool:
        return self.q * (design.slope_se() if self.at is None else design.range_se(self.at)) <= self.limit


@dataclass(frozen=True)
class Narrowing:
    """The cheapest change found: ``seeds`` more noise seeds per point, or a point at ``added``; neither: none."""

    seeds: int = 0
    added: Optional[PointValue] = None


def narrowing(design: Design, goal: Goal, top: PointValue) -> Narrowing:
    """The fewest extra seeds per point (up to ``MAX_EXTRA_SEEDS``) that meet ``goal``; else the nearest point,
    doubling from the design's largest up to ``top``, that meets it alone; else neither."""
    for extra in range(1, MAX_EXTRA_SEEDS + 1):
        if goal.met(design.with_seeds(extra)):
            return Narrowing(seeds=extra)
    added = max(design.values)
    while added < top:
        added *= 2
        if goal.met(design.with_point(added)):
            return Narrowing(added=added)
    return Narrowing()


def _seeds(count: int, axis: str) -> str:
    return f"{count} more noise seed{'s' if count > 1 else ''} per {axis} (search.noise_seeds)"


def narrowing_advice(info: AxisFit, width: PointValue, tolerance: float) -> str:
    """What would bring the 95 % range at ``width`` (on the fit's axis) inside ±``tolerance``: how many noise seeds
    per point, or which one added point up to ``width``; or that no sweep can (the between-point scatter alone
    exceeds it) or neither does."""
    axis, plural = info.axis, axis_named(info.axis).plural
    target = point_key(width)
    if info.slope is None:
        return (f"sweep at least two {plural} whose optimum is inside the grid: without a slope the range at another "
                f"{axis} is unknown")
    if info.ci_kind != CONFIDENCE:
        return f"{RESOLUTION_ONLY}: with one seed the range is a resolution bound"
    q = quantile(upper_p(STORED_LEVEL), info.dof)
    between = float(info.between_sd or 0.0)
    if q * between >= tolerance:
        return (f"no sweep can: the optima's scatter about the line (σ_b {between:.2f} octave) alone gives "
                f"±{q * between:.2f} at any {axis}; only a measurement at {axis} {target} narrows it")
    design = Design.of(info)
    if design is None:
        return f"sweep at least two {plural} whose optimum is inside the grid"
    found = narrowing(design, Goal(q, tolerance, math.log2(width)), width)
    if found.seeds:
        return _seeds(found.seeds, axis)
    if found.added is not None:
        return f"sweep {axis} {point_key(found.added)} as well (the slope is then carried over fewer doublings)"
    return (f"neither {MAX_EXTRA_SEEDS} more noise seeds per {axis} nor one more {axis} up to {target} brings it "
            f"inside ±{tolerance:g}; only a measurement at {axis} {target} narrows it")


def verdict_advice(info: AxisFit, th: Thresholds = Thresholds()) -> str:
    """What would decide the verdict of a fit whose slope's 90 % interval is neither inside the margin nor wholly
    beyond it, if the slope holds: how many noise seeds per point, or which added point (up to ``SLOPE_REACH``
    doublings past the largest); or that neither alone would, with the slope that near the margin."""
    axis, plural = info.axis, axis_named(info.axis).plural
    if info.ci_kind != CONFIDENCE:
        return f"{RESOLUTION_ONLY}: with one seed the slope's interval is a resolution bound"
    design = Design.of(info)
    if design is None or info.slope is None:
        return f"sweep at least two {plural} whose optimum is inside the grid"
    distance = abs(abs(info.slope) - th.transfer_slope)
    top = max(design.values) * 2**SLOPE_REACH
    found = narrowing(design, Goal(quantile(upper_p(VERDICT_LEVEL), info.dof), distance), top)
    holds = f"if the slope holds at {info.slope:+.2f}"
    if found.seeds:
        return f"{_seeds(found.seeds, axis)} would decide it, {holds}"
    if found.added is not None:
        return f"sweeping {axis} {point_key(found.added)} as well would decide it, {holds}"
    return (f"neither {MAX_EXTRA_SEEDS} more noise seeds per {axis} nor one more {axis} up to {point_key(top)} "
            f"alone would decide it, the slope {info.slope:+.2f} being {distance:.2f} from the margin "
            f"±{th.transfer_slope:g}: it takes several more {plural}, further apart")


def law_advice(law: Law, tolerance: float) -> str:
    """What would bring a law's 95 % range at its target inside ±``tolerance``."""
    if law.ci_kind != CONFIDENCE:
        return f"{RESOLUTION_ONLY}: with one seed the range is a resolution bound"
    if quantile(upper_p(STORED_LEVEL), law.dof) * float(law.between_sd or 0.0) >= tolerance:
        return (f"no sweep can: the points' scatter about the law (σ_b {law.between_sd:.2f} octave) alone "
                f"exceeds ±{tolerance:g}; only a measurement at the target narrows it")
    return "sweep points nearer the target on the axes it extrapolates, or more noise seeds"


def why_inconclusive(setup: SetupResult, axis: str, level: int = INTERVAL_LEVEL,
                     th: Thresholds = Thresholds()) -> tuple[str, str]:
    """Why a setup is inconclusive on ``axis`` and what would decide it, as the sweep's notes and ``transfer``'s
    warnings print them: where the slope's interval alone leaves it undecided, that interval at ``level`` % and
    ``verdict_advice`` (a law's judgement keeps its own advice); any other reason as the analysis gave it."""
    fit = setup.judged(axis)
    ci90 = fit.slope_ci90
    interval = slope_interval(fit, level)
    if ci90 is None or interval is None or fit.reason != undecided(ci90, th, fit.ci_kind,
                                                                   axis_named(axis).plural)[0]:
        return fit.reason, fit.fix
    reason = undecided_reason(interval, level, ci90, th, fit.ci_kind)
    return reason, fit.fix if setup.primary == "law" else verdict_advice(fit, th)
