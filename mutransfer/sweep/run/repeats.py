"""The same failure repeated (``trainer.max_failures``): the sweep's last finished trials, in the order they
finished across every worker and machine (the storage's completion times), all failed with the same line."""

from __future__ import annotations

import datetime
from typing import Optional

import optuna
from optuna.trial import FrozenTrial, TrialState

from ...errors import UserError
from ...words import TrialStatus
from ..store.attrs import TrialAttrs
from ..plan.sweep_plan import SweepPlan
from ..store.studies import RERUN, is_bookkeeping

__all__ = ["RepeatedFailure", "FailureWatch", "failure_line", "EXIT_REPEATED"]

EXIT_REPEATED = 3
"""A worker process's exit code when it saw the failures repeat (its parent then stops the other workers)."""
ENDED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


class RepeatedFailure(UserError):
    """The sweep stopped: its last ``count`` finished trials all failed with ``line``. A ``UserError`` so that a
    command that does not handle it (verify) answers in one line; ``sweep`` writes its tables and exits 1."""

    def __init__(self, line: str, count: int) -> None:
        self.line, self.count = line, count
        super().__init__(f"stopped: the last {count} trials failed the same way: {line}",
                         "fix the trainer (each trial's stderr.log is under trials/ in the run directory) and run "
                         "the command again (sweep --retry-failed trains the failed trials again)")


def failure_line(trial: FrozenTrial) -> Optional[str]:
    """A failed trial's failure in one line (``TrialAttrs.failure``, else its message); None for a trial that
    did not fail."""
    attrs = TrialAttrs.of(trial)
    if trial.state != TrialState.FAIL or attrs.status != TrialStatus.FAILED:
        return None
    return attrs.failure or attrs.message


def _outcome(trial: FrozenTrial) -> bool:
    """A trial that ended with a result or a failure of its own: not bookkeeping, not interrupted or abandoned
    (their points run again)."""
    if trial.datetime_complete is None or is_bookkeeping(trial):
        return False
    return trial.state != TrialState.FAIL or TrialAttrs.of(trial).status not in RERUN


class FailureWatch:
    """Says whether the sweep's last ``limit`` outcomes are one failure repeated; a spec without a trainer command
    is never stopped (its limit is 0)."""

    def __init__(self, plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str) -> None:
        self.storage = storage
        trainer = plan.spec.trainer
        self.limit = trainer.max_failures if trainer is not None else 0
        self.names = plan.names(prefix)

    def outcomes(self) -> list[FrozenTrial]:
        """Every trial of the sweep that ended with a result or a failure of its own, in the order they ended."""
        ended: list[FrozenTrial] = []
        for name in self.names:
            try:
                study_id = self.storage.get_study_id_from_name(name)
            except KeyError:
                continue
            ended += [t for t in self.storage.get_all_trials(study_id, deepcopy=False, states=ENDED) if _outcome(t)]
        return sorted(ended, key=lambda t: (t.datetime_complete or datetime.datetime.min, t.number))

    def repeated(self) -> Optional[RepeatedFailure]:
        """The failure the last ``limit`` outcomes all are, or None."""
        last = self.outcomes()[-self.limit:] if self.limit else []
        lines = {failure_line(t) for t in last}
        if len(last) < self.limit or not last or len(lines) != 1 or None in lines:
            return None
        return RepeatedFailure(str(lines.pop()), self.limit)

    def latest(self) -> Optional[RepeatedFailure]:
        """The last failure as a stop, whatever ended after it (a worker stopped the sweep on it, and another
        worker's trial may have finished since); None when no trial failed."""
        failures = [line for line in map(failure_line, self.outcomes()) if line is not None]
        return RepeatedFailure(failures[-1], self.limit) if failures else None

    def check(self) -> None:
        """Raise the repeated failure, if any."""
        found = self.repeated()
        if found is not None:
            raise found
