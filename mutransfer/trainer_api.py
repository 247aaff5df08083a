"""What a Python trainer run by a sweep (a spec's ``trainer`` section) calls: ``mutransfer.trial()`` for the
trial's values, ``mutransfer.report(step=..., val_loss=...)`` at each evaluation. Both find the trial's folder
in the environment (``MUTRANSFER_TRIAL_DIR``); the files they read and write are ``mutransfer.trial_io``'s, so a
trainer in any other language writes them itself. Imports no torch."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .errors import UserError
from .files import TRIAL_DIR_ENV
from .trial_io import append_progress, read_progress, read_trial_values, write_result

__all__ = ["Trial", "NoTrial", "trial", "report", "trial_dir"]


class NoTrial(UserError, SystemExit):
    """``trial()`` outside a sweep, or with a trial folder it cannot read. A ``UserError`` (``except Exception``
    catches it); left uncaught in a script, it ends the script as ``sys.exit(message)`` does: the one line
    ``error: ...; fix`` on stderr, exit status 1, no traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        UserError.__init__(self, message, hint)
        self.code = f"error: {self.one_line()}"


@dataclass(frozen=True)
class Trial:
    """One trial's values: the base learning rate the search sampled (each parameter's LR is in the plan), where
    it trains on every transfer axis, its seed, its folder and plan file, its GPUs, and every value by name
    (``values["optimizer.weight_decay"]``, as the command's placeholders name them)."""

    lr: float
    log2_lr: float
    setup: str
    seed: int
    width: int
    depth: int
    steps: int
    batch_size: int
    tokens: int
    trial_dir: Path
    plan: Optional[Path]
    devices: str
    values: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def trial_dir() -> Optional[Path]:
    """The folder of the trial this process runs for, None outside a sweep."""
    folder = os.environ.get(TRIAL_DIR_ENV)
    return Path(folder) if folder else None


def trial() -> Trial:
    """The values of the trial this process runs for; outside a sweep, ``NoTrial``: one line that says so."""
    folder = trial_dir()
    if folder is None:
        raise NoTrial(f"no trial: {TRIAL_DIR_ENV} is not set", "run this trainer through `mutransfer sweep` with "
                      "a trainer section, or pass its values as arguments")
    try:
        values = read_trial_values(folder)
    except (OSError, ValueError) as exc:
        raise NoTrial(f"cannot read the trial's values in {folder}: {exc}", "rerun the trial from its sweep") from None
    return Trial(lr=float(values["lr"]), log2_lr=float(values["log2_lr"]), setup=str(values["setup"]),
                 seed=int(values["seed"]), width=int(values["width"]), depth=int(values["depth"]),
                 steps=int(values["steps"]), batch_size=int(values["batch_size"]), tokens=int(values["tokens"]),
                 trial_dir=folder, plan=Path(values["plan"]) if values.get("plan") else None,
                 devices=str(values.get("devices", "")), values=values)


def report(step: int, val_loss: float, train_loss: Optional[float] = None, **metrics: float) -> bool:
    """Record one evaluation: a line of ``progress.jsonl`` (what a pruner reads while the trainer runs) and
    ``result.json`` rewritten atomically with this loss as the result so far and every evaluation as its curve.
    ``metrics``: any of ``seconds``, ``tokens_per_s``, ``peak_memory_mb``. A non-finite ``val_loss`` records a
    diverged run. Outside a sweep it writes nothing and returns False."""
    folder = trial_dir()
    if folder is None:
        return False
    row: dict[str, Any] = {"step": int(step), "val_loss": float(val_loss)}
    if train_loss is not None:
        row["train_loss"] = float(train_loss)
    append_progress(folder, row)
    rows = read_progress(folder)
    train = [[int(r["step"]), r["train_loss"]] for r in rows if isinstance(r.get("train_loss"), (int, float))]
    document: dict[str, Any] = {
        "val_loss": float(val_loss) if math.isfinite(val_loss) else None, "steps": int(step),
        "diverged": not math.isfinite(val_loss),
        "curve": [[int(r["step"]), r["val_loss"]] for r in rows if isinstance(r.get("val_loss"), (int, float))],
        **({"train_loss": float(train_loss), "train_curve": train} if train_loss is not None else {}),
        **{name: float(value) for name, value in metrics.items()}}
    write_result(folder, document)
    return True
