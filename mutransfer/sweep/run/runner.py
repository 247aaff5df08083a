"""A sweep's processes: prepare the studies, run local workers (in this process when there is one), keep
a progress snapshot, and stop cleanly on Ctrl-C or when the same failure repeats (``repeats``). Running the same
command again resumes: finished trials are kept, trials of dead local workers are re-run, live workers' trials are
left alone, failed trials are trained again only when asked (``SweepOptions.retry_failed``)."""

from __future__ import annotations

import datetime
import math
import multiprocessing
import os
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from ...analysis.drift import PointTrials, best_losses
from ...dist.launch import die_with_parent
from ...errors import EXIT_USAGE, UserError
from ...registry.plugins import load_plugins
from ...words import TrialStatus
from ..store.attrs import TrialAttrs
from .gates import Gates
from ..interrupts import Interrupts
from ..plan.sweep_plan import SweepPlan
from .provisional import Provisional, ProvisionalAnswer
from .repeats import EXIT_REPEATED, FailureWatch, RepeatedFailure
from ..spec.search import SearchSpec
from ..spec.sweep_spec import SweepSpec
from .stopping import Stop
from ..store.storage import open_storage
from ..store.studies import (RECORD_ATTR, RERUN, StudyKey, enqueue_missing, live_trials, load_study, reap_abandoned,
                      seed_of, trained_fine)
from .worker import SweepOptions, run_worker

__all__ = ["Snapshot", "FinishedTrial", "prepare", "failed_points", "snapshot", "is_finished", "run_sweep"]


@dataclass(frozen=True)
class FinishedTrial:
    """A finished trial as the progress log names it."""

    study: str
    number: int
    setup: str
    point: str
    """``width 64`` or ``width 64, depth 8, steps 300``."""
    seed: int
    column: str
    """The searched column (``log2_lr``), ``x`` its value."""
    x: float
    lr: Optional[float]
    loss: Optional[float]
    status: str
    seconds: Optional[float]


@dataclass
class Snapshot:
    total: int = 0
    """Trials the sweep holds when done, as far as known now: never fewer than it holds already."""
    finished: list[FinishedTrial] = field(default_factory=list)
    """Every finished trial (trained, pruned, or failed for good), in the order they finished."""
    running: list[str] = field(default_factory=list)
    best: dict[tuple[str, str], float] = field(default_factory=dict)
    """Best loss per (setup, point) so far: the fitted minimum summary.json reports (``snapshot``)."""
    provisional: Optional[Provisional] = None
    """The answer so far, when it changed since the last snapshot (``sweep.run.provisional``)."""
    stops: dict[str, Stop] = field(default_factory=dict)
    """Setups stopped when decided so far (``sweep.run.stopping``)."""

    @property
    def done(self) -> int:
        return len(self.finished)


def prepare(plan: SweepPlan, opts: SweepOptions, storage: optuna.storages.BaseStorage) -> None:
    """Create every study, reap dead local workers' trials and queue the policies' first points: those a failed
    trial holds only with ``opts.retry_failed``, which queues every failed point again (a sampler study replaces
    its failed trials within its budget anyway)."""
    for key in plan.studies:
        study = load_study(storage, key, opts.prefix)
        if opts.record is not None and RECORD_ATTR not in study.user_attrs:
            study.set_user_attr(RECORD_ATTR, opts.record)
        reap_abandoned(study)
        policy = key.policy()
        if not policy.queued:
            continue
        failed = {(round(x, 9), seed): (x, seed) for x, seed in failed_points(study, key)}
        points = {(round(x, 9), seed): (x, seed) for x, seed in policy.initial_points()}
        wanted = {**points, **failed} if opts.retry_failed else {p: xs for p, xs in points.items() if p not in failed}
        enqueue_missing(study, key, list(wanted.values()))


def failed_points(study: optuna.Study, key: StudyKey) -> list[tuple[float, int]]:
    """The (x, seed) points of the study's failed trials (failed for good: not interrupted or abandoned)."""
    return [(t.params[key.search.column], seed_of(t, key)) for t in study.get_trials(deepcopy=False,
                                                                                     states=(TrialState.FAIL,))
            if TrialAttrs.of(t).status == TrialStatus.FAILED and key.search.column in t.params]


def is_finished(trial: FrozenTrial) -> bool:
    """Trained, pruned, or failed with a status whose point is not trained again."""
    return trial.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
        trial.state == TrialState.FAIL and TrialAttrs.of(trial).status not in RERUN)


def _finished_trial(trial: FrozenTrial, key: StudyKey, study: str) -> FinishedTrial:
    attrs = trial.user_attrs
    seconds = attrs.get("seconds")
    if seconds is None and trial.duration is not None:
        seconds = trial.duration.total_seconds()
    return FinishedTrial(study=study, number=trial.number, setup=key.setup, point=f"width {key.width}{key.off_width()}",
                         seed=seed_of(trial, key), column=key.search.column,
                         x=trial.params.get(key.search.column, math.nan), lr=attrs.get("lr"), loss=trial.value,
                         status=str(attrs.get("status") or trial.state.name.lower()), seconds=seconds)


