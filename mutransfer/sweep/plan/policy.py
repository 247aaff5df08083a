"""Which point of a study to train next: one object per policy, as Optuna's ``GridSampler`` owns its grid.

A point is (x, seed). ``grid`` queues every grid point once; then, on log2 scales, while the study's best
point sits on an edge of what was tried, one more point a step past that edge (``search.extend``, up to
``extend_max``) until the optimum is bracketed or the new point diverges; then the noise probes: the fit window of the current
optimum re-trained with each of ``noise_seeds`` extra seeds (primary seed's study only), repeated until every
window point has every seed (the window placed on every seed's mean loss, so it follows what the probes show). Anchors (``search.anchors``) are queued once for every seed; in a search with
anchors no point off the grid's lattice plays a part in placing the optimum. ``refine`` fills the fit window at quarter steps before the probes.
``tpe`` and ``gp`` let Optuna's sampler propose points up to the budget. The worker loop only claims, trains and tells.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import optuna

from ...analysis.optimum import fit_halfwidth, local_optimum, window_of
from ...errors import UserError
from ..spec.search import OFF_X, SearchSpec

__all__ = ["SearchPolicy", "GridPolicy", "RefinePolicy", "SamplerPolicy", "policy_for", "refine_points",
           "extension_point", "probe_points", "Planned", "Finished"]

Planned = tuple[float, int]
"""(x, seed): a searched value and the seed that trains it."""
Finished = Sequence[tuple[float, int, float]]
"""(x, seed, loss) of finished trials; the loss is inf for a diverged one, NaN for a failed one (a missing point:
the grid's extension, the probes and the optimum pass over it, and it is not trained again)."""


def extension_point(own: dict[float, float], step: float, low: float, high: float) -> list[float]:
    """One point a step past the tried range when the best finished point sits on its edge, inside
    [``low``, ``high``] (the grid plus the allowed extension); nothing once the optimum is bracketed."""
    finite = {x: loss for x, loss in own.items() if math.isfinite(loss)}
    if not finite:
        return []
    best, tried = min(finite, key=lambda x: finite[x]), sorted(own)
    if best == tried[0] and tried[0] - step >= low - 1e-9:
        return [round(tried[0] - step, 10)]
    if best == tried[-1] and tried[-1] + step <= high + 1e-9:
        return [round(tried[-1] + step, 10)]
    return []


def probe_points(finished: Finished, halfwidth: float, seeds: Sequence[int]) -> list[Planned]:
    """Every point of the fit window — placed by every seed's mean loss at each point, as the analysis places it
    — for every probe seed. Where the probes' losses move the window (the grid seed's lowest point was noise on
    a flat bowl), the probes follow it; the window only ever lands on points the grid tried, so this ends."""
    ok = [(x, loss) for x, s, loss in finished if math.isfinite(loss)]
    if not ok or not seeds:
        return []
    xs = np.array(sorted({x for x, _ in ok}))
    ys = np.array([np.mean([loss for x2, loss in ok if x2 == x]) for x in xs])
    if len(xs) < 3:
        return []
    return [(float(x), seed) for x in window_of(xs, ys, halfwidth) for seed in seeds]


def refine_points(done: dict[float, float], step: float, low: float, high: float, halfwidth: float) -> list[float]:
    """The refine policy's next points: every quarter step strictly inside ±``halfwidth`` of the finished
    point nearest the local-fit optimum of the finished points (``analysis.optimum.local_optimum``), inside
    the range. Repeated until nothing is missing, this fills the fit window at a quarter-step grid's
    resolution (its edges, one octave out on a 1-octave grid, are coarse points already)."""
    if not done:
        return []
    _, centre = local_optimum(done, halfwidth)
    quarter = step / 4
    n = round(halfwidth / quarter) - 1
    points = [round(centre + k * quarter, 10) for k in range(-n, n + 1)]
    return [x for x in points if low - 1e-9 <= x <= high + 1e-9]


class SearchPolicy:
    """What to train for one study: its sampler and pruner, its budget and the points to queue."""

    queued = True
    """Points come from the study's queue (enqueued); otherwise the sampler proposes them."""

    def __init__(self, search: SearchSpec, seed: int, probe_seeds: Sequence[int] = ()) -> None:
        self.search, self.seed, self.probe_seeds = search, seed, tuple(probe_seeds)

    @property
    def halfwidth(self) -> float:
        return fit_halfwidth(self.search.step, self.search.scale == "log2")

    @property
    def extends(self) -> bool:
        """Grids on a log2 scale grow past an edge (any LR is a valid value); linear ones keep their range."""
        return self.search.extend and self.search.scale == "log2"

    @property
    def reach(self) -> tuple[float, float]:
        """The range the grid may grow to: the spec's range plus the allowed extension."""
        extra = self.search.extend_max if self.extends else 0.0
        return self.search.min - extra, self.search.max + extra

    @property
    def bounds(self) -> tuple[float, float]:
        """The widest range a point may take: the grid's reach, and the anchors."""
        low, high = self.reach
        return min([low, *self.search.anchors]), max([high, *self.search.anchors])

    def sampler(self) -> optuna.samplers.BaseSampler:
        """The sampler for asks that find the queue empty (their trial is discarded)."""
        return optuna.samplers.RandomSampler(seed=self.seed)

    def pruner(self) -> optuna.pruners.BasePruner:
        if self.search.pruner == "median":
            return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0)
        if self.search.pruner == "halving":
            return optuna.pruners.SuccessiveHalvingPruner()
        return optuna.pruners.NopPruner()

    def budget(self) -> int:
        """Trials the study holds when it is done (grid extensions, which depend on the results, not counted)."""
        return self.search.budget()

    def initial_points(self) -> list[Planned]:
        """Points to queue before any trial has finished."""
        return []

    def next_points(self, finished: Finished, coarse: bool = False) -> list[Planned]:
        """Points to queue once the queue is empty, given the finished trials; ``coarse``: only the bracket's
        (the grid's extension past an edge), not the refinements or the noise probes (``sweep.plan.sweep_plan``)."""
        return []

    def missing_initial_points(self, finished: Finished) -> list[Planned]:
        """The first points (``initial_points``) that no trial of ``finished`` trained."""
        done = {(round(x, 9), seed) for x, seed, _ in finished}
        return [(x, seed) for x, seed in self.initial_points() if (round(x, 9), seed) not in done]


