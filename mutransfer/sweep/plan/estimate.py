"""What a sweep will cost before it runs: the trials each study will hold (grid, noise probes, anchors and the
grid extension a result may add) times the seconds a trial costs, with a range.

Before any trial has finished (``SweepEstimate``), a trial's seconds are measured on this machine now
(``train.timing``):
- trials: the policy's budget, plus the extension. An optimum equally likely at any of a grid's n points sits on
  an edge with probability 2/n, and then adds ``EXTENSION_GIVEN_EDGE`` points on average;
- seconds per trial: build + steps × the median step + evaluations × one evaluation (``TrialCost``), divided
  among the trials stacked together, plus ``TRIAL_OVERHEAD_S`` of storage bookkeeping;
- a sweep: ``SWEEP_OVERHEAD_S`` (start, composing every config, the tables, summary and figures) plus the trials'
  seconds divided among the workers;
- the range: low = no extension at the step time's lower quartile; high = one extension point per extending
  study at the upper quartile.

Once trials have finished (``MeasuredEstimate``: a resumed sweep, ``verify`` after its sweep), a trial's seconds
are those its setup's finished trials recorded (``sweep.plan.measured_cost``: the median at a measured width, the
fitted law elsewhere) plus ``TRIAL_OVERHEAD_S``; the trials left are the budget and extension less those done;
the range is the extension's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Sequence

if TYPE_CHECKING:  # train.timing imports torch, sweep.plan.policy optuna: an estimate from finished trials needs neither
    from ...train.timing import TrialCost
    from .finished import FinishedTrials, SetupCost
    from .keys import StudyKey
    from .policy import SearchPolicy

__all__ = ["EXTENSION_GIVEN_EDGE", "TRIAL_OVERHEAD_S", "SWEEP_OVERHEAD_S", "PointEstimate", "SweepEstimate",
           "MeasuredPoint", "MeasuredEstimate", "extension_trials"]

EXTENSION_GIVEN_EDGE = 1.5
"""Extension points a study adds once its best grid point sits on an edge: one brackets an optimum on the edge,
two or more one that lies past it (an assumption, not a measurement)."""
TRIAL_OVERHEAD_S = 0.11
"""Seconds per trial outside its model (ask, claim, tell, the curve's user attributes in a journal file; composing
its config), measured from two smoke sweeps of 2-step trials that differ only in their trial count
(docs/performance.md)."""
SWEEP_OVERHEAD_S = 4.0
"""Seconds per sweep outside its trials: the interpreter's start, composing every trial config, reading the
corpus, the tables, summary and three figures; measured with ``TRIAL_OVERHEAD_S``."""

Case = Literal["low", "median", "high"]


def extension_trials(policy: SearchPolicy) -> tuple[float, int]:
    """(expected, high case) extension trials of one study under the uniform-optimum assumption above."""
    search = policy.search
    if not policy.extends:
        return 0.0, 0
    points = len(search.grid())
    most = int(search.extend_max / search.step + 1e-9)
    if most == 0 or points < 2:
        return 0.0, 0
    return min(1.0, 2 / points) * min(EXTENSION_GIVEN_EDGE, most), 1


@dataclass(frozen=True)
class PointEstimate:
    """One (setup, point) of a sweep: its studies' trials and what one costs."""

    key: StudyKey
    studies: int
    trials: int
    """The policies' budgets: grid, noise probes, anchors."""
    extension: float
    extension_high: int
    batch: int
    steps: int
    evals: int
    cost: TrialCost

    def trial_count(self, case: Case) -> float:
        return self.trials + {"low": 0.0, "median": self.extension, "high": float(self.extension_high)}[case]

    def seconds_per_trial(self, case: Case = "median") -> float:
        return self.cost.seconds(self.steps, self.evals, case) / self.batch + TRIAL_OVERHEAD_S

    def seconds(self, case: Case) -> float:
        return self.trial_count(case) * self.seconds_per_trial(case)

    @classmethod
    def of(cls, keys: list[StudyKey], batch: int, steps: int, eval_every: int, cost: TrialCost) -> "PointEstimate":
        """The estimate of the studies in ``keys`` (one point: its seeds and searched keys)."""
        from ...train.timing import evaluations

        policies = [k.policy() for k in keys]
        extension = [extension_trials(p) for p in policies]
        return cls(key=keys[0], studies=len(keys), trials=sum(p.budget() for p in policies),
                   extension=sum(e for e, _ in extension), extension_high=sum(h for _, h in extension), batch=batch,
                   steps=steps, evals=evaluations(steps, eval_every), cost=cost)


@dataclass(frozen=True)
class SweepEstimate:
    points: tuple[PointEstimate, ...]
    workers: int

    def trials(self, case: Case = "median") -> float:
        return sum(p.trial_count(case) for p in self.points)

    def wall_seconds(self, case: Case = "median") -> float:
        return SWEEP_OVERHEAD_S + sum(p.seconds(case) for p in self.points) / self.workers


@dataclass(frozen=True)
class MeasuredPoint:
    """One (setup, width) of a sweep priced by its finished trials: the studies' trials, those done, and the
    seconds one more costs (``horizon``: the target's steps over the swept ones, when they differ)."""

    setup: str
    width: int
    studies: int
    trials: int
    extension: float
    extension_high: int
    done: int
    cost: SetupCost
    horizon: float = 1.0

    def trial_count(self, case: Case = "median") -> float:
        return self.trials + {"low": 0.0, "median": self.extension, "high": float(self.extension_high)}[case]

    def left(self, case: Case = "median") -> float:
        return max(0.0, self.trial_count(case) - self.done)

    def seconds_per_trial(self) -> float:
        return self.cost.seconds(self.width) * self.horizon + TRIAL_OVERHEAD_S

    @classmethod
    def of(cls, keys: Sequence[StudyKey], finished: FinishedTrials, cost: SetupCost, horizon: float = 1.0,
           label: str = "") -> "MeasuredPoint":
        """The studies in ``keys`` (one setup at one width); ``label``: the setup whose trials in ``finished``
        count as done (none when empty: a verify's studies are not in the sweep's table)."""
        policies = [k.policy() for k in keys]
        extension = [extension_trials(p) for p in policies]
        return cls(setup=keys[0].setup, width=keys[0].width, studies=len(keys),
                   trials=sum(p.budget() for p in policies), extension=sum(e for e, _ in extension),
                   extension_high=sum(h for _, h in extension),
                   done=finished.done(label, keys[0].width) if label else 0, cost=cost, horizon=horizon)


@dataclass(frozen=True)
class MeasuredEstimate:
    """The trials a sweep has left and their wall time, each priced by its setup's finished trials."""

    points: tuple[MeasuredPoint, ...]
    workers: int

    def trials(self, case: Case = "median") -> float:
        return sum(p.trial_count(case) for p in self.points)

    def done(self) -> int:
        return sum(p.done for p in self.points)

    def left(self, case: Case = "median") -> float:
        return sum(p.left(case) for p in self.points)

    def wall_seconds(self, case: Case = "median") -> float:
        return SWEEP_OVERHEAD_S + sum(p.left(case) * p.seconds_per_trial() for p in self.points) / self.workers

    def bases(self) -> list[str]:
        """One line per setup: the finished trials its seconds come from."""
        return list(dict.fromkeys(p.cost.basis() for p in self.points))
