"""A number and its interval as text: the one formatter the command line's tables, the study pages' Markdown
tables and the benchmark scripts share."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Optional

__all__ = ["format_bound", "format_interval", "interval_cell", "SIGNIFICANT_DIGITS"]

SIGNIFICANT_DIGITS = 12
"""What an analysis carries; beyond it, summation order decides a value on a rounding edge."""


def _finite_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and math.isfinite(value)


def format_bound(value: Any, fmt: str = "+.2f", carried: bool = False) -> str:
    """A number in ``fmt``, or ``…`` for a missing, infinite or non-numeric one (an open end of an interval).
    ``carried``: first cut the number to the ``SIGNIFICANT_DIGITS`` the analysis carries, so a value exactly on a
    rounding edge (a slope of −0.205 from grid points) prints the same whatever order its sums ran in."""
    if not _finite_number(value):
        return "…"
    if carried:
        value = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return format(value, fmt)


def format_interval(values: Optional[Sequence[Any]], fmt: str = "+.2f", missing: str = "-",
                    carried: bool = False) -> str:
    """``[-1.02, +0.61]``, each end as ``format_bound`` writes it; ``missing`` when there is no interval."""
    if not values:
        return missing
    return f"[{format_bound(values[0], fmt, carried)}, {format_bound(values[1], fmt, carried)}]"


def interval_cell(value: Any, ci: Optional[Sequence[Any]] = None, fmt: str = "+.2f", carried: bool = True) -> str:
    """``-0.20 [-1.02, +0.61]`` (the value alone without an interval), as the study pages' Markdown tables write
    it: each number as ``format_bound`` writes it, by default cut to the precision the analysis carries; ``—`` for
    a missing value, ``…`` for a missing end."""
    if not _finite_number(value):
        return "—"
    return format_bound(value, fmt, carried) + (f" {format_interval(ci, fmt, carried=carried)}" if ci else "")
