"""Keeping training trials' heartbeats fresh in a database storage."""

from __future__ import annotations

import threading

import optuna

from .storage import heartbeat_of

__all__ = ["Heartbeat"]


class Heartbeat:
    """Keeps RDB trials' heartbeats fresh while they train (Optuna only does this inside ``optimize``); a
    context manager that does nothing with a journal file, which has no heartbeat."""

    def __init__(self, storage: optuna.storages.BaseStorage, trial_ids: list[int]) -> None:
        self.storage, self.trial_ids, self.stop = storage, trial_ids, threading.Event()
        interval = heartbeat_of(storage)
        self.thread = threading.Thread(target=self._beat, args=(interval,), daemon=True) if interval else None

    def _beat(self, interval: int) -> None:
        while True:
            try:
                for trial_id in self.trial_ids:
                    self.storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - an outage past the storage's patience: the training thread reports it
                return
            if self.stop.wait(interval):
                return

    def __enter__(self) -> "Heartbeat":
        if self.thread:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
