"""``mutransfer plot``: redraw a run's figures from its CSVs (several runs: side by side)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ..defaults import BATCH_TOLERANCE, option_text

__all__ = ["run"]


def run(run_dirs: Sequence[Path], out: Optional[Path],
        tolerance_text: str = option_text(BATCH_TOLERANCE)) -> list[Path]:
    """Draw and return the written paths."""
    from ..analysis.draw import draw
    from .common import batch_tolerance

    return draw(list(run_dirs), out, batch_tolerance(tolerance_text))
