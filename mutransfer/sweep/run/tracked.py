"""A sweep trial as its tracker run shows it: its params when it starts, its end when it is told."""

from __future__ import annotations

import math
from typing import Optional

from ...schema import Config
from ...train.result import TrainResult
from ...tracking.records import Param, TrialEnd, TrialInfo, trial_key
from ...words import TrialStatus
from ..plan.keys import StudyKey
from ..plan.trial import Held, axis_values

__all__ = ["trial_info", "trial_end", "SCALARS"]

SCALARS = ("initial_loss", "steps", "seconds", "tokens_per_s")
"""A finished trial's scalars logged besides its loss (its last training loss is the curve's last point)."""


def _value(text: str) -> Param:
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def trial_info(key: StudyKey, study: str, number: int, x: float, seed: int, cfg: Config, held: Held) -> TrialInfo:
    """The setup, every axis (trials.csv's columns), the searched column's value, the learning rate, the values
    ``held`` holds, the seed, the study and the Optuna trial number."""
    params: dict[str, Param] = {"setup": key.setup, **axis_values(cfg), key.search.column: x,
                                "lr": cfg.optimizer.lr, "seed": seed, "study": study, "trial": number}
    for override in held.overrides:
        name, _, text = override.partition("=")
        params.setdefault(name, _value(text))
    name = f"{key.setup} {key.where()} {key.search.column}={x:g} s{seed}"
    return TrialInfo(key=trial_key(study, x, seed), name=name, params=params)


def trial_end(result: TrainResult) -> TrialEnd:
    """The trial's status as trials.csv writes it (a stopped run is ``pruned``), its validation loss and scalars."""
    status = TrialStatus.PRUNED if result.status == TrialStatus.STOPPED else result.status
    loss: Optional[float] = result.val_loss if result.val_loss is not None and math.isfinite(result.val_loss) else None
    scalars = {name: float(getattr(result, name)) for name in SCALARS if isinstance(getattr(result, name), (int, float))}
    return TrialEnd(status=str(status), loss=loss if status != TrialStatus.DIVERGED else None, scalars=scalars,
                    step=result.steps)
