"""Ctrl-C and SIGTERM in a sweep's processes: raised as exceptions (``KeyboardInterrupt``, ``Terminated``)
anywhere except inside a storage call, where they are held until the call returns.

A storage call must not be cut half-way: Optuna's journal file lock is not safe against an exception raised
inside it (an interrupted release unlinks its file twice and fails with ``FileNotFoundError``, an interrupted
acquire can leave the lock behind), and a journal storage cut while it replays the log holds a half-applied
state. Training, waiting and sleeping stay interruptible at once."""

from __future__ import annotations

import functools
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, TypeVar

__all__ = ["Terminated", "Interrupts", "storage_call", "held"]

Method = TypeVar("Method", bound=Callable[..., Any])


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: running trials marked for a re-run, the tables written; exit 143."""


class Interrupts:
    """The process's SIGINT/SIGTERM handler while ``catching`` runs: the signal raises its exception at once,
    or, inside ``held`` (main thread), when the outermost held section ends."""

    def __init__(self) -> None:
        self._depth = 0
        self._pending: Optional[type[KeyboardInterrupt]] = None

    def _handle(self, signum: int, frame: Any) -> None:
        error = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        if self._depth:
            self._pending = self._pending or error
            return
        raise error()

    @contextmanager
    def catching(self) -> Iterator["Interrupts"]:
        """Install the handler (main thread) for SIGTERM, and for SIGINT unless the process ignores it (started
        with ``&``); the previous handlers come back after."""
        wanted = [signal.SIGTERM]
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            wanted.append(signal.SIGINT)
        previous = {signum: signal.signal(signum, self._handle) for signum in wanted}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    @contextmanager
    def held(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth and self._pending is not None:
                error, self._pending = self._pending, None
                raise error()


@contextmanager
def held() -> Iterator[None]:
    """A section that SIGINT/SIGTERM do not cut when ``Interrupts.catching`` is active in this process (its
    signal arrives when the section ends); a plain section otherwise, and in threads other than the main one,
    which never receive signals."""
    main = threading.current_thread() is threading.main_thread()
    owner = getattr(signal.getsignal(signal.SIGTERM), "__self__", None) if main else None
    if isinstance(owner, Interrupts):
        with owner.held():
            yield
    else:
        yield


def storage_call(method: Method) -> Method:
    """``method`` run inside ``held``."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with held():
            return method(*args, **kwargs)

    return call  # type: ignore[return-value]
