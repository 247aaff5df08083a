"""A run directory's figures, drawn from its tables: ``mutransfer plot``, and the last step of a sweep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

import pandas as pd

from ..files import (BATCH_PLOT, CURVES_PLOT, DRIFT_PLOT, VERIFY_FILE, VERIFY_PLOT, VERIFY_REPORT, key_plot,
                     transfer_plot)
from .batch_plot import batch_figure, batch_frame, batch_marks
from .key_view import key_label, key_view
from .optimum import Thresholds
from .plots import curves_figure, drift_figure, save, transfer_figure
from .verify_plot import verify_figure
from .summary import axis_rows, read_tables, search_settings, summarize, swept_axes, width_axis

__all__ = ["draw"]


def draw(run_dirs: Sequence[Path], out: Optional[Path] = None, th: Thresholds = Thresholds()) -> list[Path]:
    """transfer.png (and transfer_depth.png, transfer_steps.png … for the axes swept), lr_drift.png with a panel
    per swept axis, curves.png (several runs: a row each, axes shared), verify.png for a single run, and batch.png
    for a single run across batch sizes at fixed budgets, into ``out`` or the run dir."""
    runs, full = [], []
    for run_dir in run_dirs:
        trials, curves = read_tables(run_dir, all_axes=True)
        summary = summarize(trials, search_settings(run_dir, trials), th)
        runs.append((run_dir.name, width_axis(trials), curves, summary))
        full.append(trials)
    target = out or run_dirs[0]
    target.mkdir(parents=True, exist_ok=True)
    triples = [(name, trials, summary) for name, trials, _, summary in runs]
    axes = [axis for axis in swept_axes(full[0]) if all(axis in swept_axes(t) for t in full)]
    varied = [axis.name for axis in axes if any(t[axis.column].nunique() > 1 for t in full)] or ["width"]
    written = [target / transfer_plot("width"), target / DRIFT_PLOT]
    save(transfer_figure(triples), written[0])
    save(drift_figure(triples, varied), written[1])
    for axis in axes[1:]:
        along = [(name, axis_rows(t, axis).assign(width=lambda rows, c=axis.column: rows[c]), summary)
                 for (name, _, _, summary), t in zip(runs, full)]
        written.append(target / transfer_plot(axis.name))
        save(transfer_figure(along, axis=axis.name), written[-1])
    written += _key_figures(runs, full, run_dirs, target, varied)
    with_curves = [(name, trials, curves) for name, trials, curves, _ in runs if not curves.empty]
    if with_curves:
        written.append(target / CURVES_PLOT)
        save(curves_figure(with_curves), written[-1])
    if len(runs) == 1:
        _, trials, _, summary = runs[0]
        frame = batch_frame(summary)
        if not frame.empty:
            written.append(target / BATCH_PLOT)
            save(batch_figure(frame, batch_marks(summary), th.batch_tolerance), written[-1])
        report = _verify_report(run_dirs[0])
        if report is not None:
            written.append(target / VERIFY_PLOT)
            save(verify_figure(trials, *report), written[-1])
    return written


def _key_figures(runs: list[Any], full: list[pd.DataFrame], run_dirs: Sequence[Path], target: Path,
                 varied: list[str]) -> list[Path]:
    """For each other key every run searched: loss against it per width (``<key>.png``) and its optimum against
    each swept axis (``<key>_drift.png``)."""
    keys = set.intersection(*(set(summary.get("keys", {})) for *_, summary in runs))
    written = []
    for key in sorted(keys):
        settings = [search_settings(d, t).get(key, {}) for d, t in zip(run_dirs, full)]
        log2 = all(s.log2 for own in settings for s in own.values())
        views = [(name, *key_view(trials, summary, key, log2)) for name, trials, _, summary in runs]
        symbol, quantity = key_label(key)
        written += [target / key_plot(key), target / key_plot(key, "drift")]
        save(transfer_figure(views, symbol=symbol, quantity=quantity, log2=log2), written[-2])
        save(drift_figure(views, varied, symbol=symbol, quantity=quantity, log2=log2), written[-1])
    return written


def _verify_report(run_dir: Path) -> Optional[tuple[pd.DataFrame, dict[str, Any]]]:
    """The last verify's rows and report (verify.csv, verify.json), when both are there and readable."""
    table, report = run_dir / VERIFY_FILE, run_dir / VERIFY_REPORT
    if not (table.is_file() and report.is_file()):
        return None
    try:
        document = json.loads(report.read_text())
        rows = pd.read_csv(table)
    except (ValueError, pd.errors.ParserError):
        return None
    if document.get("mutransfer_verify") != 1 or "study" not in rows.columns:
        return None
    widths = {(t["setup"], t["width"]) for t in document["targets"]}
    prefix = f"{document.get('prefix')}."
    keep = [(s, w) in widths and str(study).startswith(prefix)
            for s, w, study in zip(rows["setup"], rows["width"], rows["study"])]
    return rows[keep], document
