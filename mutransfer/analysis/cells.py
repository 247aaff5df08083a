"""A number and its interval as a Markdown table cell, the form the study pages' tables use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

__all__ = ["interval_cell"]

SIGNIFICANT_DIGITS = 12  # what an analysis carries; beyond it, summation order decides a value on a rounding edge


def _text(value: Optional[float], fmt: str) -> str:
    if value is None or not math.isfinite(value):
        return "…"
    return f"{float(f'{value:.{SIGNIFICANT_DIGITS}g}'):{fmt}}"


def interval_cell(value: Optional[float], ci: Optional[Sequence[Optional[float]]] = None, fmt: str = "+.2f") -> str:
    """``-0.20 [-1.02, +0.61]``; ``—`` for a missing value, ``…`` for a missing end. Each number is first
    cut to the precision the analysis carries, so a value exactly on a rounding edge (a slope of −0.205 from
    grid points) prints the same whatever order its sums ran in."""
    if value is None or not math.isfinite(value):
        return "—"
    return _text(value, fmt) + (f" [{_text(ci[0], fmt)}, {_text(ci[1], fmt)}]" if ci else "")
