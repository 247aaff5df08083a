"""Run-directory layout, file names and atomic writes (temp file + rename: old or new, never half)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from .errors import UserError

__all__ = [
    "CONFIG_FILE",
    "METRICS_FILE",
    "RESULT_FILE",
    "METRICS_COLUMNS",
    "atomic_write_text",
    "write_json",
    "write_csv",
    "new_run_dir",
]

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.csv"
RESULT_FILE = "result.json"
METRICS_COLUMNS = ("step", "train_loss", "lr", "tokens", "seconds")


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def write_json(path: Path, obj: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, sort_keys=False) + "\n")


def write_csv(path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def new_run_dir(out: Optional[Path], kind: str, root: Path = Path("runs")) -> Path:
    """``out`` if given, else ``runs/<kind>-<timestamp>``; refuses a path that is an existing file."""
    path = out if out is not None else root / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and not path.is_dir():
        raise UserError(f"--out {path} is an existing file", "give a directory path")
    path.mkdir(parents=True, exist_ok=True)
    return path
