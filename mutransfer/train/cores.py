"""The CPU cores this process may use: plain ``os``, no torch, so a command can size its workers before it
imports torch."""

from __future__ import annotations

import os

__all__ = ["available_cores"]


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, e.g. under ``taskset``), not the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
