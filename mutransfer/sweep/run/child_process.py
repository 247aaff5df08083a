"""One child process of a sweep worker (a user's training command): started in its own process group, dying
with its worker, its output kept bounded in files, stopped at a timeout, on request or on Ctrl-C/SIGTERM —
SIGTERM to the whole group, SIGKILL after a grace period — and no process of its group left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Optional

__all__ = ["ChildExit", "run_child", "BoundedLog", "GRACE_SECONDS", "LOG_BYTES", "POLL_SECONDS"]

GRACE_SECONDS = 10.0
"""Seconds between SIGTERM and SIGKILL when a child is stopped."""
LOG_BYTES = 1 << 20
"""The most bytes of one output stream a trial's folder keeps: its first half and its last half."""
POLL_SECONDS = 0.2
CHUNK = 1 << 14
PR_SET_PDEATHSIG = 1


class BoundedLog:
    """Copies a pipe into a file: the first ``limit / 2`` bytes as they come, then only the last ``limit / 2``
    (kept in memory, written with a note of what was dropped when the pipe closes)."""

    def __init__(self, pipe: IO[bytes], path: Path, limit: int = LOG_BYTES) -> None:
        self.pipe, self.path, self.half = pipe, path, limit // 2
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        written, dropped = 0, 0
        tail: deque[bytes] = deque()
        tail_bytes = 0
        with open(self.path, "wb") as out:
            for chunk in iter(lambda: self.pipe.read1(CHUNK), b""):  # type: ignore[attr-defined]
                if written < self.half:
                    head, chunk = chunk[:self.half - written], chunk[self.half - written:]
                    out.write(head)
                    out.flush()
                    written += len(head)
                if chunk:
                    tail.append(chunk)
                    tail_bytes += len(chunk)
                    while tail_bytes > self.half:
                        excess = min(tail_bytes - self.half, len(tail[0]))
                        tail[0] = tail[0][excess:]
                        if not tail[0]:
                            tail.popleft()
                        tail_bytes -= excess
                        dropped += excess
            if dropped:
                out.write(f"\n[... {dropped} bytes dropped ...]\n".encode())
            out.writelines(tail)

    def join(self) -> None:
        self.thread.join()

    def last_lines(self, count: int = 3) -> str:
        """The file's last ``count`` non-empty lines joined by `` | `` (at most 300 characters), for a reason."""
        try:
            text = self.path.read_bytes()[-8192:].decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-count:])[-300:]


@dataclass(frozen=True)
class ChildExit:
    """How a child ended: its exit code (negative: the signal that ended it), whether the timeout or a request
    stopped it, and its wall time."""

    code: int
    timed_out: bool
    stopped: bool
    seconds: float


def _die_with_worker() -> None:
    """In the child, before it runs: a process group of its own, and SIGKILL when the worker dies (Linux)."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the child's group, SIGKILL after ``grace`` seconds if the child still runs."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def run_child(command: list[str] | str, shell: bool, cwd: Path, env: dict[str, str], logs: tuple[Path, Path],
              timeout: Optional[float] = None, stop_requested: Callable[[], bool] = lambda: False,
              grace: float = GRACE_SECONDS) -> tuple[ChildExit, BoundedLog]:
    """Run ``command`` to its end, the timeout, or until ``stop_requested()`` (polled) says stop; on any
    exception here (Ctrl-C, SIGTERM) stop it and re-raise. Returns how it ended and its stderr log."""
    started = time.monotonic()
    proc = subprocess.Popen(command, shell=shell, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_die_with_worker)
    assert proc.stdout is not None and proc.stderr is not None
    out_log, err_log = BoundedLog(proc.stdout, logs[0]), BoundedLog(proc.stderr, logs[1])
    timed_out = stopped = False
    try:
        while proc.poll() is None:
            try:
                proc.wait(timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            if timeout is not None and time.monotonic() - started > timeout:
                timed_out = True
            elif stop_requested():
                stopped = True
            if timed_out or stopped:
                _stop(proc, grace)
                break
    except BaseException:
        _stop(proc, grace)
        raise
    finally:
        _signal_group(proc.pid, signal.SIGKILL)  # what the trainer left running in its group
        out_log.join()
        err_log.join()
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return ChildExit(code, timed_out, stopped, time.monotonic() - started), err_log
