"""A search at the learning-rate optimum (``search.at: optimum``) waits for that optimum."""

from __future__ import annotations

import math
from typing import Any, Optional

import optuna

from .keys import StudyKey
from .spec import SweepSpec
from .stages import point_optimum

__all__ = ["StageGate", "STAGE_POLL"]

STAGE_POLL = 2.0
"""Seconds between looks at the learning-rate studies another worker is finishing, for a search at their optimum."""


class StageGate:
    """Holds back a study searched at the learning-rate optimum until the learning-rate studies at its point are
    done (here or in another worker), then gives the learning rate its trials train at."""

    def __init__(self, spec: SweepSpec, storage: optuna.storages.BaseStorage, prefix: str) -> None:
        self.spec, self.storage, self.prefix = spec, storage, prefix
        self.lrs: dict[tuple[str, Any], Optional[float]] = {}

    def ready(self, key: StudyKey) -> bool:
        """Whether ``key`` may train: it is not searched at the optimum, or the optimum at its point is known."""
        if key.search.at != "optimum":
            return True
        where = (key.setup, key.point)
        if where not in self.lrs:
            log2_lr = point_optimum(self.spec, key, self.storage, self.prefix)
            if log2_lr is None:
                return False
            self.lrs[where] = None if math.isnan(log2_lr) else 2.0**log2_lr
        return True

    def lr(self, key: StudyKey) -> Optional[float]:
        """The learning rate ``key``'s trials train at; None keeps the config's (not searched at the optimum, or
        every learning-rate trial there failed)."""
        return self.lrs.get((key.setup, key.point))
