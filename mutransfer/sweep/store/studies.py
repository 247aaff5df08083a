"""Optuna bookkeeping for a sweep: study names, the queue of points, who owns a point, abandoned trials.

One study per (setup, searched key, point, seed) (``plan``), named ``<prefix>.<setup>.<key>.w<width>.s<seed>`` (with
``.d<depth>`` and ``.t<steps>`` before the seed when the spec sweeps depths or horizons), so every machine
pointing at one storage with the same prefix shares the same studies. Grid points are enqueued (tagged
``grid``); the lowest-numbered live trial of a point is its owner, so a point that two workers or two machines
enqueued is still trained once.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Iterable

import optuna
from optuna.trial import FrozenTrial, TrialState

from ...words import TrialStatus
from .attrs import TrialAttrs
from ..plan.keys import StudyKey
from .liveness import is_alive

__all__ = ["StudyKey", "seed_of", "load_study", "enqueue_missing", "reap_abandoned",
           "reap_orphans", "owner_of", "is_bookkeeping", "live_trials", "prefixed_studies", "LIVE", "RECORD_ATTR",
           "RERUN", "finished_points", "trial_loss", "trained_fine"]

RECORD_ATTR = "mutransfer_record"
LIVE = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
RERUN = (TrialStatus.INTERRUPTED, TrialStatus.ABANDONED)
"""Statuses of failed trials whose points are trained again (the others count as finished, at infinite loss)."""
ORPHAN_AFTER = 60.0
"""Seconds after which a RUNNING trial that no worker claimed is failed as an orphan (``reap_orphans``). A claim
follows its ask within milliseconds; a worker whose claim an outage held up past this finds the trial failed and
counts it a lost race (``Claimer.claim``), so its point is still trained once."""


def seed_of(trial: FrozenTrial | optuna.Trial, key: StudyKey) -> int:
    """The seed a trial trains with: the one queued with it (a noise probe's), else the study's."""
    seed = TrialAttrs.of(trial).seed
    return key.seed if seed is None else seed


def load_study(storage: optuna.storages.BaseStorage, key: StudyKey, prefix: str) -> optuna.Study:
    """The key's study, created on first use. An existing study is loaded without a write: ``create_study``
    with ``load_if_exists`` appends a create record to a journal file on every call (the progress display
    polls every study twice a second, which grew a sweep's journal by thousands of records a minute)."""
    policy = key.policy()
    try:
        return optuna.load_study(study_name=key.name(prefix), storage=storage, sampler=policy.sampler(),
                                 pruner=policy.pruner())
    except KeyError:
        return optuna.create_study(study_name=key.name(prefix), storage=storage, load_if_exists=True,
                                   direction="minimize", sampler=policy.sampler(), pruner=policy.pruner())


def is_bookkeeping(trial: FrozenTrial) -> bool:
    """A trial that only records a lost race (a duplicate claim, an ask that found the queue empty)."""
    return TrialAttrs.of(trial).bookkeeping


def live_trials(study: optuna.Study, states: tuple[TrialState, ...] = LIVE) -> list[FrozenTrial]:
    """The study's trials in ``states`` that are real trials, not bookkeeping."""
    return [t for t in study.get_trials(deepcopy=False, states=states) if not is_bookkeeping(t)]


def trial_loss(trial: FrozenTrial) -> float:
    """A finished trial's loss for the policies: its value when it trained fine; infinite when it diverged; NaN
    when it failed (a missing point: neither a loss nor a bound, and not trained again)."""
    if trial.state == TrialState.FAIL:
        return math.nan
    return float(trial.value) if trained_fine(trial) and math.isfinite(trial.value) else math.inf


def trained_fine(trial: FrozenTrial) -> bool:
    """A trial that trained to the end without diverging: complete, status ``ok``, with its loss."""
    return (trial.state == TrialState.COMPLETE and TrialAttrs.of(trial).status == TrialStatus.OK
            and trial.value is not None)


def finished_points(trials: Iterable[FrozenTrial], key: StudyKey) -> list[tuple[float, int, float]]:
    """(x, seed, loss) of the trials that count as finished: complete, or failed with a status whose point is
    not trained again (``RERUN``; its loss NaN, ``trial_loss``)."""
    return [(t.params[key.search.column], seed_of(t, key), trial_loss(t)) for t in trials
            if key.search.column in t.params and (t.state == TrialState.COMPLETE or t.state == TrialState.FAIL
                                                  and TrialAttrs.of(t).status not in RERUN)]


def reap_abandoned(study: optuna.Study) -> int:
    """Mark RUNNING trials of dead local workers FAIL (status 'abandoned') so their points run again."""
    reaped = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if TrialAttrs.of(trial).claimed and not is_alive(trial.user_attrs):
            reaped += _fail(study, trial, status=TrialStatus.ABANDONED)
    return reaped


def reap_orphans(study: optuna.Study, older_than: float = ORPHAN_AFTER) -> int:
    """Mark FAIL the RUNNING trials no worker ever claimed (no ``pid``) for ``older_than`` seconds: a trial whose
    creation committed while its worker lost the connection, so the worker never learnt its number. A claim
    follows an ask within milliseconds, so only such orphans are old and unclaimed."""
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=older_than)
    reaped = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not TrialAttrs.of(trial).claimed and trial.datetime_start is not None and trial.datetime_start < cutoff:
            reaped += _fail(study, trial, spurious=True)
    return reaped


def _fail(study: optuna.Study, trial: FrozenTrial, **values: Any) -> int:
    """Fail a running trial with the attributes ``values`` set; 1, or 0 when another worker finished or reaped it
    first."""
    try:
        for name, value in TrialAttrs.checked(**values).items():
            study._storage.set_trial_user_attr(trial._trial_id, name, value)
        study._storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)
    except optuna.exceptions.UpdateFinishedTrialError:
        return 0
    return 1


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, abs_tol=1e-9)


def _points(trials: Iterable[FrozenTrial], key: StudyKey) -> list[tuple[Any, int]]:
    column = key.search.column
    return [(t.params.get(column, t.system_attrs.get("fixed_params", {}).get(column)), seed_of(t, key))
            for t in trials]


def enqueue_missing(study: optuna.Study, key: StudyKey, points: Iterable[tuple[float, int]]) -> int:
    """Enqueue every (x, seed) point that has no live trial (first run, resume, a re-run of failed points)."""
    have = _points(live_trials(study), key)
    added = 0
    for x, seed in points:
        if not any(_same(x, h) and seed == s for h, s in have):
            study.enqueue_trial({key.search.column: x}, user_attrs=TrialAttrs.queued(seed))
            added += 1
    return added


def owner_of(study: optuna.Study, number: int, key: StudyKey, x: float, seed: int) -> int:
    """The number of the trial that owns point (x, seed): the lowest-numbered live, non-bookkeeping trial."""
    live = live_trials(study)
    owners = [t.number for t, (point, s) in zip(live, _points(live, key)) if _same(point, x) and s == seed]
    return min(owners, default=number)


def prefixed_studies(storage: optuna.storages.BaseStorage, prefix: str) -> list[str]:
    return sorted(name for name in optuna.get_all_study_names(storage) if name.startswith(f"{prefix}."))


