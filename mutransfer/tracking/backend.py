"""What a tracker library is asked to do, whichever it is (``mlflow_backend``, ``wandb_backend``)."""

from __future__ import annotations

from typing import Optional, Protocol

from .records import SweepAnswer, TrialEnd, TrialInfo

__all__ = ["TrackerBackend", "KIND_TAG", "KEY_TAG", "SWEEP_TAG", "RETRY_TAG", "STATUS_TAG", "FINGERPRINT_TAG", "TRIAL_KIND", "SWEEP_KIND"]

KIND_TAG = "mutransfer.kind"
"""``sweep`` on a parent run, ``trial`` on a trial's run."""
KEY_TAG = "mutransfer.trial_key"
"""A trial run's ``records.trial_key``: the same for every attempt at that trial."""
SWEEP_TAG = "mutransfer.sweep"
"""The study prefix the runs belong to."""
FINGERPRINT_TAG = "mutransfer.fingerprint"
"""A parent run's sweep fingerprint (its record's): with the prefix, what finds the parent again."""
STATUS_TAG = "mutransfer.status"
"""A trial run's status as trials.csv writes it (ok, diverged, pruned, failed, interrupted)."""
RETRY_TAG = "mutransfer.retry_of"
"""On a trial run started again after a kill: the run id of the attempt it replaces (marked KILLED)."""
TRIAL_KIND, SWEEP_KIND = "trial", "sweep"


class TrackerBackend(Protocol):
    """One tracker library. Every call may raise or hang: ``guard.GuardedTracker`` bounds and catches them."""

    def open_sweep(self, name: str, existing: Optional[str], fingerprint: str) -> str:
        """The sweep's parent (an MLflow run id, a W&B group): ``existing`` when it is still there, else the one
        the tracker holds for this sweep (its name and ``fingerprint``; empty: none to look for), else a new one."""
        ...

    def start_trial(self, parent: str, info: TrialInfo) -> str:
        """A run for the trial under ``parent``; an earlier attempt at the same key is replaced or marked as
        retried, never left as a second finished run. Returns the run's id."""
        ...

    def log(self, run: str, rows: list[tuple[int, dict[str, float]]]) -> None:
        """Metrics at their steps, in one batch."""
        ...

    def end_trial(self, run: str, end: TrialEnd) -> None:
        ...

    def log_answer(self, parent: str, answer: SweepAnswer) -> None:
        """The sweep's answer so far (or its final one, with the summary and figures) on the parent."""
        ...

    def close(self) -> None:
        ...
