"""The run directory ``transfer`` and ``verify`` read: ``--from RUN_DIR``, or the latest sweep under ``runs/``.
Checked before anything heavy is imported, so a wrong path answers in a fraction of a second."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import UserError
from ..files import latest_run

__all__ = ["run_source"]


def run_source(source: Optional[Path]) -> Path:
    """``source`` when it is a directory, else one line that says what it is; the latest run when None."""
    if source is None:
        return latest_run()
    if not source.exists():
        raise UserError(f"--from {source}: no such directory", "pass --from RUN_DIR, a sweep's or an import's run "
                        "directory (e.g. --from runs/smoke)")
    if not source.is_dir():
        raise UserError(f"--from {source} is a file, not a run directory", "pass --from RUN_DIR, the folder that "
                        "holds the run's config.yaml")
    return source
