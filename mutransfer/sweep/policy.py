"""Which point of a study to train next: one object per policy, as Optuna's ``GridSampler`` owns its grid.

``grid`` queues every grid point once; ``refine`` queues the grid, then quarter-step points in the local
fit's window around the optimum until nothing is missing; ``tpe`` and ``gp`` let Optuna's sampler propose
points up to the budget. The worker loop only claims, trains and tells.
"""

from __future__ import annotations

from typing import Mapping

import optuna

from ..analysis.optimum import fit_halfwidth, local_optimum
from ..errors import UserError
from .spec import SearchSpec

__all__ = ["SearchPolicy", "GridPolicy", "RefinePolicy", "SamplerPolicy", "policy_for", "refine_points"]


class SearchPolicy:
    """What to train for one study: its sampler and pruner, its budget and the points to queue."""

    queued = True
    """Points come from the study's queue (enqueued); otherwise the sampler proposes them."""

    def __init__(self, search: SearchSpec, seed: int) -> None:
        self.search, self.seed = search, seed

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
        """Trials the study holds when it is done."""
        return self.search.budget()

    def initial_points(self) -> list[float]:
        """Points to queue before any trial has finished."""
        return []

    def next_points(self, done: Mapping[float, float]) -> list[float]:
        """Points to queue once the queue is empty, given the finished points ``{x: loss}``."""
        return []


class GridPolicy(SearchPolicy):
    def initial_points(self) -> list[float]:
        return self.search.grid()


class RefinePolicy(GridPolicy):
    @property
    def halfwidth(self) -> float:
        return fit_halfwidth(self.search.step, self.search.scale == "log2")

    def budget(self) -> int:
        n = round(self.halfwidth / (self.search.step / 4)) - 1
        return len(self.search.grid()) + 2 * (n - n // 4)

    def next_points(self, done: Mapping[float, float]) -> list[float]:
        return refine_points(done, self.search.step, self.search.min, self.search.max, self.halfwidth)


class SamplerPolicy(SearchPolicy):
    queued = False

    def sampler(self) -> optuna.samplers.BaseSampler:
        if self.search.sampler == "tpe":
            return optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=min(5, self.search.budget()))
        try:
            import scipy  # noqa: F401
        except ModuleNotFoundError:
            raise UserError("search.sampler=gp needs scipy", "pip install 'mutransfer[gp]'") from None
        return optuna.samplers.GPSampler(seed=self.seed)


def policy_for(search: SearchSpec, seed: int) -> SearchPolicy:
    """The policy object of a searched key's sampler name."""
    kind = {"grid": GridPolicy, "refine": RefinePolicy, "tpe": SamplerPolicy, "gp": SamplerPolicy}[search.sampler]
    return kind(search, seed)


def refine_points(done: Mapping[float, float], step: float, low: float, high: float, halfwidth: float) -> list[float]:
    """The refine policy's next points: every quarter step strictly inside ±``halfwidth`` of the finished
    point nearest the local-fit optimum of the finished points (``analysis.optimum.local_optimum``), inside
    the range. Repeated until nothing is missing, this fills the fit window at a quarter-step grid's
    resolution (its edges, one octave out on a 1-octave grid, are coarse points already)."""
    if not done:
        return []
    _, centre = local_optimum(dict(done), halfwidth)
    quarter = step / 4
    n = round(halfwidth / quarter) - 1
    points = [round(centre + k * quarter, 10) for k in range(-n, n + 1)]
    return [x for x in points if low - 1e-9 <= x <= high + 1e-9]
