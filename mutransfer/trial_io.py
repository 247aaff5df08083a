"""The files a sweep and a user's trainer exchange in a trial's folder, from any language:

- ``trial.json`` (written by the sweep): the trial's values — ``lr``, ``log2_lr``, ``setup``, ``seed``, every
  transfer axis, ``trial_dir``, ``plan``, ``devices`` and the resolved config by dotted key (``config``);
- ``progress.jsonl`` (written by the trainer, optional): one JSON object per evaluation, ``{"step": ..,
  "val_loss": ..}`` and any of ``train_loss``;
- ``result.json`` (written by the trainer): ``{"val_loss": ..}`` required; ``train_loss``, ``steps``, ``curve``
  ([[step, val_loss], ...]), ``train_curve`` ([[step, train_loss], ...]), ``seconds``, ``tokens_per_s``,
  ``peak_memory_mb`` and ``diverged`` optional. A ``val_loss`` that is not finite (``NaN``, ``Infinity`` or
  ``null``) or ``"diverged": true`` is a diverged run.

Plain data: no torch, no Optuna."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .files import PROGRESS_FILE, RESULT_FILE, TRIAL_FILE, atomic_write_text

__all__ = ["TrialResult", "ResultProblem", "read_result", "write_result", "read_progress", "append_progress",
           "write_trial_values", "read_trial_values"]

OPTIONAL_NUMBERS = ("train_loss", "seconds", "tokens_per_s", "peak_memory_mb")


class ResultProblem(ValueError):
    """A result file that is missing, not JSON, or lacks ``val_loss``: the message names the file and what."""


@dataclass(frozen=True)
class TrialResult:
    """What a user's trainer reported for one trial."""

    val_loss: float
    diverged: bool
    steps: Optional[int] = None
    train_loss: Optional[float] = None
    seconds: Optional[float] = None
    tokens_per_s: Optional[float] = None
    peak_memory_mb: Optional[float] = None
    curve: list[tuple[int, float]] = field(default_factory=list)
    """(step, validation loss) per evaluation."""
    train_curve: list[tuple[int, float]] = field(default_factory=list)
    """(step, training loss)."""


def _number(value: Any) -> Optional[float]:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _pairs(path: Path, name: str, value: Any) -> list[tuple[int, float]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise ResultProblem(f"{path}: '{name}' is not a list of [step, loss] pairs")
    out = []
    for step, loss in value:
        number = _number(loss)
        if _number(step) is None:
            raise ResultProblem(f"{path}: '{name}' has a step that is not a number ({step!r})")
        out.append((int(float(step)), number if number is not None else math.nan))
    return out


def read_result(folder: Path) -> TrialResult:
    """The trainer's ``result.json`` in ``folder``; ``ResultProblem`` when it cannot be read as the contract says."""
    path = folder / RESULT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultProblem(f"{path} was not written") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultProblem(f"{path} is not JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(data, dict):
        raise ResultProblem(f"{path} is not a JSON object")
    if "val_loss" not in data:
        raise ResultProblem(f"{path} lacks val_loss")
    raw = data["val_loss"]
    if raw is not None and _number(raw) is None:
        raise ResultProblem(f"{path}: val_loss={raw!r} is not a number")
    val_loss = _number(raw)
    val = val_loss if val_loss is not None else math.nan
    steps = _number(data.get("steps"))
    return TrialResult(val_loss=val, diverged=bool(data.get("diverged")) or not math.isfinite(val),
                       steps=int(steps) if steps is not None else None,
                       **{name: _number(data.get(name)) for name in OPTIONAL_NUMBERS},
                       curve=_pairs(path, "curve", data.get("curve")),
                       train_curve=_pairs(path, "train_curve", data.get("train_curve")))


def write_result(folder: Path, document: dict[str, Any]) -> None:
    """Write ``result.json`` atomically (a reader sees the old file or the new one, never half of one)."""
    atomic_write_text(folder / RESULT_FILE, json.dumps(document) + "\n")


def read_progress(folder: Path) -> list[dict[str, Any]]:
    """The evaluations in ``progress.jsonl`` so far (a line still being written is left for the next read)."""
    path = folder / PROGRESS_FILE
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    rows = []
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and _number(row.get("step")) is not None:
            rows.append(row)
    return rows


def append_progress(folder: Path, row: dict[str, Any]) -> None:
    """Add one evaluation to ``progress.jsonl`` as one whole line."""
    with open(folder / PROGRESS_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
        handle.flush()


def write_trial_values(folder: Path, values: dict[str, Any]) -> None:
    atomic_write_text(folder / TRIAL_FILE, json.dumps(values, indent=2) + "\n")


def read_trial_values(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / TRIAL_FILE).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{folder / TRIAL_FILE} is not a JSON object")
    return data
