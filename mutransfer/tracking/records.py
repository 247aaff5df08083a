"""What a tracker is told, as plain data: a trial's identity and params, its end, and a sweep's answer so far."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

__all__ = ["TrialInfo", "TrialEnd", "SweepAnswer", "Param", "trial_key", "run_id_of", "param_value", "param_text",
           "WHOLE_LIMIT"]

Param = str | int | float | bool
WHOLE_LIMIT = 2 ** 53
"""Below this magnitude a float holds every whole number exactly, so a whole float is written as an integer."""


def param_value(value: Param) -> Param:
    """``value`` as every tracker is given it, one spelling per number: a float that is a whole number (below
    ``WHOLE_LIMIT``) becomes that int, so a grid trial's ``-3`` and a probe's or extension's ``-3.0`` are the same
    param; any other float stays a float (written by Python's shortest round-trip ``repr``: ``0.0009765625``,
    ``1e-05``); text, bools and ints are kept."""
    if isinstance(value, float) and value.is_integer() and abs(value) < WHOLE_LIMIT:
        return int(value)
    return value


def param_text(value: Param) -> str:
    """``value``'s one spelling as text (MLflow's params are text): ``param_value`` written by ``str``."""
    return str(param_value(value))


def trial_key(study: str, x: float, seed: int) -> str:
    """A trial's identity across its attempts: its study, searched value and seed (a trial trained again after a
    kill has a new Optuna number but this same key)."""
    return f"{study}/{round(x, 9):g}/s{seed}"


def run_id_of(parent: str, key: str) -> str:
    """A run id fixed by the sweep and the trial's key (W&B ids: letters and digits, at most 64)."""
    return hashlib.sha256(f"{parent}\0{key}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class TrialInfo:
    """One trial as its tracker run shows it: its key (``trial_key``), a readable name and its params (the
    setup, every axis, the learning rate, every searched key, the seed, the Optuna study and trial number)."""

    key: str
    name: str
    params: dict[str, Param]


@dataclass(frozen=True)
class TrialEnd:
    """How a trial ended: ``ok``, ``diverged``, ``pruned``, ``failed`` or ``interrupted`` (trained again later),
    its final loss (None when it has none) and the run's other scalars."""

    status: str
    loss: Optional[float] = None
    scalars: dict[str, float] = field(default_factory=dict)
    step: int = 0
    """The step the run ended at: its end's metrics are logged there."""

    @property
    def finished(self) -> bool:
        """Whether the run ends as finished (its point is not trained again)."""
        return self.status != "interrupted"

    def metrics(self) -> dict[str, float]:
        """The finite scalars to log at the end, the loss as ``loss``."""
        values = {**self.scalars, **({"loss": self.loss} if self.loss is not None else {})}
        return {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and math.isfinite(v)}


@dataclass(frozen=True)
class SweepAnswer:
    """A sweep's answer for its parent run: metrics (each setup's slope and log2 η* per point), tags (each
    setup's verdict), files to attach (summary.json, the figures), and ``step``: the trials it rests on."""

    step: int
    metrics: dict[str, float]
    tags: dict[str, str]
    files: tuple[Path, ...] = ()
    final: bool = False
