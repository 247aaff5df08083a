"""Failing the trials of workers that died, so their points are trained again."""

from __future__ import annotations

from typing import Callable

import optuna
from optuna.trial import TrialState

from .attrs import TrialAttrs
from ..plan.keys import StudyKey
from .storage import heartbeat_of
from .studies import ORPHAN_AFTER, live_trials, reap_abandoned, reap_orphans

__all__ = ["Reaper"]


class Reaper:
    """Fails dead workers' trials and says whether a worker whose own work is done must stay for others'."""

    def __init__(self, storage: optuna.storages.BaseStorage, orphan_after: float = ORPHAN_AFTER) -> None:
        self.watches = heartbeat_of(storage) is not None
        self.orphan_after = orphan_after

    def fail_stale(self, study: optuna.Study) -> None:
        """Fail the trials whose heartbeat went stale (database storages; a journal file has none), the orphans
        (asked but never claimed: a worker killed between the two, or an outage that hid the ask's commit), and
        the trials of this machine's dead workers (one that died between its claim and its first heartbeat
        leaves a trial no heartbeat check ever sees)."""
        if self.watches:
            optuna.storages.fail_stale_trials(study)
        reap_orphans(study, self.orphan_after)
        reap_abandoned(study)

    def others_running(self, keys: list[StudyKey], study_of: Callable[[StudyKey], optuna.Study]) -> bool:
        """Whether the worker stays: with a database storage while other workers' trials run or wait, so that if
        one of them dies, its heartbeat goes stale, its trial is failed and re-queued, and the worker trains it;
        with either storage while an asked trial is unclaimed, until it is failed as an orphan and its point
        trained (a SIGKILL between a worker's ask and its claim leaves one, which no heartbeat or pid reveals)."""
        busy = False
        for key in keys:
            study = study_of(key)
            self.fail_stale(study)
            live = live_trials(study, (TrialState.RUNNING, TrialState.WAITING))
            if self.watches:
                busy = busy or bool(live)
            else:
                busy = busy or any(t.state == TrialState.RUNNING and not TrialAttrs.of(t).claimed for t in live)
        return busy
