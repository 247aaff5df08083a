"""Failing the trials of workers that died, so their points are trained again."""

from __future__ import annotations

from typing import Callable

import optuna
from optuna.trial import TrialState

from .keys import StudyKey
from .storage import heartbeat_of
from .studies import live_trials, reap_abandoned, reap_orphans

__all__ = ["Reaper"]


class Reaper:
    """Fails dead workers' trials in a database storage (a journal file has no heartbeat and nothing to reap)
    and says whether other workers still train."""

    def __init__(self, storage: optuna.storages.BaseStorage) -> None:
        self.watches = heartbeat_of(storage) is not None

    def fail_stale(self, study: optuna.Study) -> None:
        """Fail the trials whose heartbeat went stale, the orphans, and the trials of this machine's dead workers
        (one that died between its claim and its first heartbeat leaves a trial no heartbeat check ever sees)."""
        if self.watches:
            optuna.storages.fail_stale_trials(study)
            reap_orphans(study)
            reap_abandoned(study)

    def others_running(self, keys: list[StudyKey], study_of: Callable[[StudyKey], optuna.Study]) -> bool:
        """With a database storage, whether other workers' trials run: a worker stays while they do, so that if
        one of them dies, its heartbeat goes stale, its trial is failed and re-queued, and the worker trains it."""
        if not self.watches:
            return False
        busy = False
        for key in keys:
            study = study_of(key)
            self.fail_stale(study)
            busy = busy or bool(live_trials(study, (TrialState.RUNNING, TrialState.WAITING)))
        return busy
