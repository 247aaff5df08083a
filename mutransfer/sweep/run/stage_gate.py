"""The second stage of a two-stage search: a key searched at each point's measured learning-rate optimum
(``search.at: optimum``), and a constant's re-check, wait until the learning-rate studies at that point are done
(``Wait.LR_OPTIMUM`` in the plan), then train there.

The optimum is the one ``summary.json`` reports for that point (the same analysis of the same trials, every
seed and noise probe), so a resumed sweep, or another worker, finds the same learning rate."""

from __future__ import annotations

import math
from typing import Any, Optional

import optuna
import pandas as pd

from ...analysis.drift import SearchSettings, analyze
from ...words import TrialStatus
from ..store.attrs import TrialAttrs
from ..plan.keys import StudyKey
from ..plan.sweep_plan import SweepPlan, Wait
from ..spec.sweep_spec import Point
from ..store.completion import study_finished
from ..store.studies import live_trials, load_study, seed_of
from ..store.tables import STATE_STATUS

__all__ = ["StageGate", "STAGE_POLL", "point_optimum"]

STAGE_POLL = 2.0
"""Seconds between looks at the learning-rate studies another worker is finishing, for a search at their optimum."""


def _rows(study: optuna.Study, key: StudyKey) -> list[dict[str, Any]]:
    rows = []
    for t in live_trials(study, tuple(STATE_STATUS)):
        if key.search.column not in t.params:
            continue
        attrs = TrialAttrs.of(t)
        rows.append({"point": key.width, "setup": key.setup, "seed": seed_of(t, key), "x": t.params[key.search.column],
                     "loss": math.nan if attrs.val_loss is None else attrs.val_loss,
                     "status": attrs.status or STATE_STATUS[t.state]})
    return rows


def point_optimum(plan: SweepPlan, key: StudyKey, storage: optuna.storages.BaseStorage,
                  prefix: str) -> Optional[float]:
    """log2 η* at ``key``'s point once the learning-rate studies it waits for are done (None before, and None for
    a study that waits for none): the analysis's optimum (a bound when censored at the grid's edge), else the best
    finished point, else NaN (every trial diverged or failed: the config's η)."""
    rows: list[dict[str, Any]] = []
    search = None
    for lr_key in plan.waits_for(key, Wait.LR_OPTIMUM):
        study = load_study(storage, lr_key, prefix)
        if not study_finished(study, lr_key):
            return None
        rows += _rows(study, lr_key)
        search = lr_key.search
    if search is None:
        return None
    table = pd.DataFrame(rows)
    settings = SearchSettings(step=search.step, log2=True, low=search.min, high=search.max)
    entry = analyze(table, settings)[key.setup].points[key.width]
    if entry.x_star is not None:
        return float(entry.x_star)
    finite = table[(table["status"] == TrialStatus.OK) & table["loss"].map(math.isfinite)]
    if len(finite):
        return float(finite.groupby("x")["loss"].mean().idxmin())
    return math.nan


class StageGate:
    """Holds back a study that waits for the learning-rate optimum at its point until the learning-rate studies
    there are done (here or in another worker), then keeps that optimum (log2; NaN when every trial there failed)."""

    def __init__(self, plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str) -> None:
        self.plan, self.storage, self.prefix = plan, storage, prefix
        self.optima: dict[tuple[str, Point], float] = {}

    def optimum(self, key: StudyKey) -> Optional[float]:
        """log2 η* at ``key``'s point once known (kept: finished studies do not change), else None."""
        where = (key.setup, key.point)
        if where not in self.optima:
            log2_lr = point_optimum(self.plan, key, self.storage, self.prefix)
            if log2_lr is None:
                return None
            self.optima[where] = log2_lr
        return self.optima[where]

    def ready(self, key: StudyKey) -> bool:
        """Whether ``key`` may train: it does not wait for the optimum, or the optimum at its point is known."""
        return not self.plan.waits(key, Wait.LR_OPTIMUM) or self.optimum(key) is not None

    def lr(self, key: StudyKey) -> Optional[float]:
        """The learning rate a search at the optimum trains at; None keeps the config's (not searched at the
        optimum, or every learning-rate trial there failed)."""
        if key.search.at != "optimum":
            return None
        log2_lr = self.optima.get((key.setup, key.point))
        return None if log2_lr is None or math.isnan(log2_lr) else 2.0**log2_lr
