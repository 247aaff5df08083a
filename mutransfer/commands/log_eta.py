"""The ETA line of a plain log (a sweep's output sent to a file: nohup, Slurm), at most once every
``ETA_EVERY_S``: the trials left, spread over the widths as the plan still holds them, each priced by the finished
trials' seconds (``sweep.plan.measured_cost``: the median at a measured width, the fitted law elsewhere) plus its
bookkeeping, and divided among the workers. Trials running now count as not started."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

from ..sweep.plan.estimate import TRIAL_OVERHEAD_S
from ..sweep.plan.finished import TIMED_STATUS
from ..sweep.plan.measured_cost import MeasuredCost, TrialSeconds, duration_text, measured_cost

if TYPE_CHECKING:
    from ..sweep.run.runner import FinishedTrial, Snapshot
    from ..sweep.plan.sweep_plan import SweepPlan

__all__ = ["ETA_EVERY_S", "LogEta", "planned_widths", "eta_seconds", "eta_line"]

ETA_EVERY_S = 60.0
"""The least seconds between two ETA lines, and before the first."""
WIDTH = re.compile(r"\bwidth (\d+)")


def planned_widths(plan: SweepPlan) -> dict[int, int]:
    """The trials the plan's policies budget at each width (grid extensions, which depend on results, not
    counted: the snapshot's total includes them once queued)."""
    budget: Counter[int] = Counter()
    for key in plan.studies:
        budget[key.width] += key.policy().budget()
    return dict(budget)


def _width(trial: FinishedTrial) -> Optional[int]:
    found = WIDTH.search(trial.point)
    return int(found.group(1)) if found else None


def _cost(finished: Sequence[FinishedTrial]) -> Optional[MeasuredCost]:
    samples = [TrialSeconds(width, float(t.seconds)) for t in finished
               if t.status == TIMED_STATUS and t.seconds is not None and (width := _width(t)) is not None]
    return measured_cost(samples)


def eta_seconds(finished: Sequence[FinishedTrial], total: int, plan: Mapping[int, int], workers: int,
                cost: Optional[MeasuredCost] = None) -> Optional[float]:
    """Seconds until the ``total - len(finished)`` trials left are done; None when none is left or no finished
    trial recorded its time. The trials left are spread over the widths in proportion to what the plan still
    holds at each (at the widest measured width when it holds none)."""
    cost = cost if cost is not None else _cost(finished)
    left = total - len(finished)
    if cost is None or left <= 0:
        return None
    done = Counter(_width(t) for t in finished)
    still = {width: planned - done[width] for width, planned in plan.items() if planned > done[width]}
    if not still:
        still = {cost.medians[-1][0]: 1}
    per_trial = sum(n * (cost.seconds(width) + TRIAL_OVERHEAD_S) for width, n in still.items()) / sum(still.values())
    return left * per_trial / max(1, workers)


def eta_line(finished: Sequence[FinishedTrial], total: int, plan: Mapping[int, int], workers: int) -> Optional[str]:
    """``eta: about 12 min for the 16 trials left (1 worker(s); from the seconds of 24 finished trials)``."""
    cost = _cost(finished)
    seconds = eta_seconds(finished, total, plan, workers, cost)
    if seconds is None or cost is None:
        return None
    return (f"eta: about {duration_text(seconds)} for the {total - len(finished)} trials left ({workers} worker(s); "
            f"from the seconds of {cost.trials} finished trials)")


@dataclass
class LogEta:
    """When a plain log says its ETA: ``line`` gives it at most once every ``every`` seconds of ``clock``."""

    plan: Mapping[int, int]
    workers: int = 1
    clock: Callable[[], float] = time.monotonic
    every: float = ETA_EVERY_S
    said_at: float = field(init=False)

    def __post_init__(self) -> None:
        self.said_at = self.clock()

    def line(self, snap: Snapshot) -> Optional[str]:
        now = self.clock()
        if now - self.said_at < self.every:
            return None
        text = eta_line(snap.finished, snap.total, self.plan, self.workers)
        if text is not None:
            self.said_at = now
        return text
