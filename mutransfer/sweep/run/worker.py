"""One sweep worker: walk the plan's studies in its order (``sweep.plan.sweep_plan``: tiers, cheapest first, each tier's
brackets before its refinements and noise probes), claim the points their policies say to train next, train
them (up to ``batch_trials`` learning rates stacked as one model) and tell Optuna the results.

The worker's loop only claims, trains and tells; each other job is an object of its own: ``Claimer`` (which
value a trial trains, one trial per point), ``Gates`` (what a study waits for, whether it trains, what it is held
at), ``Reaper`` (dead workers' trials), ``Heartbeat`` (database storages), a ``TrialTrainer`` (what trains),
``record_result``/``record_failure`` (what Optuna is told) and ``FailureWatch`` (the same failure repeated stops
the sweep)."""

from __future__ import annotations

import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import optuna
from optuna.trial import TrialState

from ..store.attrs import TrialAttrs
from .claims import Claimer
from ..store.heartbeat import Heartbeat
from ..interrupts import held
from .outcomes import CURVE_POINTS, record_failure, record_interrupted, record_result
from ..plan.policy import SearchPolicy
from .gates import Gates
from ..plan.sweep_plan import COARSE, PHASES, SweepPlan, Tier
from ..store.reaper import Reaper
from .repeats import FailureWatch, RepeatedFailure
from ..spec.setup_labels import setup_names
from ..spec.sweep_spec import SweepSpec
from .stage_gate import STAGE_POLL
from ..store.storage import open_storage
from ..store.studies import StudyKey, enqueue_missing, finished_points, live_trials, load_study, seed_of
from .trainer import InProcessTrainer, TrialRun, TrialTrainer
from ..plan.trial import Held, trial_config
from ...schema import Config
from ...tracking.records import TrialEnd
from ...words import TrialStatus
from .tracked import trial_end, trial_info
from ...tracking.session import TrackerHandle, TrialTracking

__all__ = ["SweepOptions", "Worker", "run_worker", "record_result", "CURVE_POINTS", "EventCallback"]

EventCallback = Callable[[str, StudyKey, float], None]
Claimed = list[tuple[optuna.Trial, float]]
TRAINING_ERRORS = (RuntimeError, ValueError, MemoryError)
"""What a failed training raises: the trial fails with the message and the sweep goes on."""



@contextmanager
def _marked_on_interrupt(study: optuna.Study, claimed: Claimed) -> Iterator[None]:
    """Trials claimed but not yet training, marked for a re-run when Ctrl-C or SIGTERM arrives while more are
    claimed. Each ask and its claim are one held section (``interrupts.held``): a trial is never left running
    without this worker's identity, which is how a rerun tells an abandoned trial from a live one."""
    try:
        yield
    except KeyboardInterrupt:
        record_interrupted(study, [trial for trial, _ in claimed])
        raise

@dataclass(frozen=True)
class SweepOptions:
    """How to execute a spec (not part of what is computed: changing these never invalidates a sweep)."""

    run_dir: Path
    storage: Optional[str] = None
    prefix: str = ""
    workers: int = 1
    threads: int = 0
    device: Optional[str] = None
    heartbeat: int = 10
    record: Optional[dict[str, Any]] = None
    devices: Optional[str] = None
    """A trainer command's GPUs (``CUDA_VISIBLE_DEVICES``), one group per worker; None: as the machine has them."""
    rank_gpus: Optional[tuple[int, ...]] = None
    """The built-in trainer's GPUs for a trial's ranks (``devices_per_trial``), as indices among the visible ones,
    one group per worker; None: GPUs 0 to N − 1, or the CPU."""
    retry_failed: bool = False
    """Queue the failed trials' points again when the sweep starts (``--retry-failed``)."""
    tracker: Optional[TrackerHandle] = None
    """The tracker parent each trial's run is logged under (``--log``); None: no tracker."""


