"""An import's ``config.yaml``: the source (path, size, digest), the mapping, what the conversion decided, and
each setup's search settings in a sweep record's shape (so every reader of a run directory finds them where a
sweep keeps them). The record decides whether an import into an existing directory is the same one again (a
no-op), a changed one (refused unless ``--force``, naming the change) or lands on a sweep (always refused)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Optional

from ..errors import UserError
from ..files import CONFIG_FILE, TRIALS_FILE, first_difference, load_yaml
from ..schema import LR_COLUMN, LR_KEY
from .convert import Imported
from .mapping import ImportMapping
from .source import Source

__all__ = ["IMPORT_KIND", "IMPORT_VERSION", "PENDING", "import_record", "import_fingerprint", "existing_import"]

IMPORT_KIND = "import"
IMPORT_VERSION = 1
PENDING = "pending"
"""The fingerprint of an import being written: the record is written first with it and last with the real one, so
an import stopped half-way is never taken for a finished one (the next import replaces it)."""


def import_fingerprint(source: Source, mapping: ImportMapping) -> str:
    """What makes two imports the same: the source's content (kind, digest, study) and the whole mapping; the
    path is left out (the same table moved is the same import)."""
    content = {"kind": source.kind, "sha256": source.sha256, "study": source.study, "mapping": mapping.as_dict()}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:16]


def import_record(source: Source, mapping: ImportMapping, imported: Imported) -> dict[str, Any]:
    """config.yaml's document for an import."""
    trials = imported.trials
    setups = []
    for label, part in trials.groupby("setup", sort=False):
        low, high = (math.log2(v) for v in mapping.lr_range) if mapping.lr_range else \
            (float(part[LR_COLUMN].min()), float(part[LR_COLUMN].max()))
        setups.append({"label": str(label), "search": [{"key": LR_KEY, "scale": "log2", "min": low, "max": high,
                                                        "step": imported.steps[str(label)]}]})
    return {"kind": IMPORT_KIND, "version": IMPORT_VERSION, "fingerprint": import_fingerprint(source, mapping),
            "source": source.as_dict(), "mapping": mapping.as_dict(), "axes": list(imported.axes),
            "dropped_axes": dict(imported.dropped_axes), "binned": imported.binned, "seeds": imported.seeds,
            "rows": {"read": imported.rows_read, "kept": imported.rows_kept, **imported.counts},
            "skipped_points": imported.skipped_points, "retried_points": imported.retried_points,
            "renamed_setups": imported.renamed_setups,
            "spec": {"name": Path(source.path).stem if source.study is None else source.study, "setups": setups}}


def _record(run_dir: Path) -> Optional[dict[str, Any]]:
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        return None
    record = load_yaml(path, "run config")
    return record if isinstance(record, dict) else {}


def existing_import(run_dir: Path, record: dict[str, Any], force: bool) -> bool:
    """True when ``run_dir`` already holds this very import (nothing to do); False when it is free or ``force``
    replaces a different import. Refuses a sweep's directory, and a different import without ``force``."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out {run_dir} is a file", "give a directory for the imported run")
    old = _record(run_dir) if run_dir.is_dir() else None
    if old is None:
        if (run_dir / TRIALS_FILE).exists():
            raise UserError(f"--out {run_dir} holds a run's trials.csv but no import record",
                            "give a new --out directory (a sweep's run directory is never overwritten)")
        return False
    if old.get("kind") != IMPORT_KIND:
        raise UserError(f"--out {run_dir} holds a sweep, not an import",
                        "give a new --out directory (a sweep's run directory is never overwritten)")
    if old.get("fingerprint") == record["fingerprint"]:
        return True
    if force or old.get("fingerprint") == PENDING:
        return False
    change = first_difference({"source": _content(old.get("source")), "mapping": old.get("mapping")},
                              {"source": _content(record["source"]), "mapping": record["mapping"]})
    raise UserError(f"--out {run_dir} holds a different import: {change or 'its record differs'}",
                    "give a new --out directory, or --force to replace it")


def _content(source: Any) -> Any:
    """A source record without its path (moving a table does not change it)."""
    return {k: v for k, v in source.items() if k != "path"} if isinstance(source, dict) else source
