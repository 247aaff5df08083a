"""A loss surface over the learning rate and a few per-role constants, for checking the constant search by its
recovery of a known truth: the real-curve bowl in log2 η (``simulate.Truth``) plus, per constant, a bowl in its
log2 factor about an optimum that may sit off factor 1, move with the width, or be absent (a constant the loss
ignores); a constant may also move the LR's optimum (``coupling``). The search itself is the coordinate rounds
of 1-D bowls (the LR, each constant at the current best, the LR again), each run by the real grid policy (grid,
extension, noise probes, factor 1 as an anchor every seed trains) and placed by the real analysis."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..analysis.constant_effect import DEFAULT_EFFECT_MARGIN, constant_effect
from ..analysis.drift import drift, pool
from ..analysis.optimum import Optimum, fit_halfwidth, optimum_of_arrays
from ..analysis.result import AxisFit, ConstantEffect
from ..analysis.thresholds import Thresholds
from ..schema import LR_KEY
from ..sweep.plan.policy import GridPolicy
from ..sweep.spec.search import SearchSpec
from ..table.constants import coordinate_stages
from .simulate import Truth

__all__ = ["ConstantTruth", "ConstantSurface", "StageResult", "SearchOutcome", "search_constants", "measure_stage", "recheck_constant", "SurfacePoint"]


@dataclass(frozen=True)
class ConstantTruth:
    """One constant's part of the surface: its optimum (log2 factor at the base width), how it moves per width
    doubling, its bowl's curvature (0: the loss ignores it), the seeds' shift of its optimum, and how far the LR's
    optimum moves per octave of its factor."""

    optimum: float = 0.0
    slope: float = 0.0
    curvature: float = 0.05
    seed_shift: float = 0.1
    coupling: float = 0.0


@dataclass(frozen=True)
class ConstantSurface:
    lr: Truth
    constants: dict[str, ConstantTruth] = field(default_factory=dict)
    base_width: int = 64

    def optimum(self, key: str, width: int) -> float:
        c = self.constants[key]
        return c.optimum + c.slope * math.log2(width / self.base_width)


class SurfacePoint:
    """One width of a surface: each seed's draws, drawn on first use, and the loss of a configuration."""

    def __init__(self, surface: ConstantSurface, width: int, rng: np.random.Generator) -> None:
        self.surface, self.width, self.rng = surface, width, rng
        self.seeds: dict[int, dict[str, float]] = {}

    def _seed(self, seed: int) -> dict[str, float]:
        if seed not in self.seeds:
            t = self.surface.lr
            draws = {LR_KEY: self.rng.normal(0.0, t.seed_shift)}
            draws.update({k: self.rng.normal(0.0, c.seed_shift) for k, c in self.surface.constants.items()})
            self.seeds[seed] = draws
        return self.seeds[seed]

    def loss(self, values: dict[str, float], seed: int) -> float:
        """The loss at log2 η and log2 factors ``values`` (a constant left out: factor 1) for ``seed``."""
        s, t, draws = self.surface, self.surface.lr, self._seed(seed)
        coupled = sum(c.coupling * values.get(k, 0.0) for k, c in s.constants.items())
        x_star = t.optimum(self.width, s.base_width) + coupled + draws[LR_KEY]
        d = values[LR_KEY] - x_star
        loss = 2.0 + t.curvature * d * d * (t.asymmetry if d > 0 else 1.0)
        for key, c in s.constants.items():
            f = values.get(key, 0.0) - s.optimum(key, self.width) - draws[key]
            loss += c.curvature * f * f
        return loss + self.rng.normal(0.0, t.noise * (1.0 + t.noise_growth * max(d, 0.0)))


@dataclass(frozen=True)
class StageResult:
    """One 1-D stage: the key searched, the values the others held, the optimum, and for a constant its effect."""

    key: str
    fixed: dict[str, float]
    optimum: Optional[Optimum]
    effect: Optional[ConstantEffect] = None
    trials: int = 0

    @property
    def best(self) -> Optional[float]:
        """The stage's optimum (a bound at an edge counts), None when nothing trained fine."""
        return None if self.optimum is None else float(self.optimum.x_star)


