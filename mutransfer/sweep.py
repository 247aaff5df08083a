"""Sweeps: run every study of a spec with local worker processes on one Optuna storage, then tabulate.

A worker walks the studies in order and pops their queued grid points (or asks the sampler, for TPE/GP)
until each study has its budget, taking up to ``batch_trials`` learning rates at a time and training them
stacked as one model. Running the same command again resumes: finished trials are kept,
trials of dead local workers are re-run, live workers' trials are left alone.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

import optuna
from optuna.trial import TrialState

from .analysis import fit_halfwidth, local_optimum
from .config import compose, to_dict
from .data import Corpus, load_corpus, vocab_size
from .errors import UserError
from .schema import Config
from .spec import LR_KEY, SweepSpec
from .studies import (RECORD_ATTR, StudyKey, enqueue_missing, heartbeat_of, is_bookkeeping, load_study, open_storage,
                      owner_of, process_identity, reap_abandoned, study_keys)
from .train import TrainResult, resolve_device, train_model, train_trials

__all__ = ["SweepOptions", "Snapshot", "trial_config", "prepare", "run_worker", "run_sweep", "snapshot",
           "refine_points", "setup_configs", "trials_per_batch", "auto_trials", "CURVE_POINTS", "LR_KEY"]

CURVE_POINTS = 200
EventCallback = Callable[[str, StudyKey, float], None]


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


@dataclass
class Snapshot:
    done: int = 0
    total: int = 0
    running: list[str] = field(default_factory=list)
    best: dict[tuple[str, int], float] = field(default_factory=dict)


def trial_config(spec: SweepSpec, key: StudyKey, x: float, extra: tuple[str, ...] = ()) -> Config:
    """The config one trial trains: setup overrides, spec overrides, then width, seed and the searched value."""
    setup = next(s for s in spec.setups if s.label == key.setup)
    value = key.search.value(x)
    return compose([*setup.overrides, *spec.overrides, f"model.width={key.width}", f"train.seed={key.seed}",
                    f"{key.search.key}={value!r}", *extra], spec.extra())


def refine_points(done: dict[float, float], step: float, low: float, high: float, halfwidth: float) -> list[float]:
    """The refine sampler's next points: every quarter step strictly inside ±``halfwidth`` of the finished
    point nearest the local-fit optimum of the finished points (``analysis.local_optimum``), inside the
    range. Repeated until nothing is missing, this fills the fit window at a quarter-step grid's resolution
    (its edges, one octave out on a 1-octave grid, are coarse points already)."""
    if not done:
        return []
    _, centre = local_optimum(done, halfwidth)
    quarter = step / 4
    n = round(halfwidth / quarter) - 1
    points = [round(centre + k * quarter, 10) for k in range(-n, n + 1)]
    return [x for x in points if low - 1e-9 <= x <= high + 1e-9]


def _halfwidth(key: StudyKey) -> float:
    return fit_halfwidth(key.search.step, key.search.scale == "log2")


def _budget(key: StudyKey) -> int:
    """Trials a study will hold when done (a refined grid adds the fit window's quarter-step points)."""
    if key.search.sampler == "refine":
        n = round(_halfwidth(key) / (key.search.step / 4)) - 1
        return len(key.search.grid()) + 2 * (n - n // 4)
    return key.search.budget()


def prepare(spec: SweepSpec, opts: SweepOptions) -> int:
    """Create every study, reap dead local workers' trials and queue the missing grid points. Returns the total."""
    storage = open_storage(opts.storage, opts.run_dir, opts.heartbeat)
    total = 0
    for key in study_keys(spec):
        study = load_study(storage, key, opts.prefix)
        if opts.record is not None and RECORD_ATTR not in study.user_attrs:
            study.set_user_attr(RECORD_ATTR, opts.record)
        reap_abandoned(study)
        if key.search.sampler in ("grid", "refine"):
            enqueue_missing(study, key.search.column, key.search.grid())
        total += _budget(key)
    return total


class _Heartbeat:
    """Keeps RDB trials' heartbeats fresh while they train (Optuna only does this inside ``optimize``)."""

    def __init__(self, storage: optuna.storages.BaseStorage, trial_ids: list[int]) -> None:
        self.storage, self.trial_ids, self.stop = storage, trial_ids, threading.Event()
        interval = heartbeat_of(storage)
        self.thread = threading.Thread(target=self._beat, args=(interval,), daemon=True) if interval else None

    def _beat(self, interval: int) -> None:
        while True:
            for trial_id in self.trial_ids:
                self.storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]
            if self.stop.wait(interval):
                return

    def __enter__(self) -> "_Heartbeat":
        if self.thread:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


class _Worker:
    def __init__(self, spec: SweepSpec, opts: SweepOptions, on_event: Optional[EventCallback]) -> None:
        self.spec, self.opts, self.on_event = spec, opts, on_event
        self.storage = open_storage(opts.storage, opts.run_dir, opts.heartbeat)
        self.corpora: dict[str, Corpus] = {}
        self.batch_sizes: dict[StudyKey, int] = {}
        self.extra = tuple(x for x in (f"train.threads={opts.threads}" if opts.threads else "",
                                       f"train.device={opts.device}" if opts.device else "") if x)

    def corpus(self, cfg: Config) -> Corpus:
        tag = f"{cfg.data.kind}:{cfg.data.path}:{cfg.data.val_fraction}:{cfg.train.seq_len}"
        if tag not in self.corpora:
            self.corpora[tag] = load_corpus(cfg.data, cfg.train.seq_len)
        return self.corpora[tag]

    def run(self) -> None:
        keys = study_keys(self.spec)
        while True:
            for key in keys:
                study = load_study(self.storage, key, self.opts.prefix)
                if key.search.sampler in ("grid", "refine"):
                    self._drain_queue(study, key)
                else:
                    self._sample(study, key)
            if not self._others_running(keys):
                return
            time.sleep(self.opts.heartbeat)

    def _others_running(self, keys: list[StudyKey]) -> bool:
        """With a database storage, stay while other workers' trials run: if one of them dies its heartbeat
        goes stale, its trial is failed and re-queued, and this worker trains it."""
        if heartbeat_of(self.storage) is None:
            return False
        busy = False
        for key in keys:
            study = load_study(self.storage, key, self.opts.prefix)
            optuna.storages.fail_stale_trials(study)
            states = {t.state for t in study.get_trials(deepcopy=False) if not is_bookkeeping(t)}
            busy = busy or bool(states & {TrialState.RUNNING, TrialState.WAITING})
        return busy

    def _waiting(self, study: optuna.Study) -> int:
        return len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))

    def _drain_queue(self, study: optuna.Study, key: StudyKey) -> None:
        while True:
            if heartbeat_of(self.storage) is not None:
                optuna.storages.fail_stale_trials(study)
            if not self._waiting(study) and not (key.search.sampler == "refine" and self._refine(study, key)):
                return
            claimed: list[tuple[optuna.Trial, float]] = []
            emptied = False
            while len(claimed) < self._batch_size(key):
                if claimed and not self._waiting(study):
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

    def _refine(self, study: optuna.Study, key: StudyKey) -> bool:
        trials = [t for t in study.get_trials(deepcopy=False) if not is_bookkeeping(t)]
        if any(t.state == TrialState.RUNNING for t in trials):
            return False
        done = {t.params[key.search.column]: t.value for t in trials
                if t.state == TrialState.COMPLETE and t.value is not None and math.isfinite(t.value)}
        points = refine_points(done, key.search.step, key.search.min, key.search.max, _halfwidth(key))
        return enqueue_missing(study, key.search.column, points) > 0

    def _sample(self, study: optuna.Study, key: StudyKey) -> None:
        while True:
            if heartbeat_of(self.storage) is not None:
                optuna.storages.fail_stale_trials(study)
            live = [t for t in study.get_trials(deepcopy=False) if not is_bookkeeping(t)
                    and t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)]
            room = key.search.budget() - len(live)
            if room <= 0:
                return
            claimed = []
            for _ in range(min(room, self._batch_size(key))):
                trial = study.ask()
                x = self._claim(study, key, trial)
                if x is not None:
                    claimed.append((trial, x))
            if claimed:
                self._process(study, key, claimed)

    def _batch_size(self, key: StudyKey) -> int:
        if key not in self.batch_sizes:
            cfg = trial_config(self.spec, key, key.search.min, self.extra)
            self.batch_sizes[key] = trials_per_batch(self.spec.batch_trials, key, cfg)
        return self.batch_sizes[key]

    def _claim(self, study: optuna.Study, key: StudyKey, trial: optuna.Trial) -> Optional[float]:
        """The trial's searched value, or None when another live trial already holds that value."""
        search = key.search
        x = trial.suggest_float(search.column, search.min, search.max)
        for name, value in {**process_identity(), "setup": key.setup, "width": key.width, "seed": key.seed,
                            "search_key": search.key}.items():
            trial.set_user_attr(name, value)
        if owner_of(study, trial.number, search.column, x) != trial.number:
            trial.set_user_attr("duplicate", True)
            study.tell(trial, state=TrialState.FAIL)
            return None
        return x

    def _process(self, study: optuna.Study, key: StudyKey, claimed: list[tuple[optuna.Trial, float]]) -> None:
        if self.on_event:
            for _, x in claimed:
                self.on_event("start", key, x)
        pending = {trial.number: trial for trial, _ in claimed}
        try:
            self._train(study, key, claimed, pending)
        except KeyboardInterrupt:
            for trial in pending.values():
                trial.set_user_attr("status", "interrupted")
                study.tell(trial, state=TrialState.FAIL)
            raise
        if self.on_event:
            for _, x in claimed:
                self.on_event("end", key, x)

    def _train(self, study: optuna.Study, key: StudyKey, claimed: list[tuple[optuna.Trial, float]],
               pending: dict[int, optuna.Trial]) -> None:
        """Train the claimed trials (one ordinary model, or several stacked) and tell each its result."""
        trials = [trial for trial, _ in claimed]
        cfgs = [trial_config(self.spec, key, x, self.extra) for _, x in claimed]
        for trial, cfg in zip(trials, cfgs):
            trial.set_user_attr("parametrization", cfg.parametrization.name)
            trial.set_user_attr("optimizer", cfg.optimizer.name)
            trial.set_user_attr("lr", cfg.optimizer.lr)
            trial.set_user_attr("batch_trials", len(trials))
        prune = key.search.pruner != "none"

        def on_eval(i: int, step: int, val: float) -> bool:
            trials[i].report(val, step)
            return prune and trials[i].should_prune()

        try:
            with _Heartbeat(self.storage, [trial._trial_id for trial in trials]):
                corpus = self.corpus(cfgs[0])
                if len(trials) == 1:
                    results = [train_model(cfgs[0], corpus, on_eval=lambda step, val: on_eval(0, step, val))[0]]
                else:
                    results = train_trials(cfgs[0], corpus, [cfg.optimizer.lr for cfg in cfgs], on_eval=on_eval)[0]
        except (RuntimeError, ValueError, MemoryError) as exc:
            for trial in trials:
                trial.set_user_attr("status", "failed")
                trial.set_user_attr("message", f"{type(exc).__name__}: {exc}"[:500])
                study.tell(trial, state=TrialState.FAIL)
                pending.pop(trial.number)
            return
        for trial, cfg, result in zip(trials, cfgs, results):
            self._tell(study, trial, cfg, result)
            pending.pop(trial.number)

    def _tell(self, study: optuna.Study, trial: optuna.Trial, cfg: Config, result: TrainResult) -> None:
        stride = max(1, math.ceil(len(result.curve) / CURVE_POINTS))
        curve = [[row["step"], row["train_loss"]] for row in result.curve[::stride]]
        if result.curve and curve[-1][0] != result.curve[-1]["step"]:
            curve.append([result.curve[-1]["step"], result.curve[-1]["train_loss"]])
        summary = result.summary()
        status = {"stopped": "pruned"}.get(result.status, result.status)
        for name, value in {**summary, "status": status, "curve": curve,
                            "evals": [[e["step"], e["val_loss"]] for e in result.evals]}.items():
            trial.set_user_attr(name, value if not (isinstance(value, float) and not math.isfinite(value)) else None)
        if status == "pruned":
            study.tell(trial, state=TrialState.PRUNED)
        elif status == "diverged":
            fallback = cfg.train.diverge_factor * math.log(vocab_size(cfg.data))  # a loss of NaN from step 1
            last = result.train_loss if result.train_loss is not None else fallback
            study.tell(trial, max(last, result.initial_loss if math.isfinite(result.initial_loss) else 0.0))
        else:
            study.tell(trial, result.val_loss)


