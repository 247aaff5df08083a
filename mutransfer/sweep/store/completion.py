"""Whether a sweep finished: the trials done against those planned, and the setups not started.

A study is finished when nothing of it is queued or running and its policy asks for no more points (a sampler
study: its budget trained). ``SweepStatus`` is what ``summary.json`` records under ``status`` and what
``transfer``, ``verify`` and ``compare`` check before they answer from a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import optuna
from optuna.trial import TrialState

from ...analysis.result import Basis
from ..plan.sweep_plan import SweepPlan
from .studies import StudyKey, finished_points, live_trials, load_study, seed_of

__all__ = ["SweepStatus", "sweep_status", "study_finished"]


@dataclass(frozen=True)
class SweepStatus:
    """How far a sweep got: ``done`` of ``planned`` trials (planned as far as known: a grid that extends itself
    past an edge adds trials), the setups with no finished trial, and the command that resumes it."""

    done: int
    planned: int
    unfinished: tuple[str, ...] = ()
    """Setups with a study not finished."""
    not_started: tuple[str, ...] = ()
    """Setups with no finished trial at all."""
    resume: str = ""
    provisional: Optional[Basis] = None
    """What a provisional answer rests on, when the summary is one (a sweep still training wrote it)."""

    @property
    def complete(self) -> bool:
        return not self.unfinished

    def line(self) -> str:
        """``complete`` or ``incomplete: 13 of 40 trials, setups not started: mup_muon``."""
        if self.complete:
            return "complete"
        started = [s for s in self.unfinished if s not in self.not_started]
        parts = [f"incomplete: {self.done} of {self.planned} trials"]
        if self.not_started:
            parts.append(f"setups not started: {', '.join(self.not_started)}")
        if started:
            parts.append(f"setups unfinished: {', '.join(started)}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        data = {"complete": self.complete, "line": self.line(), "done": self.done, "planned": self.planned,
                "unfinished": list(self.unfinished), "not_started": list(self.not_started), "resume": self.resume}
        return {**data, "provisional": self.provisional.to_json()} if self.provisional is not None else data

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]]) -> Optional["SweepStatus"]:
        """The status a summary recorded; None for a summary written before sweeps recorded one."""
        if not isinstance(data, Mapping) or "done" not in data:
            return None
        return cls(done=int(data["done"]), planned=int(data["planned"]),
                   unfinished=tuple(data.get("unfinished", ())), not_started=tuple(data.get("not_started", ())),
                   resume=str(data.get("resume", "")))


def study_finished(study: optuna.Study, key: StudyKey) -> bool:
    """Nothing queued or running, and the policy asks for no more points (a sampler study: its budget trained)."""
    policy = key.policy()
    trials = live_trials(study, tuple(TrialState))
    if any(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in trials):
        return False
    if not policy.queued:
        return sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials) >= policy.budget()
    finished = finished_points(trials, key)
    pruned = [(t.params[key.search.column], seed_of(t, key), math.nan) for t in trials
              if t.state == TrialState.PRUNED and key.search.column in t.params]
    return not policy.missing_initial_points([*finished, *pruned]) and not policy.next_points(finished)


def sweep_status(plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str, resume: str = "",
                 skipped: Callable[[StudyKey], bool] = lambda key: False) -> SweepStatus:
    """The sweep's status from its storage: each study counts its policy's budget or the trials it holds,
    whichever is more, as the progress display counts them; a study ``skipped`` (its setup stopped when decided,
    ``sweep.run.stopping``) counts the trials it finished and is not waited for."""
    done = planned = 0
    unfinished: dict[str, None] = {}
    started: set[str] = set()
    for key in plan.studies:
        study = load_study(storage, key, prefix)
        trials = live_trials(study, tuple(TrialState))
        finished = len(finished_points(trials, key)) + sum(t.state == TrialState.PRUNED for t in trials)
        held = finished + sum(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in trials)
        done += finished
        planned += finished if skipped(key) else max(held, key.policy().budget())
        if finished:
            started.add(key.setup)
        if not skipped(key) and not study_finished(study, key):
            unfinished[key.setup] = None
    not_started = tuple(s.label for s in plan.spec.setups if s.label not in started)
    return SweepStatus(done=done, planned=max(planned, done), unfinished=tuple(unfinished),
                       not_started=not_started, resume=resume)
