"""A tracker that never breaks a sweep: every library call runs on one background thread, a call the trial waits
for waits at most ``CALL_SECONDS``, metrics are queued and sent in batches, and the first failure (an unreachable
server, a broken install, a bad key) prints one warning and turns the tracker off for the rest of the run. The
sweep's own files stay the record."""

from __future__ import annotations

import queue
import sys
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as CallTimeout
from typing import Any, Callable, Optional, TypeVar

from .backend import TrackerBackend

__all__ = ["GuardedTracker", "CALL_SECONDS", "START_SECONDS", "QUEUE_CALLS", "REASON_CHARS", "reason"]

T = TypeVar("T")

CALL_SECONDS = 15.0
"""The longest a trial waits for one tracker call (a run's start or end)."""
START_SECONDS = 60.0
"""The longest the sweep waits for the tracker to start (its library imported, its experiment found)."""
QUEUE_CALLS = 10_000
"""Calls queued at most; past that, metrics are dropped rather than held in memory."""
REASON_CHARS = 300
"""A library's own message is cut to about this many characters (at a word, marked ``…``) in the warning."""


def reason(exc: BaseException) -> str:
    """Why a call failed, on one line: the tracker's own ``UserError`` whole, a library's error as its type and the
    first line of its message, cut at a word past ``REASON_CHARS``."""
    from ..errors import UserError

    if isinstance(exc, UserError):
        return exc.one_line()
    lines = str(exc).splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines and lines[0] else type(exc).__name__
    if len(text) <= REASON_CHARS:
        return text
    return text[:REASON_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:") + " …"


class GuardedTracker:
    """Runs a ``TrackerBackend``'s calls on its own thread, bounded in time; ``off`` after the first failure."""

    def __init__(self, make: Callable[[], TrackerBackend], where: str) -> None:
        self.where = where
        self.off = False
        self.backend: Optional[TrackerBackend] = None
        self.calls: queue.Queue[Optional[tuple[Callable[[], Any], Future[Any]]]] = queue.Queue(QUEUE_CALLS)
        self.thread = threading.Thread(target=self._serve, name="mutransfer-tracker", daemon=True)
        self.thread.start()
        self.backend = self.wait(make, START_SECONDS)

    def _serve(self) -> None:
        while True:
            item = self.calls.get()
            if item is None:
                return
            call, done = item
            if self.off:
                done.set_result(None)
                continue
            try:
                done.set_result(call())
            except BaseException as exc:  # noqa: BLE001 — any failure of the library turns the tracker off
                self._fail(reason(exc))
                done.set_result(None)

    def _fail(self, why: str) -> None:
        if not self.off:
            self.off = True
            from ..errors import redact

            print(redact(f"warning: {self.where}: {why}; the sweep goes on without logging to it (its own files keep "
                         "every result)"), file=sys.stderr, flush=True)

    def _submit(self, call: Callable[[], T]) -> Optional[Future[T]]:
        if self.off:
            return None
        done: Future[T] = Future()
        try:
            self.calls.put_nowait((call, done))
        except queue.Full:
            return None
        return done

    def wait(self, call: Callable[[], T], seconds: float = CALL_SECONDS) -> Optional[T]:
        """``call``'s result, or None when the tracker is off, the call failed or took over ``seconds`` (then
        the tracker is turned off)."""
        done = self._submit(call)
        if done is None:
            return None
        try:
            return done.result(timeout=seconds)
        except CallTimeout:
            self._fail(f"no answer within {seconds:g} s")
            return None

    def send(self, use: Callable[[TrackerBackend], Any]) -> None:
        """Queue ``use(backend)`` without waiting for it."""
        backend = self.backend
        if backend is not None:
            self._submit(lambda: use(backend))

    def call(self, use: Callable[[TrackerBackend], T], seconds: float = CALL_SECONDS) -> Optional[T]:
        """``use(backend)``, waited for at most ``seconds``."""
        backend = self.backend
        return None if backend is None else self.wait(lambda: use(backend), seconds)

    def close(self, seconds: float = CALL_SECONDS) -> None:
        """Send what is queued and close the library (each bounded); the thread ends."""
        if self.backend is not None:
            self.call(lambda backend: backend.close(), seconds)
        self.off = True
        try:
            self.calls.put_nowait(None)
        except queue.Full:
            pass
        self.thread.join(timeout=1.0)