class Worker:
    """Claims, trains and tells until every study has its budget; the policies decide what to train."""

    def __init__(self, plan: SweepPlan, opts: SweepOptions, on_event: Optional[EventCallback] = None,
                 trainer: Optional[TrialTrainer] = None) -> None:
        self.plan, self.spec, self.opts, self.on_event = plan, plan.spec, opts, on_event
        self.storage = open_storage(opts.storage, opts.run_dir, opts.heartbeat)
        self.extra = tuple(x for x in (f"train.threads={opts.threads}" if opts.threads else "",
                                       f"train.device={opts.device}" if opts.device else "") if x)
        self.claimer = Claimer(self.spec, self.extra)
        self.gates = Gates(plan, self.storage, opts.prefix)
        self.reaper = Reaper(self.storage)
        self.repeats = FailureWatch(plan, self.storage, opts.prefix)
        self.trainer = trainer or _trainer_for(self.spec, opts)
        self.tracking: Optional[TrialTracking] = None
        self.runs: dict[int, Optional[str]] = {}
        """The tracker run of each trial training now, by Optuna number."""
        if opts.tracker is not None:  # the tracker's library loads on the tracker's thread, in this worker only
            self.tracking = TrialTracking(opts.tracker)

    def run(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
            warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
            try:
                self._run()
            finally:
                if self.tracking is not None:
                    self.tracking.close()

    def _run(self) -> None:
        while True:
            waiting = False
            for index, tier in enumerate(self.plan.tiers):
                waiting = self._train_tier(tier) or waiting
                if not self.gates.stops.look(index):
                    waiting = True  # another worker still trains this tier: its look decides what follows
                    break
            if waiting:
                time.sleep(STAGE_POLL)
                continue
            if not self.reaper.others_running([k for k in self.plan.studies if not self.gates.skipped(k)],
                                              self._study):
                return
            time.sleep(self.opts.heartbeat)

    def _train_tier(self, tier: Tier) -> bool:
        """Train what the tier's studies ask for, brackets first (``sweep.plan.sweep_plan``); True when a study waited for
        others still training (here or in another worker): the learning-rate optimum it trains at, or the stages
        of a spec's ``constants`` before it."""
        waiting = False
        for phase in PHASES:
            for key in tier.keys:
                if self.gates.skipped(key):
                    continue
                if not self.gates.ready(key):
                    waiting = True
                    continue
                study, policy = self._study(key), key.policy()
                if policy.queued:
                    self._drain_queue(study, key, policy, phase == COARSE)
                elif phase == COARSE:
                    self._sample(study, key, policy)
        return waiting

    def _study(self, key: StudyKey) -> optuna.Study:
        return load_study(self.storage, key, self.opts.prefix)

    def _drain_queue(self, study: optuna.Study, key: StudyKey, policy: SearchPolicy, coarse: bool) -> None:
        while True:
            self.reaper.fail_stale(study)
            if not _waiting(study) and not self._queue_more(study, key, policy, coarse):
                return
            claimed: Claimed = []
            emptied = False
            with _marked_on_interrupt(study, claimed):
                while len(claimed) < self.claimer.batch_size(key):
                    if claimed and not _waiting(study):
                        break
                    with held():
                        trial = study.ask()
                        if not TrialAttrs.of(trial).grid:
                            TrialAttrs.write(trial, spurious=True)  # the queue emptied between our look and our ask
                            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                            emptied = True
                            break
                        x = self.claimer.claim(study, key, trial)
                        if x is not None:
                            claimed.append((trial, x))
            if claimed:
                self._process(study, key, claimed)
            if emptied:
                return

    def _queue_more(self, study: optuna.Study, key: StudyKey, policy: SearchPolicy, coarse: bool) -> bool:
        """Once nothing runs, queue the policy's first points that are not finished (a trial failed for a re-run
        while this worker ran: a dead local worker's, an orphan) and the points it asks for next (``coarse``: the
        bracket's only); True when it queued some."""
        trials = live_trials(study, tuple(TrialState))
        if any(t.state == TrialState.RUNNING for t in trials):
            return False
        finished = finished_points(trials, key)
        points = policy.missing_initial_points(finished) + policy.next_points(finished, coarse)
        return bool(points) and enqueue_missing(study, key, points) > 0

    def _sample(self, study: optuna.Study, key: StudyKey, policy: SearchPolicy) -> None:
        while True:
            self.reaper.fail_stale(study)
            live = live_trials(study, (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))
            room = policy.budget() - len(live)
            if room <= 0:
                return
            claimed: Claimed = []
            with _marked_on_interrupt(study, claimed):
                for _ in range(min(room, self.claimer.batch_size(key))):
                    with held():
                        trial = study.ask()
                        x = self.claimer.claim(study, key, trial)
                        if x is not None:
                            claimed.append((trial, x))
            if claimed:
                self._process(study, key, claimed)

    def _process(self, study: optuna.Study, key: StudyKey, claimed: Claimed) -> None:
        """Train the claimed trials, those of one seed stacked together; on Ctrl-C, or when the same failure
        repeats, mark the unfinished ones for a re-run and stop."""
        for _, x in claimed:
            self._event("start", key, x)
        pending = {trial.number: trial for trial, _ in claimed}
        by_seed: dict[int, Claimed] = {}
        for trial, x in claimed:
            by_seed.setdefault(seed_of(trial, key), []).append((trial, x))
        try:
            for group in by_seed.values():
                self._train_group(study, key, group, pending)
        except (KeyboardInterrupt, RepeatedFailure):
            record_interrupted(study, pending.values())
            self._track_end(list(pending), TrialEnd(status=str(TrialStatus.INTERRUPTED)))
            raise
        for _, x in claimed:
            self._event("end", key, x)

    def _event(self, kind: str, key: StudyKey, x: float) -> None:
        if self.on_event:
            self.on_event(kind, key, x)

    def _train_group(self, study: optuna.Study, key: StudyKey, claimed: Claimed,
                     pending: dict[int, optuna.Trial]) -> None:
        """Train trials of one seed (one ordinary model, or several stacked) and tell each its result; after a
        failure, raise ``RepeatedFailure`` when the sweep's last trials all failed the same way."""
        trials = [trial for trial, _ in claimed]
        held = self.gates.held(key)
        cfgs = [trial_config(self.spec, key, x, self.extra, seed_of(trial, key), held) for trial, x in claimed]
        for trial, cfg in zip(trials, cfgs):
            for name, value in (*setup_names(self.spec, key.setup, cfg),
                                ("lr", cfg.optimizer.lr), ("batch_trials", len(trials))):
                trial.set_user_attr(name, value)
        prune = key.search.pruner != "none"
        runs = self._track_start(study, key, claimed, cfgs, held)

        def on_eval(i: int, step: int, val: float) -> bool:
            self._track_metrics(runs[i], step, "val_loss", val)
            try:
                trials[i].report(val, step)
            except optuna.exceptions.UpdateFinishedTrialError:
                return True  # declared dead during a storage outage: stop it, its point is trained again
            return prune and trials[i].should_prune()

        def on_step(i: int, step: int, loss: float) -> None:
            self._track_metrics(runs[i], step, "train_loss", loss)

        try:
            with Heartbeat(self.storage, [trial._trial_id for trial in trials]):
                results = self.trainer.fit([TrialRun(key, trial.number, cfg, run) for trial, cfg, run
                                            in zip(trials, cfgs, runs)], on_eval, on_step)
        except TRAINING_ERRORS as exc:
            self._track_end([trial.number for trial in trials], TrialEnd(status=str(TrialStatus.FAILED)))
            for trial in trials:
                record_failure(study, trial, exc)
                pending.pop(trial.number)
            self.repeats.check()
            return
        for trial, cfg, result in zip(trials, cfgs, results):
            # The tracker's run ends before the storage finishes the trial: a kill between the two leaves a trial
            # that trains again (its run resumed or replaced), never a finished trial whose run stays open.
            self._track_end([trial.number], trial_end(result))
            try:
                record_result(study, trial, cfg, result)
            except optuna.exceptions.UpdateFinishedTrialError:
                print(f"warning: trial {trial.number} ({key.setup} {key.where()}) was declared dead while the storage "
                      "was unreachable; its point is trained again and this result is dropped", file=sys.stderr)
            pending.pop(trial.number)

    def _track_start(self, study: optuna.Study, key: StudyKey, claimed: Claimed, cfgs: list[Config],
                     held: Held) -> list[Optional[str]]:
        """Each claimed trial's tracker run (None for each without a tracker)."""
        if self.tracking is None:
            return [None] * len(claimed)
        for (trial, x), cfg in zip(claimed, cfgs):
            self.runs[trial.number] = self.tracking.start(trial_info(key, study.study_name, trial.number, x,
                                                                     seed_of(trial, key), cfg, held))
        return [self.runs[trial.number] for trial, _ in claimed]

    def _track_metrics(self, run: Optional[str], step: int, name: str, value: float) -> None:
        if self.tracking is not None and run is not None:
            self.tracking.metrics(run, step, {name: value})

    def _track_end(self, numbers: list[int], end: TrialEnd) -> None:
        """Tell the tracker how the trials ``numbers`` ended (their runs, once each)."""
        if self.tracking is not None:
            for number in numbers:
                self.tracking.end(self.runs.pop(number, None), end)


def _waiting(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


def _trainer_for(spec: SweepSpec, opts: SweepOptions) -> TrialTrainer:
    """The user's training command when the spec has one, else the built-in loop: in this process, or on
    ``devices_per_trial`` ranks."""
    if spec.trainer is not None:
        from .command_trainer import CommandTrainer

        return CommandTrainer(spec, opts.run_dir, opts.prefix, opts.threads, opts.devices, opts.storage,
                              opts.tracker)
    if spec.devices_per_trial > 1:
        from .ranked_trainer import RankedTrainer

        return RankedTrainer(spec.devices_per_trial, opts.run_dir, opts.rank_gpus)
    return InProcessTrainer(spec, opts.run_dir)


def run_worker(plan: SweepPlan, opts: SweepOptions, on_event: Optional[EventCallback] = None) -> None:
    """One worker: train queued/sampled trials of every study until the sweep is complete."""
    Worker(plan, opts, on_event).run()
