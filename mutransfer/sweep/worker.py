"""One sweep worker: walk the studies in order, claim the points their policies say to train next, train
them (up to ``batch_trials`` learning rates stacked as one model) and tell Optuna the results."""

from __future__ import annotations

import math
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import optuna
from optuna.trial import TrialState

from ..schema import Config
from ..train.data import Corpora, Corpus, vocab_size
from ..train.loop import TrainResult, train_model, train_trials
from ..train.trunk import TRUNK_DIR, Trunk, trunk_for
from .liveness import process_identity
from .policy import SearchPolicy
from .spec import SweepSpec
from .storage import heartbeat_of, open_storage
from .stages import point_optimum
from .studies import (StudyKey, enqueue_missing, finished_points, live_trials, load_study, owner_of,
                      reap_abandoned, reap_orphans, seed_of, study_keys)
from .trial import axis_values, trial_config, trials_per_batch

__all__ = ["SweepOptions", "Worker", "run_worker", "record_result", "CURVE_POINTS", "EventCallback"]

CURVE_POINTS = 200
STAGE_POLL = 2.0
"""Seconds between looks at the learning-rate studies another worker is finishing, for a search at their optimum."""
EventCallback = Callable[[str, StudyKey, float], None]
Claimed = list[tuple[optuna.Trial, float]]


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


class _Heartbeat:
    """Keeps RDB trials' heartbeats fresh while they train (Optuna only does this inside ``optimize``)."""

    def __init__(self, storage: optuna.storages.BaseStorage, trial_ids: list[int]) -> None:
        self.storage, self.trial_ids, self.stop = storage, trial_ids, threading.Event()
        interval = heartbeat_of(storage)
        self.thread = threading.Thread(target=self._beat, args=(interval,), daemon=True) if interval else None

    def _beat(self, interval: int) -> None:
        while True:
            try:
                for trial_id in self.trial_ids:
                    self.storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - an outage past the storage's patience: the training thread reports it
                return
            if self.stop.wait(interval):
                return

    def __enter__(self) -> "_Heartbeat":
        if self.thread:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


