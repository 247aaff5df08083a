"""What every command prints with: a rich console sized for a terminal or a log, and number formats."""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["console", "format_number"]


def console(log_width: int = 140, stderr: bool = False) -> Any:
    """A rich console: the terminal's width on a TTY, ``log_width`` columns otherwise (logs, CI)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(width=None if stream.isatty() else log_width, stderr=stderr)


def format_number(value: float) -> str:
    """``2^-5`` for exact powers of two beyond ±3, else 4 significant digits."""
    if value == 0:
        return "0"
    exponent = math.log2(abs(value))
    if abs(exponent - round(exponent)) < 1e-9 and abs(exponent) >= 3:
        return f"2^{int(round(exponent))}"
    return f"{value:.4g}"
