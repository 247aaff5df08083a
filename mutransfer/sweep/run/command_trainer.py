"""Trials run by the user's own training command (a spec's ``trainer`` section): one child process per trial in
a folder of its own, the trial's values in its words and in ``trial.json``, the plan in ``plan.yaml`` for a
``model.factory`` spec, its result read back from ``result.json`` (``mutransfer.trial_io``)."""

from __future__ import annotations

import dataclasses
import math
import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ...files import PLAN_FILE, PROGRESS_FILE, RESULT_FILE, STDERR_LOG, STDOUT_LOG, TRIAL_DIR_ENV, TRIALS_DIR
from ...schema import TRANSFER_AXES, Config
from ...train.result import TrainResult
from ...trial_io import ResultProblem, TrialResult, read_progress, read_result, write_trial_values
from ...words import TrialStatus
from .child_process import BoundedLog, ChildExit, run_child
from .outcomes import TrialFailed
from ..spec.sweep_spec import SweepSpec
from ..spec.trainer import TrainerSpec, fill
from ..plan.trial import axis_value
from ...tracking.session import TrackerHandle

if TYPE_CHECKING:  # the built-in trainer's module imports torch; a dry run that prints a command needs none
    from .trainer import OnEval, OnStep, TrialRun

__all__ = ["CommandTrainer", "TrialFailed", "trial_values", "command_words", "child_environment", "SECRET_ENV"]

SECRET_ENV = ("MUTRANSFER_STORAGE",)
"""Environment variables a child never sees (the storage URL, which may hold a password)."""


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        import json

        return json.dumps(value)
    return str(value)


def _dotted(prefix: str, node: Any) -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_dotted(f"{prefix}.{key}" if prefix else str(key), value))
        return out
    return {prefix: node}


def trial_values(cfg: Config, setup: str, trial_dir: Path, plan: Optional[Path], devices: str,
                 number: int) -> dict[str, Any]:
    """Every value a command's placeholders and ``mutransfer.trial()`` may name: the fixed ones, each transfer
    axis by name and by column, and the resolved config by dotted key."""
    config = _dotted("", dataclasses.asdict(cfg))
    axes = {axis.name: axis_value(cfg, axis) for axis in TRANSFER_AXES}
    by_column = {axis.column: axes[axis.name] for axis in TRANSFER_AXES}
    return {**config, **axes, **by_column, "lr": cfg.optimizer.lr, "log2_lr": math.log2(cfg.optimizer.lr),
            "setup": setup, "seed": cfg.train.seed, "trial_dir": str(trial_dir),
            "plan": str(plan) if plan is not None else "", "devices": devices, "trial": number}


def command_words(trainer: TrainerSpec, values: dict[str, Any]) -> list[str] | str:
    """The command with the trial's values in its placeholders: an argv list, or with ``shell: true`` one string
    (the extra arguments quoted for the shell)."""
    texts = {name: _text(value) for name, value in values.items()}
    words = [fill(word, texts) for word in trainer.templates()]
    if trainer.shell:
        return " ".join([words[0], *(shlex.quote(word) for word in words[1:])])
    return words