class GridPolicy(SearchPolicy):
    def budget(self) -> int:
        window = 2 * round(self.halfwidth / self.search.step) + 1
        grid = {round(x, 9) for x in self.search.grid()}
        on_grid = sum(round(x, 9) in grid for x in self.search.anchors)
        anchors = len(self.search.anchors) * (1 + len(self.probe_seeds)) - on_grid
        return len(self.search.grid()) + window * len(self.probe_seeds) + anchors

    def initial_points(self) -> list[Planned]:
        anchors = [(x, seed) for x in self.search.anchors for seed in (self.seed, *self.probe_seeds)]
        return [(x, self.seed) for x in self.search.grid()] + anchors

    def next_points(self, finished: Finished, coarse: bool = False) -> list[Planned]:
        done = {(round(x, 9), seed) for x, seed, _ in finished}
        if self.search.anchors:
            finished = [f for f in finished if self.search.on_grid(f[0]) and f[0] != OFF_X]
        own = {x: loss for x, seed, loss in finished if seed == self.seed and not math.isnan(loss)}
        if self.extends:
            extension = [(x, self.seed) for x in extension_point(own, self.search.step, *self.reach)
                         if (round(x, 9), self.seed) not in done]
            if extension:
                return extension
        if coarse:
            return []
        return [p for p in self._more(own) or probe_points(finished, self.halfwidth, self.probe_seeds)
                if (round(p[0], 9), p[1]) not in done]

    def _more(self, own: dict[float, float]) -> list[Planned]:
        """Points this policy adds to its own seed's curve before the probes."""
        return []


class RefinePolicy(GridPolicy):
    def budget(self) -> int:
        n = round(self.halfwidth / (self.search.step / 4)) - 1
        return len(self.search.grid()) + 2 * (n - n // 4) + (2 * n + 1) * len(self.probe_seeds)

    def _more(self, own: dict[float, float]) -> list[Planned]:
        done = {x: loss for x, loss in own.items() if math.isfinite(loss)}
        points = refine_points(done, self.search.step, *self.reach, self.halfwidth)
        return [(x, self.seed) for x in points if x not in own]


class SamplerPolicy(SearchPolicy):
    queued = False

    @property
    def extends(self) -> bool:
        """The sampler searches the spec's range as given."""
        return False

    def sampler(self) -> optuna.samplers.BaseSampler:
        if self.search.sampler == "tpe":
            return optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=min(5, self.search.budget()))
        try:
            import scipy  # noqa: F401
        except ModuleNotFoundError:
            raise UserError("search.sampler=gp needs scipy", "pip install 'mutransfer[gp]'") from None
        return optuna.samplers.GPSampler(seed=self.seed)


def policy_for(search: SearchSpec, seed: int, probe_seeds: Sequence[int] = ()) -> SearchPolicy:
    """The policy object of a searched key's sampler name (noise probes only for queued policies)."""
    kind = {"grid": GridPolicy, "refine": RefinePolicy, "tpe": SamplerPolicy, "gp": SamplerPolicy}[search.sampler]
    return kind(search, seed, probe_seeds if kind is not SamplerPolicy else ())
