"""What each study of a plan waits for, whether it trains at all, and what its trials are held at: the plan's
edges (``sweep.plan.sweep_plan``) read against the storage. One object, so a worker, the runner and the summary ask the same
questions the same way."""

from __future__ import annotations

import optuna

from ...analysis.thresholds import Thresholds
from .constant_gate import ConstantGate
from ..plan.keys import StudyKey
from ..plan.sweep_plan import SweepPlan
from .stage_gate import StageGate
from .stopping import StopRule
from ..plan.trial import Held

__all__ = ["Gates"]


class Gates:
    """The learning-rate optimum a study waits for (``optimum``), the constants' rounds (``constants``) and the
    looks that stop a setup (``stops``)."""

    def __init__(self, plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str,
                 th: Thresholds = Thresholds()) -> None:
        self.plan = plan
        self.optimum = StageGate(plan, storage, prefix)
        self.constants = ConstantGate(plan, storage, prefix, self.optimum, th)
        self.stops = StopRule(plan, storage, prefix, th)

    def skipped(self, key: StudyKey) -> bool:
        """A study not trained: its setup stopped when decided, or a re-check of a constant that does not matter."""
        return self.stops.skipped(key) or self.constants.skipped(key)

    def ready(self, key: StudyKey) -> bool:
        """Whether ``key`` may train now: what it waits for is done."""
        return self.constants.ready(key) and self.optimum.ready(key)

    def held(self, key: StudyKey) -> Held:
        """What ``key``'s trials train at besides their searched value (call once ``ready``)."""
        constants = self.plan.spec.constants
        shipped = (self.constants.shipped[key.setup][key.search.key]
                   if constants is not None and key.search.key in constants.keys else None)
        return Held(self.optimum.lr(key), tuple(self.constants.overrides(key)), shipped)
