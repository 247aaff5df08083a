"""Stopping a setup when its verdict is decided (``stop: true``): at each look (the end of a tier but the last,
``sweep.plan.sweep_plan``) the setup's width fit is judged at the look's group-sequential boundary
(``analysis.sequential``); a setup decided there trains nothing of the later tiers.

Each decision is a function of the trials alone, taken once every study of the tiers up to the look is finished,
so every worker, machine and later command (the status, the summary) finds the same one. Stopping is how a sweep
runs, not what it computes (an execution key, out of the fingerprint): the same sweep run again with
``stop=false`` trains the rest of the design, and its result is then the full design's exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import optuna

from ...analysis.sequential import Look, decided_at
from ...analysis.run_files import spec_settings
from ...analysis.summary import summarize
from ...analysis.thresholds import Thresholds
from ...schema import LR_KEY
from ..store.completion import study_finished
from ..plan.keys import StudyKey
from ..plan.sweep_plan import SweepPlan
from ..store.studies import load_study
from ..store.tables import collect

__all__ = ["Stop", "StopRule"]


@dataclass(frozen=True)
class Stop:
    """A setup stopped at a look: the verdict it was decided with and what it rests on."""

    setup: str
    look: Look
    looks: int
    verdict: str
    widths: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "widths": list(self.widths), "looks": self.looks, **self.look.as_dict()}

    def line(self) -> str:
        return (f"{self.setup} stopped at look {self.look.index + 1} of {self.looks} ({self.verdict} on widths "
                f"{', '.join(map(str, self.widths))}; one-sided level {self.look.level:.2g})")


class StopRule:
    """The looks of a sweep that stops when decided, and the setups stopped so far (none when ``stop`` is off)."""

    def __init__(self, plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str,
                 th: Thresholds = Thresholds()) -> None:
        self.plan, self.storage, self.prefix, self.th = plan, storage, prefix, th
        self.stops: dict[str, Stop] = {}
        self.looked: set[int] = set()

    @property
    def enabled(self) -> bool:
        return bool(self.plan.looks)

    def skipped(self, key: StudyKey) -> bool:
        """Whether ``key``'s study lies past the look that stopped its setup."""
        stop = self.stops.get(key.setup)
        return stop is not None and self.plan.tier_of(key) > stop.look.index

    def look(self, index: int) -> bool:
        """Take look ``index`` (after tier ``index``) once every study up to it is finished; False while one runs.
        A look taken is not taken again."""
        looks = self.plan.looks
        if index in self.looked or not self.enabled or index >= len(looks) - 1:
            return True
        keys = [k for tier in self.plan.tiers[:index + 1] for k in tier.keys if not self.skipped(k)]
        if not all(study_finished(load_study(self.storage, k, self.prefix), k) for k in keys):
            return False
        self.looked.add(index)
        open_setups = [s.label for s in self.plan.spec.setups if s.label not in self.stops]
        trials, _ = collect(self.plan, self.storage, self.prefix,
                            [k for k in keys if k.setup in open_setups and k.search.key == LR_KEY])
        if trials.empty:
            return True
        summary = summarize(trials, spec_settings(self.plan.spec.as_dict()), self.th)
        widths = tuple(w for tier in self.plan.tiers[:index + 1] for w in tier.widths())
        for label, result in summary.setups().items():
            decided = decided_at(result.judged("width"), looks[index], self.th)
            if decided is not None:
                self.stops[label] = Stop(label, looks[index], len(looks), decided, widths)
        return True

    def replay(self) -> dict[str, Stop]:
        """Every look whose tiers are finished, in order: the setups stopped (the status and the summary)."""
        for index in range(len(self.plan.looks) - 1):
            if not self.look(index):
                break
        return dict(self.stops)

    def stop_of(self, setup: str) -> Optional[Stop]:
        return self.stops.get(setup)
