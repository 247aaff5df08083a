"""``mutransfer plot``: redraw a run's figures from its CSVs (several runs: side by side)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

__all__ = ["run"]


def run(run_dirs: Sequence[Path], out: Optional[Path]) -> list[Path]:
    """Draw and return the written paths."""
    from ..analysis.draw import draw

    return draw(list(run_dirs), out)
