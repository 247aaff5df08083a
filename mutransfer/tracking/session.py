"""A sweep's tracker from start to end: the parent found again or made (its id kept in the run directory's
``tracker.json`` and in the Optuna storage, so a resumed sweep, every worker and every machine sharing a
database log into the same one), each trial's run, and the sweep's answers."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .backend import TrackerBackend
from .guard import GuardedTracker
from .records import SweepAnswer, TrialEnd, TrialInfo
from .spec import TRACKERS, TrackerSpec

__all__ = ["TrackerHandle", "connect", "SweepTracking", "TrialTracking", "TRACKER_FILE",
           "PARENT_ATTR", "FLUSH_SECONDS", "RUN_ID_ENV", "recorded_tracker"]

TRACKER_FILE = "tracker.json"
"""The run directory's record of each tracker parent it logged into (one entry per study prefix and tracker)."""
PARENT_ATTR = "mutransfer_tracker"
"""The Optuna study attribute (on each of the sweep's studies) holding the same entries, for other machines."""
FLUSH_SECONDS = 2.0
"""A trial's metrics are sent in batches at most this often (and at its end)."""
RUN_ID_ENV = "MUTRANSFER_TRACKER_RUN_ID"
"""The trial's tracker run id in a training command's environment (``sweep.run.command_trainer``)."""


@dataclass(frozen=True)
class TrackerHandle:
    """What a worker process needs to log into a sweep's parent (picklable)."""

    spec: TrackerSpec
    parent: str
    run_dir: Path


def connect(spec: TrackerSpec, run_dir: Path) -> GuardedTracker:
    """The tracker's library behind a guard (``guard.GuardedTracker``): started on its thread, bounded in time."""

    def make() -> TrackerBackend:
        if spec.kind == "mlflow":
            from .mlflow_backend import MlflowBackend

            return MlflowBackend(spec)
        from .wandb_backend import WandbBackend

        return WandbBackend(spec, run_dir)

    return GuardedTracker(make, spec.where())


def _entry(spec: TrackerSpec, prefix: str) -> dict[str, str]:
    return {"prefix": prefix, "tracker": spec.kind, "uri": spec.uri, "experiment": spec.experiment,
            "entity": spec.entity}


def _find(entries: Any, wanted: dict[str, str]) -> Optional[str]:
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, dict) and all(entry.get(k) == v for k, v in wanted.items()):
            parent = entry.get("parent")
            return parent if isinstance(parent, str) and parent else None
    return None


def _with(entries: Any, wanted: dict[str, str], parent: str) -> list[dict[str, str]]:
    kept = [e for e in entries if isinstance(e, dict) and not all(e.get(k) == v for k, v in wanted.items())] \
        if isinstance(entries, list) else []
    return [*kept, {**wanted, "parent": parent}]


def _read_file(run_dir: Path) -> Any:
    try:
        return json.loads((run_dir / TRACKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []


def _write(run_dir: Path, entries: list[dict[str, str]]) -> None:
    from ..files import atomic_write_text

    atomic_write_text(run_dir / TRACKER_FILE, json.dumps(entries, indent=2) + "\n")


class SweepTracking:
    """The sweep's side: its parent, each answer so far, then the final one with its files."""

    def __init__(self, handle: TrackerHandle, tracker: GuardedTracker) -> None:
        self.handle, self.tracker = handle, tracker

    @classmethod
    def start(cls, spec: TrackerSpec, run_dir: Path, prefix: str, study: Any,
              fingerprint: str = "") -> Optional[SweepTracking]:
        """The parent of the sweep ``prefix``: the one recorded in the run directory, or on ``study`` (the sweep's
        first Optuna study, which carries it to other machines), while the tracker still has it, else the one the
        tracker holds for the sweep's ``fingerprint``, else a new one; None when the tracker cannot be used
        (warned once)."""
        wanted = _entry(spec, prefix)
        stored = _find(_read_file(run_dir), wanted) or _find(study.user_attrs.get(PARENT_ATTR), wanted)
        tracker = connect(spec, run_dir)
        parent = tracker.call(lambda backend: backend.open_sweep(prefix, stored, fingerprint))
        if parent is None:
            tracker.close()
            return None
        if parent != stored:
            study.set_user_attr(PARENT_ATTR, _with(study.user_attrs.get(PARENT_ATTR), wanted, parent))
        _write(run_dir, _with(_read_file(run_dir), wanted, parent))
        return cls(TrackerHandle(spec, parent, run_dir), tracker)

    def answer(self, answer: SweepAnswer) -> None:
        parent = self.handle.parent
        self.tracker.call(lambda backend: backend.log_answer(parent, answer))

    def close(self) -> None:
        self.tracker.close()


class TrialTracking:
    """A worker's side: a run per trial, its curve sent in batches, its end."""

    def __init__(self, handle: TrackerHandle) -> None:
        self.handle = handle
        self.tracker = connect(handle.spec, handle.run_dir)
        self.pending: dict[str, list[tuple[int, dict[str, float]]]] = {}
        self.sent = time.monotonic()

    def start(self, info: TrialInfo) -> Optional[str]:
        """The trial's run id (None when the tracker is off)."""
        parent = self.handle.parent
        run = self.tracker.call(lambda backend: backend.start_trial(parent, info))
        if run is not None:
            self.pending[run] = []
        return run

    def metrics(self, run: Optional[str], step: int, values: dict[str, float]) -> None:
        if run is None or run not in self.pending:
            return
        self.pending[run].append((step, values))
        if time.monotonic() - self.sent >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        self.sent = time.monotonic()
        for run, rows in self.pending.items():
            if rows:
                self.tracker.send(lambda backend, run=run, rows=list(rows): backend.log(run, rows))
                rows.clear()

    def end(self, run: Optional[str], end: TrialEnd) -> None:
        """Send the trial's last metrics and its end, waiting (bounded) until the tracker has them."""
        if run is None:
            return
        self.flush()
        self.pending.pop(run, None)
        self.tracker.call(lambda backend: backend.end_trial(run, end))

    def close(self) -> None:
        self.tracker.close()


def recorded_tracker(run_dir: Path, kind: Optional[str]) -> Optional[TrackerSpec]:
    """The tracker a sweep in ``run_dir`` logged to (its ``tracker.json``) of ``kind`` (any when None), with its
    URI and experiment, so that ``verify --log`` logs where the sweep did; None when it logged to none."""
    entries = _read_file(run_dir)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("tracker") in TRACKERS and kind in (None, entry["tracker"]):
            return TrackerSpec(kind=entry["tracker"], uri=str(entry.get("uri") or ""),
                               experiment=str(entry.get("experiment") or ""), entity=str(entry.get("entity") or ""))
    return None