def child_environment(trainer: TrainerSpec, trial_dir: Path, threads: int, devices: Optional[str],
                      storage: Optional[str]) -> dict[str, str]:
    """This process's environment less the storage's secrets, with the trial folder, the worker's GPUs
    (``CUDA_VISIBLE_DEVICES``), ``OMP_NUM_THREADS`` from ``--threads`` and the spec's ``env`` over it."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV and not (storage and storage in v)}
    env[TRIAL_DIR_ENV] = str(trial_dir)
    if devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = devices
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    env.update(trainer.environment())
    return env


class CommandTrainer:
    """Runs each claimed trial as the setup's training command, retried ``retries`` times, and turns what it
    reported into the record the built-in loop's trials get."""

    def __init__(self, spec: SweepSpec, run_dir: Path, prefix: str, threads: int = 0,
                 devices: Optional[str] = None, storage: Optional[str] = None,
                 tracker: Optional[TrackerHandle] = None) -> None:
        self.spec, self.run_dir, self.prefix = spec, run_dir, prefix
        self.threads, self.devices, self.storage, self.tracker = threads, devices, storage, tracker

    def fit(self, runs: list[TrialRun], on_eval: OnEval, on_step: Optional[OnStep] = None) -> list[TrainResult]:
        return [self._run(run, lambda step, val, i=i: on_eval(i, step, val),
                          (lambda step, loss, i=i: on_step(i, step, loss)) if on_step else None)
                for i, run in enumerate(runs)]

    def tracker_env(self, run_id: Optional[str]) -> dict[str, str]:
        """The trial's tracker run in the command's environment (``tracking.session.RUN_ID_ENV``). MLflow: also
        ``MLFLOW_RUN_ID``, the tracking URI and the experiment, so ``mlflow.start_run()`` in the command logs into
        that run. W&B: the sweep's group, project and entity, so the command's own ``wandb.init()`` joins the
        group as a run of its own (two writers of one W&B run would collide)."""
        if run_id is None or self.tracker is None:
            return {}
        from ...tracking.session import RUN_ID_ENV

        spec = self.tracker.spec
        env = {RUN_ID_ENV: run_id}
        if spec.kind == "mlflow":
            env.update({"MLFLOW_RUN_ID": run_id, "MLFLOW_EXPERIMENT_NAME": spec.experiment,
                        **({"MLFLOW_TRACKING_URI": spec.uri} if spec.uri else {})})
        else:
            env.update({"WANDB_RUN_GROUP": self.tracker.parent, "WANDB_PROJECT": spec.experiment,
                        **({"WANDB_ENTITY": spec.entity} if spec.entity else {})})
        return env

    def _trial_dir(self, run: TrialRun) -> Path:
        folder = (self.run_dir / TRIALS_DIR / run.key.name(self.prefix) / f"trial-{run.number}").absolute()
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        return folder

    def _plan(self, cfg: Config, folder: Path) -> Optional[Path]:
        """The per-parameter plan at the trial's width, depth and learning rate (``model.factory`` specs)."""
        if not self.spec.model:
            return None
        from ...model_kinds import model_plan
        from ...train.data import vocab_size

        path = folder / PLAN_FILE
        model_plan(cfg, vocab_size(cfg.data)).save(path)
        return path

    def _run(self, run: TrialRun, on_eval: Any, on_step: Any) -> TrainResult:
        trainer = self.spec.trainer_for(run.key.setup)
        folder = self._trial_dir(run)
        plan = self._plan(run.cfg, folder)
        values = trial_values(run.cfg, run.key.setup, folder, plan, self.devices or "", run.number)
        write_trial_values(folder, values)
        command = command_words(trainer, values)
        env = {**child_environment(trainer, folder, self.threads, self.devices, self.storage),
               **self.tracker_env(run.tracker_run)}
        failure = TrialFailed("")
        for _ in range(trainer.retries + 1):
            for stale in (folder / RESULT_FILE, folder / PROGRESS_FILE):
                stale.unlink(missing_ok=True)
            watcher = _ProgressWatcher(folder, on_eval, trainer.progress, on_step)
            ended, errors = run_child(command, trainer.shell, Path(trainer.cwd), env,
                                      (folder / STDOUT_LOG, folder / STDERR_LOG), trainer.timeout, watcher.poll)
            watcher.poll()
            try:
                return _train_result(folder, ended, watcher)
            except ResultProblem as exc:
                failure = _failure(ended, trainer, str(exc), errors)
        raise failure