def auto_trials(device_type: str, width: int) -> int:
    """``batch_trials: auto``: 1 on CPU (measured: at most 1.2× there, see README); on a GPU
    ``min(8, 2048 // width)`` learning-rate trials, since small widths leave most of a GPU idle."""
    return max(1, min(8, 2048 // width)) if device_type == "cuda" else 1


def trials_per_batch(setting: int | str, key: StudyKey, cfg: Config) -> int:
    """How many of a study's trials train stacked as one model: ``batch_trials`` when it is a number, else
    ``auto_trials``; only learning-rate searches of the built-in GPT batch."""
    if setting != "auto":
        return int(setting)
    if key.search.key != LR_KEY or cfg.model.factory:
        return 1
    return auto_trials(resolve_device(cfg.train.device).type, cfg.model.width)


def run_worker(spec: SweepSpec, opts: SweepOptions, on_event: Optional[EventCallback] = None) -> None:
    """One worker: train queued/sampled trials of every study until the sweep is complete."""
    _Worker(spec, opts, on_event).run()


def _die_with_parent() -> None:
    """Linux: a worker gets SIGKILL when the sweep process dies, so no orphan keeps training."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _worker_options(opts: SweepOptions, index: int) -> SweepOptions:
    """With several GPUs visible, worker i trains on GPU i mod count; otherwise the options as given."""
    import torch

    gpus = torch.cuda.device_count()
    if gpus > 1 and opts.device in (None, "auto", "cuda"):
        return replace(opts, device=f"cuda:{index % gpus}")
    return opts


def _worker_entry(spec: SweepSpec, opts: SweepOptions) -> None:
    _die_with_parent()
    try:
        run_worker(spec, opts)
    except KeyboardInterrupt:
        os._exit(130)


def snapshot(spec: SweepSpec, opts: SweepOptions, total: int) -> Snapshot:
    storage = open_storage(opts.storage, opts.run_dir, opts.heartbeat)
    snap = Snapshot(total=total)
    for key in study_keys(spec):
        study = load_study(storage, key, opts.prefix)
        for t in study.get_trials(deepcopy=False):
            if is_bookkeeping(t):
                continue
            if t.state in (TrialState.COMPLETE, TrialState.PRUNED):
                snap.done += 1
                if t.state == TrialState.COMPLETE and t.user_attrs.get("status") == "ok" and t.value is not None:
                    best = snap.best.get((key.setup, key.width), math.inf)
                    snap.best[(key.setup, key.width)] = min(best, t.value)
            elif t.state == TrialState.RUNNING:
                snap.running.append(f"{key.setup} w{key.width} s{key.seed} {key.search.column}="
                                    f"{t.params.get(key.search.column, float('nan')):g}")
    return snap


def run_sweep(spec: SweepSpec, opts: SweepOptions, on_progress: Optional[Callable[[Snapshot], None]] = None,
              poll_seconds: float = 1.0) -> None:
    """Prepare the studies and run ``opts.workers`` workers (in this process when there is one)."""
    total = prepare(spec, opts)
    report = (lambda: on_progress(snapshot(spec, opts, total))) if on_progress else (lambda: None)
    report()
    if opts.workers == 1:
        run_worker(spec, opts, on_event=lambda *_: report())
        report()
        return
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_worker_entry, args=(spec, _worker_options(opts, i)), daemon=False)
             for i in range(opts.workers)]
    for proc in procs:
        proc.start()
    try:
        while any(proc.is_alive() for proc in procs):
            time.sleep(poll_seconds)
            report()
    except KeyboardInterrupt:
        for proc in procs:
            if proc.is_alive() and proc.pid:
                os.kill(proc.pid, signal.SIGINT)
        for proc in procs:
            proc.join(timeout=30)
        raise
    report()
    failed = [proc.exitcode for proc in procs if proc.exitcode not in (0, None)]
    if failed:
        raise UserError(f"{len(failed)} sweep worker(s) exited with codes {failed}", "see the messages above; "
                        "run the same command again to resume")


def setup_configs(spec: SweepSpec) -> dict[str, dict[str, Any]]:
    """Each setup's resolved config at the first width and seed, with the searched keys at their base values."""
    out = {}
    for setup in spec.setups:
        cfg = compose([*setup.overrides, *spec.overrides, f"model.width={spec.widths[0]}",
                       f"train.seed={spec.seeds[0]}"], spec.extra())
        out[setup.label] = to_dict(cfg)
    return out