def snapshot(plan: SweepPlan, opts: SweepOptions, storage: optuna.storages.BaseStorage,
             complete: bool = False, skipped: Callable[[StudyKey], bool] = lambda key: False) -> Snapshot:
    """Finished trials, those running now, and the best loss per (setup, point) so far, as summary.json will
    report it (``analysis.drift.best_losses``; the lowest over a setup's searched keys). Each study counts
    its policy's budget or the trials it holds, whichever is more (a grid extension or a probe adds trials), a
    study ``skipped`` (its setup stopped when decided) the trials it finished; ``complete``: the sweep is done, the total
    is the finished trials."""
    snap = Snapshot()
    finished: list[tuple[datetime.datetime, FinishedTrial]] = []
    curves: dict[tuple[str, SearchSpec], dict[str, list[tuple[float, int, float]]]] = {}
    for key in plan.studies:
        study = load_study(storage, key, opts.prefix)
        held = done = 0
        for t in live_trials(study, tuple(TrialState)):
            if t.state in (TrialState.RUNNING, TrialState.WAITING):
                held += 1
                if t.state == TrialState.RUNNING:
                    snap.running.append(f"{key.setup} {key.where()} s{seed_of(t, key)} {key.search.column}="
                                        f"{t.params.get(key.search.column, float('nan')):g}")
                continue
            if not is_finished(t):
                continue
            held += 1
            done += 1
            finished.append((t.datetime_complete or datetime.datetime.min, _finished_trial(t, key, study.study_name)))
            if trained_fine(t):
                curves.setdefault((key.setup, key.search), {}).setdefault(key.where(), []).append(
                    (t.params.get(key.search.column, math.nan), seed_of(t, key), t.value))
        snap.total += done if skipped(key) else held if complete else max(held, key.policy().budget())
    snap.finished = [trial for _, trial in sorted(finished, key=lambda f: (f[0], f[1].number))]
    for (setup, search), points in curves.items():
        for where, loss in best_losses({w: _point_trials(rows) for w, rows in points.items()}, search.step,
                                       search.scale == "log2").items():
            snap.best[(setup, where)] = min(snap.best.get((setup, where), math.inf), loss)
    return snap


def _point_trials(rows: list[tuple[float, int, float]]) -> PointTrials:
    x, seed, loss = (np.array(column) for column in zip(*rows))
    ok = np.ones(len(rows), dtype=bool)
    return PointTrials(x.astype(float), seed.astype(int), loss.astype(float), ok, ~ok)


def _worker_options(spec: SweepSpec, opts: SweepOptions, index: int) -> SweepOptions:
    """With several GPUs visible, worker i trains on GPU i mod count (a trainer command's worker, or a built-in
    trial's ranks: on the i-th group of ``devices_per_trial`` GPUs); otherwise the options as given."""
    import torch

    if spec.trainer is not None:
        from .layout import gpu_groups

        groups = gpu_groups(spec.trainer.devices_per_trial)
        return replace(opts, devices=groups[index % len(groups)]) if groups else opts
    if spec.devices_per_trial > 1:
        from .layout import rank_gpu_groups

        groups = rank_gpu_groups(spec.devices_per_trial)
        return replace(opts, rank_gpus=groups[index % len(groups)]) if groups else opts
    gpus = torch.cuda.device_count()
    if gpus > 1 and opts.device in (None, "auto", "cuda"):
        return replace(opts, device=f"cuda:{index % gpus}")
    return opts


def _worker_entry(plan: SweepPlan, opts: SweepOptions) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a sweep started with `&` inherits SIGINT ignored
    load_plugins()
    try:
        with Interrupts().catching():
            run_worker(plan, opts)
    except KeyboardInterrupt:
        os._exit(130)
    except RepeatedFailure:
        os._exit(EXIT_REPEATED)  # the parent stops the other workers and says why
    except UserError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr, flush=True)
        os._exit(EXIT_USAGE)


def _stop_workers(procs: list[multiprocessing.process.BaseProcess], grace: float = 30.0) -> None:
    """SIGINT to every live worker (each marks its running trials for a re-run and stops its child's process
    group), then SIGKILL to any still alive after ``grace`` seconds (its child dies with it)."""
    for proc in procs:
        if proc.is_alive() and proc.pid:
            os.kill(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join()


def run_sweep(plan: SweepPlan, opts: SweepOptions, on_progress: Optional[Callable[[Snapshot], None]] = None,
              poll_seconds: float = 1.0) -> None:
    """Prepare the studies and run ``opts.workers`` workers (in this process when there is one)."""
    storage = open_storage(opts.storage, opts.run_dir, opts.heartbeat, check=True)  # once: a database storage
    # rides out an outage call by call, but opening a new one during it would fail
    prepare(plan, opts, storage)
    gates = Gates(plan, storage, opts.prefix)
    answer = ProvisionalAnswer(plan, storage, opts.prefix, gates.skipped)

    def report(complete: bool = False) -> None:
        if on_progress:
            gates.stops.replay()
            snap = snapshot(plan, opts, storage, complete, gates.skipped)
            snap.stops = dict(gates.stops.stops)
            if not complete:
                snap.provisional = answer.update(snap.done)
            on_progress(snap)

    report()
    if opts.workers == 1:
        try:
            run_worker(plan, opts, on_event=lambda *_: report())
        except RepeatedFailure:
            report()  # the trial that repeated the failure, logged before the stop
            raise
        report(complete=True)
        return
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_worker_entry, args=(plan, _worker_options(plan.spec, opts, i)), daemon=False)
             for i in range(opts.workers)]
    for proc in procs:
        proc.start()
    try:
        while any(proc.is_alive() for proc in procs) and EXIT_REPEATED not in [proc.exitcode for proc in procs]:
            time.sleep(poll_seconds)
            report()
    except KeyboardInterrupt:
        _stop_workers(procs)
        raise
    if EXIT_REPEATED in [proc.exitcode for proc in procs]:
        _stop_workers(procs)
        report()
        stopped = FailureWatch(plan, storage, opts.prefix).latest()
        if stopped is not None:
            raise stopped
    failed = [proc.exitcode for proc in procs if proc.exitcode not in (0, None)]
    report(complete=not failed)
    if failed:
        raise UserError(f"{len(failed)} sweep worker(s) exited with codes {failed}", "see the messages above; "
                        "run the same command again to resume")