class _ProgressWatcher:
    """Reads the evaluations a trainer appends to ``progress.jsonl`` while it runs and hands each new one to the
    pruner (and each training loss to ``on_step``, the tracker's curve); True from ``poll`` stops the child (a
    pruned trial)."""

    def __init__(self, folder: Path, on_eval: Any, reports: bool, on_step: Any = None) -> None:
        self.folder, self.on_eval, self.reports, self.on_step = folder, on_eval, reports, on_step
        self.seen: list[dict[str, Any]] = []
        self.pruned = False

    def poll(self) -> bool:
        rows = read_progress(self.folder)
        for row in rows[len(self.seen):]:
            self.seen.append(row)
            train = row.get("train_loss")
            if self.on_step is not None and isinstance(train, (int, float)) and isinstance(row["step"], (int, float)):
                self.on_step(int(row["step"]), float(train))
            val = row.get("val_loss")
            if self.reports and isinstance(val, (int, float)) and not self.pruned:
                self.pruned = bool(self.on_eval(int(row["step"]), float(val)))
        return self.pruned


def _failure(ended: ChildExit, trainer: TrainerSpec, problem: str, errors: BoundedLog) -> TrialFailed:
    """Why the command's run is unusable: its reason (the exit and the last stderr lines, a timeout, or what the
    result lacks) and its line (a failed exit's last stderr line; else the reason), which repeats when the same
    failure does (``trainer.max_failures``)."""
    tries = f" (after {trainer.retries + 1} tries)" if trainer.retries else ""
    if ended.timed_out:
        return TrialFailed(f"timed out after {trainer.timeout:g} s{tries}")
    if ended.code != 0:
        how = f"killed by signal {-ended.code}" if ended.code < 0 else f"exited with code {ended.code}"
        stderr = errors.last_lines()
        return TrialFailed(f"the command {how}{tries}" + (f": {stderr}" if stderr else ""), errors.last_lines(1))
    return TrialFailed(f"{problem}{tries}")


def _train_result(folder: Path, ended: ChildExit, watcher: _ProgressWatcher) -> TrainResult:
    """The trial's record: a pruned trial from its progress, a finished one from ``result.json``
    (``ResultProblem`` when the command failed or its result is unusable)."""
    evals = [{"step": int(r["step"]), "val_loss": float(r["val_loss"])} for r in watcher.seen
             if isinstance(r.get("val_loss"), (int, float))]
    if watcher.pruned:
        last = evals[-1] if evals else {"step": 0, "val_loss": math.nan}
        return TrainResult(status="stopped", val_loss=last["val_loss"], train_loss=None,
                           initial_loss=evals[0]["val_loss"] if evals else math.nan, steps=int(last["step"]),
                           seconds=ended.seconds, tokens_per_s=0.0, optimizer_fraction=math.nan,
                           peak_memory_mb=math.nan, evals=evals)
    if ended.code != 0 or ended.timed_out:
        raise ResultProblem("the command failed")
    result = read_result(folder)
    return _from_result(result, ended, evals)


def _from_result(result: TrialResult, ended: ChildExit, progress: list[dict[str, Any]]) -> TrainResult:
    evals = [{"step": step, "val_loss": loss} for step, loss in result.curve] or progress
    curve = ([{"step": step, "train_loss": loss} for step, loss in result.train_curve] or
             [{"step": e["step"], "train_loss": math.nan} for e in evals])
    steps = result.steps if result.steps is not None else int(evals[-1]["step"]) if evals else 0
    train_loss = result.train_loss if result.train_loss is not None and math.isfinite(result.train_loss) else None
    first = evals[0]["val_loss"] if evals else math.nan
    return TrainResult(status=TrialStatus.DIVERGED if result.diverged else TrialStatus.OK,
                       val_loss=None if result.diverged else result.val_loss, train_loss=train_loss,
                       initial_loss=first, steps=steps,
                       seconds=result.seconds if result.seconds is not None else ended.seconds,
                       tokens_per_s=result.tokens_per_s if result.tokens_per_s is not None else math.nan,
                       optimizer_fraction=math.nan,
                       peak_memory_mb=result.peak_memory_mb if result.peak_memory_mb is not None else math.nan,
                       curve=curve, evals=evals)
