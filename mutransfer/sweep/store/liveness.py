"""Is the worker that holds a trial still alive? Host, pid and process start time recorded on the trial,
checked against /proc (a recycled pid or an unreaped zombie is not a live worker)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Optional

__all__ = ["process_identity", "is_alive"]


def process_identity() -> dict[str, Any]:
    """Host, pid and the process start time (so a recycled pid is not mistaken for a live worker)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "proc_start": _start_time(os.getpid())}


def _stat(pid: int) -> Optional[list[str]]:
    """The fields of /proc/<pid>/stat after the command name (state first), or None where there is no /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _start_time(pid: int) -> Optional[str]:
    fields = _stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def is_alive(attrs: dict[str, Any]) -> bool:
    pid = attrs.get("pid")
    if attrs.get("host") != socket.gethostname() or not isinstance(pid, int):
        return True  # another machine's trial: its own heartbeat (RDB storage) decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):
        return False  # a killed worker nobody has reaped yet
    recorded = attrs.get("proc_start")
    return recorded is None or _start_time(pid) in (None, recorded)
