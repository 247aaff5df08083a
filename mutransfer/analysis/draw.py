"""A run directory's figures, drawn from its tables: ``mutransfer plot``, and the last step of a sweep."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import pandas as pd

from ..files import (BATCH_PLOT, CURVES_PLOT, DRIFT_PLOT, VERIFY_FILE, VERIFY_PLOT, VERIFY_REPORT, VERIFY_VERSIONS,
                     key_plot, transfer_plot)
from ..schema import LR_KEY, Axis
from .batch_plot import batch_figure, batch_frame, batch_marks
from .drift import SearchSettings
from .thresholds import Thresholds
from .plots import curves_figure, drift_figure, key_label, save, transfer_figure
from .result import Summary
from .run_files import declared_axes, read_tables, search_settings
from .summary import axis_table, summarize_dir
from .transfer_targets import TransferTarget, read_targets
from .trial_table import swept_axes, width_axis
from .verify_plot import verify_figure

__all__ = ["draw", "redraw_drift", "verify_figure_of"]


def draw(run_dirs: Sequence[Path], out: Optional[Path] = None, th: Thresholds = Thresholds(),
         summary: Optional[Summary] = None) -> list[Path]:
    """transfer.png (and transfer_depth.png, transfer_steps.png … for the axes swept), lr_drift.png with a panel
    per swept axis and the run directories' transfer targets (``_drift``), curves.png (several runs: a panel per
    run and setup), the same two figures for every other key every run searched, verify.png for a single run, and
    batch.png for a single run across batch sizes at fixed budgets, into ``out`` or the run dir. ``summary``: a single run's summary when the caller has just computed it
    from the same tables (else each run's is computed afresh)."""
    runs = [_Run.read(run_dir, th, summary if len(run_dirs) == 1 else None) for run_dir in run_dirs]
    target = out or run_dirs[0]
    target.mkdir(parents=True, exist_ok=True)
    axes = [axis for axis in runs[0].swept() if all(axis in r.swept() for r in runs)]
    keys = [LR_KEY] + sorted(set.intersection(*(set(r.summary.other_keys()) for r in runs)))
    written = []
    for key in keys:
        symbol, quantity = key_label(key)
        log2 = all(s.log2 for r in runs for s in r.settings.get(key, {}).values())
        drawn = axes if key == LR_KEY else axes[:1]
        for i, axis in enumerate(drawn):
            views = [(r.name, axis_table(r.trials, key, r.settings, axis, r.swept()), r.summary.setups(key))
                     for r in runs]
            written.append(target / (transfer_plot(axis.name) if key == LR_KEY else key_plot(key)))
            save(transfer_figure(views, axis.name, symbol, quantity, log2), written[-1])
            if i == 0:
                written.append(_drift(runs, axes, key, target))
    with_curves = [(r.name, width_axis(r.trials), r.curves, r.summary.setups()) for r in runs if not r.curves.empty]
    if with_curves:
        written.append(target / CURVES_PLOT)
        save(curves_figure(with_curves), written[-1])
    if len(runs) == 1:
        written += _single_run_figures(runs[0], target, th)
    return written


def redraw_drift(run_dir: Path, th: Thresholds = Thresholds(), summary: Optional[Summary] = None) -> Path:
    """lr_drift.png of one run directory again, marking the targets of the transfer files now in it: what
    ``transfer`` calls once it has written one. Returns its path."""
    run = _Run.read(run_dir, th, summary)
    return _drift([run], run.swept(), LR_KEY, run_dir)


def _drift(runs: Sequence["_Run"], axes: Sequence[Axis], key: str, target: Path) -> Path:
    """One key's drift figure (lr_drift.png for the learning rate) into ``target``: a panel per axis whose value
    varies in some run, and for the learning rate every run's transfer targets."""
    symbol, quantity = key_label(key)
    log2 = all(s.log2 for r in runs for s in r.settings.get(key, {}).values())
    varied = [axis.name for axis in axes if any(r.trials[axis.column].nunique() > 1 for r in runs)] or \
        [axes[0].name if axes else "width"]
    targets = [(r.name, t) for r in runs for t in r.targets] if key == LR_KEY else []
    path = target / (DRIFT_PLOT if key == LR_KEY else key_plot(key, "drift"))
    save(drift_figure([(r.name, r.summary.setups(key)) for r in runs], varied, symbol, quantity, log2, targets),
         path)
    return path


@dataclass(frozen=True)
class _Run:
    """One run directory's tables, search settings and summary, as the figures read them."""

    name: str
    path: Path
    trials: pd.DataFrame
    curves: pd.DataFrame
    settings: dict[str, dict[str, SearchSettings]]
    summary: Summary
    axes: tuple[str, ...]
    """The axes the run's config.yaml declares (an import's); () for a sweep's registered columns."""
    targets: tuple[TransferTarget, ...] = ()
    """The targets the transfer files in the run directory predicted for (``transfer_targets``)."""

    @classmethod
    def read(cls, run_dir: Path, th: Thresholds, summary: Optional[Summary] = None) -> "_Run":
        trials, curves = read_tables(run_dir, all_axes=True)
        return cls(run_dir.name, run_dir, trials, curves, search_settings(run_dir, trials),
                   summary or summarize_dir(run_dir, trials, th), declared_axes(run_dir),
                   tuple(read_targets(run_dir)))

    def swept(self) -> list[Axis]:
        return swept_axes(self.trials, self.axes)


def _single_run_figures(run: _Run, target: Path, th: Thresholds) -> list[Path]:
    """batch.png for a batch axis at fixed budgets, verify.png after a verify."""
    written = []
    frame = batch_frame(run.summary)
    if not frame.empty:
        written.append(target / BATCH_PLOT)
        save(batch_figure(frame, batch_marks(run.summary), th.batch_tolerance), written[-1])
    report = _verify_report(run.path)
    if report is not None:
        written.append(target / VERIFY_PLOT)
        save(_verify_figure(run, *report), written[-1])
    return written


def verify_figure_of(run_dir: Path, rows: pd.DataFrame, report: dict[str, Any], th: Thresholds = Thresholds()) -> Any:
    """verify.png of a run directory's verify (its rows and report), over the run's swept curves."""
    return _verify_figure(_Run.read(run_dir, th), rows, report)


def _verify_figure(run: _Run, rows: pd.DataFrame, report: dict[str, Any]) -> Any:
    width = next(a for a in swept_axes(run.trials) if a.name == "width")
    return verify_figure(axis_table(run.trials, LR_KEY, run.settings, width), run.summary.setups(), rows, report)


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
    if document.get("mutransfer_verify") not in VERIFY_VERSIONS or "study" not in rows.columns:
        return None
    widths = {(t["setup"], t["width"]) for t in document["targets"]}
    prefix = f"{document.get('prefix')}."
    keep = [(s, w) in widths and str(study).startswith(prefix)
            for s, w, study in zip(rows["setup"], rows["width"], rows["study"])]
    return rows[keep], document
