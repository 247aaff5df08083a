"""A run directory's figures, drawn from its tables: ``mutransfer plot``, and the last step of a sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from ..files import CURVES_PLOT, DRIFT_PLOT, TRANSFER_PLOT, VERIFY_FILE, VERIFY_PLOT
from .plots import curves_figure, drift_figure, save, transfer_figure, verify_figure
from .summary import read_tables, search_settings, summarize

__all__ = ["draw"]


def draw(run_dirs: Sequence[Path], out: Optional[Path] = None) -> list[Path]:
    """transfer.png, lr_drift.png (and curves.png, verify.png for a single run) into ``out`` or the run dir."""
    runs = []
    for run_dir in run_dirs:
        trials, curves = read_tables(run_dir)
        runs.append((run_dir.name, trials, curves, summarize(trials, search_settings(run_dir, trials))))
    target = out or run_dirs[0]
    target.mkdir(parents=True, exist_ok=True)
    triples = [(name, trials, summary) for name, trials, _, summary in runs]
    written = [target / TRANSFER_PLOT, target / DRIFT_PLOT]
    save(transfer_figure(triples), written[0])
    save(drift_figure(triples), written[1])
    if len(runs) == 1:
        _, trials, curves, summary = runs[0]
        if not curves.empty:
            written.append(target / CURVES_PLOT)
            save(curves_figure(trials, curves, summary), written[-1])
        verify = run_dirs[0] / VERIFY_FILE
        if verify.is_file():
            written.append(target / VERIFY_PLOT)
            save(verify_figure(pd.read_csv(verify)), written[-1])
    return written