@dataclass(frozen=True)
class SearchOutcome:
    stages: list[StageResult]
    best: dict[str, float]

    def last(self, key: str) -> StageResult:
        return next(s for s in reversed(self.stages) if s.key == key)

    @property
    def trials(self) -> int:
        return sum(s.trials for s in self.stages)


def measure_stage(point: SurfacePoint, key: str, search: SearchSpec, fixed: dict[str, float], noise_seeds: int,
                  th: Thresholds = Thresholds(), margin: float = DEFAULT_EFFECT_MARGIN) -> StageResult:
    """One 1-D stage at ``point``: the grid policy's points of ``key`` with the other keys at ``fixed``; its
    optimum, and for a constant (factor 1 an anchor) the effect."""
    if key != LR_KEY and 0.0 not in search.anchors:
        search = SearchSpec(key=key, min=search.min, max=search.max, step=search.step, extend=search.extend,
                            extend_max=search.extend_max, noise_seeds=noise_seeds, anchors=(0.0,))
    policy = GridPolicy(search, 0, tuple(range(1, 1 + noise_seeds)))
    trained: list[tuple[float, int, float]] = []
    for x, seed in policy.initial_points():
        trained.append((x, seed, point.loss({**fixed, key: x}, seed)))
    while True:
        done = {(round(x, 9), s) for x, s, _ in trained}
        new = [p for p in policy.next_points(trained) if (round(p[0], 9), p[1]) not in done]
        if not new:
            break
        trained += [(x, seed, point.loss({**fixed, key: x}, seed)) for x, seed in new]
    x, seed, loss = (np.array(column, dtype=float) for column in zip(*trained))
    ok = np.isfinite(loss)
    halfwidth = fit_halfwidth(search.step, True, th)
    opt = optimum_of_arrays(point.width, x, seed.astype(int), loss, ok, ~ok, search.step, halfwidth, th)
    effect = None
    if key != LR_KEY and opt is not None:
        at_one = np.array([loss[(x == 0.0) & (seed == s)].mean() for s in np.unique(seed)])
        effect = constant_effect(opt.best_loss, opt.seed_best_losses, at_one, margin)
    return StageResult(key, dict(fixed), opt, effect, len(trained))


def search_constants(point: SurfacePoint, keys: Sequence[str], lr_search: SearchSpec, factor_search: SearchSpec,
                     rounds: int, noise_seeds: int = 1, start: Optional[dict[str, float]] = None,
                     th: Thresholds = Thresholds()) -> SearchOutcome:
    """The coordinate rounds at ``point``: each stage searches its key with the others at the best so far (the
    constants from factor 1, the LR from ``start``'s or the middle of its grid)."""
    best = {LR_KEY: (lr_search.min + lr_search.max) / 2, **{k: 0.0 for k in keys}, **(start or {})}
    stages = []
    for key in coordinate_stages(keys, rounds):
        search = lr_search if key == LR_KEY else factor_search
        stage = measure_stage(point, key, search, {k: v for k, v in best.items() if k != key}, noise_seeds, th)
        if stage.best is not None:
            best[key] = stage.best
        stages.append(stage)
    return SearchOutcome(stages, best)


def recheck_constant(surface: ConstantSurface, key: str, widths: Sequence[int], tuned: dict[str, float],
                     lr_search: SearchSpec, factor_search: SearchSpec, noise_seeds: int, rng: np.random.Generator,
                     th: Thresholds = Thresholds()) -> AxisFit:
    """A tuned constant re-measured across ``widths``: at each, the LR's stage with the tuned constants, then the
    constant's stage at that LR's optimum; the slope of its optimum over log2 width and the verdict."""
    optima = []
    for width in widths:
        point = SurfacePoint(surface, width, rng)
        lr = measure_stage(point, LR_KEY, lr_search, dict(tuned), noise_seeds, th)
        fixed = {**tuned, LR_KEY: lr.best if lr.best is not None else tuned.get(LR_KEY, 0.0)}
        fixed.pop(key, None)
        stage = measure_stage(point, key, factor_search, fixed, noise_seeds, th)
        if stage.optimum is not None:
            optima.append(stage.optimum)
    return drift(pool(optima), th)