class Worker:
    """Claims, trains and tells until every study has its budget; the policies decide what to train."""

    def __init__(self, spec: SweepSpec, opts: SweepOptions, on_event: Optional[EventCallback] = None) -> None:
        self.spec, self.opts, self.on_event = spec, opts, on_event
        self.storage = open_storage(opts.storage, opts.run_dir, opts.heartbeat)
        self.corpora = Corpora()
        self.batch_sizes: dict[StudyKey, int] = {}
        self.base_configs: dict[StudyKey, Config] = {}
        self.stage_lrs: dict[tuple[str, Any], Optional[float]] = {}
        self.extra = tuple(x for x in (f"train.threads={opts.threads}" if opts.threads else "",
                                       f"train.device={opts.device}" if opts.device else "") if x)

    def run(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
            warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
            self._run()

    def _run(self) -> None:
        keys = study_keys(self.spec)
        while True:
            waiting = False
            for key in keys:
                if key.search.at == "optimum" and not self._stage_ready(key):
                    waiting = True  # its learning-rate studies are still training (here or in another worker)
                    continue
                study = load_study(self.storage, key, self.opts.prefix)
                policy = key.policy()
                if policy.queued:
                    self._drain_queue(study, key, policy)
                else:
                    self._sample(study, key, policy)
            if waiting:
                time.sleep(STAGE_POLL)
                continue
            if not self._others_running(keys):
                return
            time.sleep(self.opts.heartbeat)

    def _stage_ready(self, key: StudyKey) -> bool:
        """Whether the learning-rate optimum at ``key``'s point is known (``search.at: optimum``)."""
        where = (key.setup, key.point)
        if where not in self.stage_lrs:
            log2_lr = point_optimum(self.spec, key, self.storage, self.opts.prefix)
            if log2_lr is None:
                return False
            self.stage_lrs[where] = None if math.isnan(log2_lr) else 2.0**log2_lr
        return True

    def _fail_stale(self, study: optuna.Study) -> None:
        """Database storages: fail the trials whose heartbeat went stale, the orphans, and the trials of this
        machine's dead workers (one that died between its claim and its first heartbeat leaves a trial no
        heartbeat check ever sees)."""
        if heartbeat_of(self.storage) is not None:
            optuna.storages.fail_stale_trials(study)
            reap_orphans(study)
            reap_abandoned(study)

    def _others_running(self, keys: list[StudyKey]) -> bool:
        """With a database storage, stay while other workers' trials run: if one of them dies its heartbeat
        goes stale, its trial is failed and re-queued, and this worker trains it."""
        if heartbeat_of(self.storage) is None:
            return False
        busy = False
        for key in keys:
            study = load_study(self.storage, key, self.opts.prefix)
            self._fail_stale(study)
            busy = busy or bool(live_trials(study, (TrialState.RUNNING, TrialState.WAITING)))
        return busy

    def _drain_queue(self, study: optuna.Study, key: StudyKey, policy: SearchPolicy) -> None:
        while True:
            self._fail_stale(study)
            if not _waiting(study) and not self._queue_more(study, key, policy):
                return
            claimed: Claimed = []
            emptied = False
            while len(claimed) < self._batch_size(key):
                if claimed and not _waiting(study):
                    break
                trial = study.ask()
                if not trial.user_attrs.get("grid"):
                    trial.set_user_attr("spurious", True)  # the queue emptied between our look and our ask
                    study.tell(trial, state=TrialState.FAIL)
                    emptied = True
                    break
                x = self._claim(study, key, trial)
                if x is not None:
                    claimed.append((trial, x))
            if claimed:
                self._process(study, key, claimed)
            if emptied:
                return

    def _queue_more(self, study: optuna.Study, key: StudyKey, policy: SearchPolicy) -> bool:
        """Ask the policy for more points once nothing runs; True when it queued some."""
        trials = live_trials(study, tuple(TrialState))
        if any(t.state == TrialState.RUNNING for t in trials):
            return False
        points = policy.next_points(finished_points(trials, key))
        return bool(points) and enqueue_missing(study, key, points) > 0

    def _sample(self, study: optuna.Study, key: StudyKey, policy: SearchPolicy) -> None:
        while True:
            self._fail_stale(study)
            live = live_trials(study, (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))
            room = policy.budget() - len(live)
            if room <= 0:
                return
            claimed: Claimed = []
            for _ in range(min(room, self._batch_size(key))):
                trial = study.ask()
                x = self._claim(study, key, trial)
                if x is not None:
                    claimed.append((trial, x))
            if claimed:
                self._process(study, key, claimed)

    def _batch_size(self, key: StudyKey) -> int:
        if key not in self.batch_sizes:
            self.batch_sizes[key] = trials_per_batch(self.spec.batch_trials, key, self._base_config(key))
        return self.batch_sizes[key]

    def _base_config(self, key: StudyKey) -> Config:
        """The study's config at its lowest searched value: what sizes its batches and places its trials on the
        transfer axes."""
        if key not in self.base_configs:
            self.base_configs[key] = trial_config(self.spec, key, key.search.min, self.extra)
        return self.base_configs[key]

    def _claim(self, study: optuna.Study, key: StudyKey, trial: optuna.Trial) -> Optional[float]:
        """The trial's searched value, or None when another live trial already holds that value or the trial was
        failed as an orphan while an outage held this claim up."""
        try:
            return self._claim_point(study, key, trial)
        except optuna.exceptions.UpdateFinishedTrialError:
            return None

    def _claim_point(self, study: optuna.Study, key: StudyKey, trial: optuna.Trial) -> Optional[float]:
        search = key.search
        x = trial.suggest_float(search.column, *key.policy().bounds)
        seed = seed_of(trial, key)
        for name, value in {**process_identity(), "setup": key.setup, **axis_values(self._base_config(key)),
                            "seed": seed, "search_key": search.key}.items():
            trial.set_user_attr(name, value)
        if owner_of(study, trial.number, key, x, seed) != trial.number:
            trial.set_user_attr("duplicate", True)
            study.tell(trial, state=TrialState.FAIL)
            return None
        return x

    def _process(self, study: optuna.Study, key: StudyKey, claimed: Claimed) -> None:
        """Train the claimed trials; on Ctrl-C mark the unfinished ones for a re-run and stop."""
        for _, x in claimed:
            self._event("start", key, x)
        pending = {trial.number: trial for trial, _ in claimed}
        try:
            self._train(study, key, claimed, pending)
        except KeyboardInterrupt:
            for trial in pending.values():
                try:
                    trial.set_user_attr("status", "interrupted")
                except optuna.exceptions.UpdateFinishedTrialError:
                    continue  # told its result just before the signal
                study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            raise
        for _, x in claimed:
            self._event("end", key, x)

    def _event(self, kind: str, key: StudyKey, x: float) -> None:
        if self.on_event:
            self.on_event(kind, key, x)

    def _train(self, study: optuna.Study, key: StudyKey, claimed: Claimed, pending: dict[int, optuna.Trial]) -> None:
        """Train the claimed trials, those of one seed stacked together."""
        by_seed: dict[int, Claimed] = {}
        for trial, x in claimed:
            by_seed.setdefault(trial.user_attrs["seed"], []).append((trial, x))
        for group in by_seed.values():
            self._train_group(study, key, group, pending)

    def _train_group(self, study: optuna.Study, key: StudyKey, claimed: Claimed,
                     pending: dict[int, optuna.Trial]) -> None:
        """Train trials of one seed (one ordinary model, or several stacked) and tell each its result."""
        trials = [trial for trial, _ in claimed]
        lr = self.stage_lrs.get((key.setup, key.point))
        cfgs = [trial_config(self.spec, key, x, self.extra, trial.user_attrs["seed"], lr) for trial, x in claimed]
        for trial, cfg in zip(trials, cfgs):
            for name, value in (("parametrization", cfg.parametrization.name), ("optimizer", cfg.optimizer.name),
                                ("lr", cfg.optimizer.lr), ("batch_trials", len(trials))):
                trial.set_user_attr(name, value)
        prune = key.search.pruner != "none"

        def on_eval(i: int, step: int, val: float) -> bool:
            try:
                trials[i].report(val, step)
            except optuna.exceptions.UpdateFinishedTrialError:
                return True  # declared dead during a storage outage: stop it, its point is trained again
            return prune and trials[i].should_prune()

        try:
            with _Heartbeat(self.storage, [trial._trial_id for trial in trials]):
                results = self._fit(cfgs, on_eval)
        except (RuntimeError, ValueError, MemoryError) as exc:
            for trial in trials:
                trial.set_user_attr("status", "failed")
                trial.set_user_attr("message", f"{type(exc).__name__}: {exc}"[:500])
                study.tell(trial, state=TrialState.FAIL)
                pending.pop(trial.number)
            return
        for trial, cfg, result in zip(trials, cfgs, results):
            try:
                record_result(study, trial, cfg, result)
            except optuna.exceptions.UpdateFinishedTrialError:
                print(f"warning: trial {trial.number} ({key.setup} {key.where()}) was declared dead while the storage "
                      "was unreachable; its point is trained again and this result is dropped", file=sys.stderr)
            pending.pop(trial.number)

    def _fit(self, cfgs: list[Config], on_eval: Callable[[int, int, float], bool]) -> list[TrainResult]:
        corpus = self._corpus(cfgs[0])
        if len(cfgs) == 1:
            return [train_model(cfgs[0], corpus, on_eval=lambda step, val: on_eval(0, step, val),
                                trunk=self._trunk(cfgs[0]))[0]]
        return train_trials(cfgs[0], corpus, [cfg.optimizer.lr for cfg in cfgs], on_eval=on_eval)[0]

    def _trunk(self, cfg: Config) -> Optional[Trunk]:
        """The trunk a trial trained on its own branches off (``SweepSpec.branches``), None without one."""
        if not self.spec.branches(cfg.train):
            return None
        return trunk_for(cfg, self.opts.run_dir / TRUNK_DIR, self.spec.steps)

    def _corpus(self, cfg: Config) -> Corpus:
        return self.corpora.get(cfg.data, cfg.train.seq_len)


def _waiting(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


def _finite(value: float) -> Optional[float]:
    return value if math.isfinite(value) else None


def record_result(study: optuna.Study, trial: optuna.Trial, cfg: Config, result: TrainResult) -> None:
    """Store a trained trial's summary, thinned curve and evaluations (and, when measured, its gradient noise as
    ``noise``: [step, |G|², tr(Σ)] per evaluation), and tell Optuna its state and value.

    A diverged trial is COMPLETE with its last finite loss (at least the initial one), so samplers learn
    that the region is bad; a pruned one is PRUNED."""
    stride = max(1, math.ceil(len(result.curve) / CURVE_POINTS))
    curve = [[row["step"], row["train_loss"]] for row in result.curve[::stride]]
    if result.curve and curve[-1][0] != result.curve[-1]["step"]:
        curve.append([result.curve[-1]["step"], result.curve[-1]["train_loss"]])
    status = {"stopped": "pruned"}.get(result.status, result.status)
    noise = {"noise": [[e["step"], _finite(e["noise_g2"]), _finite(e["noise_trace"])] for e in result.evals
                       if "noise_g2" in e]} if result.noise_measured else {}
    for name, value in {**result.summary(), "status": status, "curve": curve,
                        "evals": [[e["step"], e["val_loss"]] for e in result.evals], **noise}.items():
        trial.set_user_attr(name, value if not (isinstance(value, float) and not math.isfinite(value)) else None)
    if status == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    elif status == "diverged":
        fallback = cfg.train.diverge_factor * math.log(vocab_size(cfg.data))  # a loss of NaN from step 1
        last = result.train_loss if result.train_loss is not None else fallback
        study.tell(trial, max(last, result.initial_loss if math.isfinite(result.initial_loss) else 0.0))
    else:
        study.tell(trial, result.val_loss)


def run_worker(spec: SweepSpec, opts: SweepOptions, on_event: Optional[EventCallback] = None) -> None:
    """One worker: train queued/sampled trials of every study until the sweep is complete."""
    Worker(spec, opts, on_event).run()
