"""Telling Optuna how a trial ended: its result, curve and evaluations, or why it failed."""

from __future__ import annotations

import math
from typing import Iterable, Optional

import optuna
from optuna.trial import TrialState

from ...schema import Config
from ...train.result import TrainResult
from ...words import TrialStatus
from ..store.attrs import TrialAttrs

__all__ = ["record_result", "record_failure", "record_interrupted", "TrialFailed", "CURVE_POINTS"]

CURVE_POINTS = 200
"""The most (step, train loss) points a trial's stored curve keeps."""
MESSAGE_CHARS = 500


class TrialFailed(RuntimeError):
    """A trial that could not train, with a reason that says what happened in full (recorded as it is) and its
    ``line``: the failure in one line that a repeat of it repeats (the last stderr line; the reason without one)."""

    def __init__(self, reason: str, line: str = "") -> None:
        super().__init__(reason)
        self.line = line or reason


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
    status = {TrialStatus.STOPPED: TrialStatus.PRUNED}.get(result.status, result.status)
    noise = {"noise": [[e["step"], _finite(e["noise_g2"]), _finite(e["noise_trace"])] for e in result.evals
                       if "noise_g2" in e]} if result.noise_measured else {}
    for name, value in {**result.summary(), "status": status, "curve": curve,
                        "evals": [[e["step"], e["val_loss"]] for e in result.evals], **noise}.items():
        trial.set_user_attr(name, value if not (isinstance(value, float) and not math.isfinite(value)) else None)
    if status == TrialStatus.PRUNED:
        _tell_running(study, trial, state=TrialState.PRUNED)
    elif status == TrialStatus.DIVERGED:
        from ...train.data import vocab_size  # torch: only a diverged trial needs the corpus's vocabulary

        fallback = cfg.train.diverge_factor * math.log(vocab_size(cfg.data))  # a loss of NaN from step 1
        last = result.train_loss if result.train_loss is not None else fallback
        _tell_running(study, trial, max(last, result.initial_loss if math.isfinite(result.initial_loss) else 0.0))
    else:
        _tell_running(study, trial, result.val_loss)


def _tell_running(study: optuna.Study, trial: optuna.Trial, value: Optional[float] = None,
                  state: Optional[TrialState] = None) -> None:
    """Tell a trial's end. A trial that another worker declared dead between its attributes and this tell (its
    heartbeat went stale while the storage was unreachable) raises ``UpdateFinishedTrialError``, as setting an
    attribute of it does, so the worker drops the result and the point is trained again."""
    try:
        study.tell(trial, value, state=state)
    except ValueError:
        if study._storage.get_trial(trial._trial_id).state.is_finished():
            raise optuna.exceptions.UpdateFinishedTrialError(f"trial {trial.number} was finished by another "
                                                             "worker") from None
        raise


def record_failure(study: optuna.Study, trial: optuna.Trial, exc: BaseException) -> None:
    """Fail a trial whose training raised, keeping the error's type and message (its first 500 characters) and
    its failure in one line (``TrialAttrs.failure``); a trial another worker declared dead meanwhile is left as it is
    (its point is trained again)."""
    message = str(exc) if isinstance(exc, TrialFailed) else f"{type(exc).__name__}: {exc}"
    line = exc.line if isinstance(exc, TrialFailed) else message
    try:
        TrialAttrs.write(trial, status=TrialStatus.FAILED, message=message[:MESSAGE_CHARS],
                         failure=line[:MESSAGE_CHARS])
    except optuna.exceptions.UpdateFinishedTrialError:
        return
    study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)


def record_interrupted(study: optuna.Study, trials: Iterable[optuna.Trial]) -> None:
    """Fail the trials a Ctrl-C stopped, marked ``interrupted`` so that their points are trained again."""
    for trial in trials:
        try:
            TrialAttrs.write(trial, status=TrialStatus.INTERRUPTED)
        except optuna.exceptions.UpdateFinishedTrialError:
            continue  # told its result just before the signal
        study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
