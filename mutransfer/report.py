"""A sweep's outputs: tables from the storage, summary.json from the tables, figures from both."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
import yaml

from .analysis import Thresholds, summarize
from .errors import UserError
from .runs import CONFIG_FILE, SWEEP_FILES, atomic_write_text, write_json

__all__ = ["write_tables", "read_tables", "search_steps", "write_summary", "draw", "read_summary"]


def write_tables(run_dir: Path, trials: pd.DataFrame, curves: pd.DataFrame) -> None:
    atomic_write_text(run_dir / SWEEP_FILES["trials"], trials.to_csv(index=False))
    atomic_write_text(run_dir / SWEEP_FILES["curves"], curves.to_csv(index=False))


def read_tables(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    path = run_dir / SWEEP_FILES["trials"]
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory", "give a sweep's run directory (e.g. runs/default)")
    if not path.is_file():
        raise UserError(f"{run_dir} has no {SWEEP_FILES['trials']}", "run `mutransfer sweep` first, or give a sweep's "
                        "run directory")
    trials = pd.read_csv(path)
    if trials.empty:
        raise UserError(f"{path} has no trials", "run or resume the sweep until some trials finish")
    curves_path = run_dir / SWEEP_FILES["curves"]
    curves = pd.read_csv(curves_path) if curves_path.is_file() else pd.DataFrame(
        columns=["setup", "width", "seed", "search_key", "x", "trial", "step", "train_loss", "val_loss"])
    return trials, curves


def search_steps(run_dir: Path, trials: pd.DataFrame) -> dict[str, Any]:
    """Grid step (and scale) per searched key: from the sweep's config.yaml, else the most common spacing."""
    steps: dict[str, Any] = {}
    config = run_dir / CONFIG_FILE
    if config.is_file():
        spec = (yaml.safe_load(config.read_text()) or {}).get("spec") or {}
        for setup in spec.get("setups", []):
            for search in setup.get("search", []):
                steps.setdefault(search["key"], float(search["step"]))
                steps.setdefault(f"{search['key']}:scale", search["scale"])
    for key, part in trials.groupby("search_key"):
        if key not in steps:
            column = "log2_lr" if key == "optimizer.lr" else key
            xs = np.sort(part[column].dropna().unique())
            diffs = Counter(np.round(np.diff(xs), 6)) if len(xs) > 1 else Counter({1.0: 1})
            steps[str(key)] = float(diffs.most_common(1)[0][0])
    return steps


def write_summary(run_dir: Path, trials: pd.DataFrame, th: Thresholds = Thresholds()) -> dict[str, Any]:
    summary = summarize(trials, search_steps(run_dir, trials), th)
    write_json(run_dir / SWEEP_FILES["summary"], summary)
    return summary


def read_summary(run_dir: Path) -> dict[str, Any]:
    trials, _ = read_tables(run_dir)
    return summarize(trials, search_steps(run_dir, trials))


def draw(run_dirs: Sequence[Path], out: Optional[Path] = None) -> list[Path]:
    """transfer.png, lr_drift.png (and curves.png, verify.png for a single run) into ``out`` or the run dir."""
    from .plots import curves_figure, drift_figure, save, transfer_figure, verify_figure

    runs = []
    for run_dir in run_dirs:
        trials, curves = read_tables(run_dir)
        runs.append((run_dir.name, trials, curves, summarize(trials, search_steps(run_dir, trials))))
    target = out or run_dirs[0]
    target.mkdir(parents=True, exist_ok=True)
    triples = [(name, trials, summary) for name, trials, _, summary in runs]
    written = [target / "transfer.png", target / "lr_drift.png"]
    save(transfer_figure(triples), written[0])
    save(drift_figure(triples), written[1])
    if len(runs) == 1:
        _, trials, curves, summary = runs[0]
        if not curves.empty:
            written.append(target / "curves.png")
            save(curves_figure(trials, curves, summary), written[-1])
        verify = run_dirs[0] / SWEEP_FILES["verify"]
        if verify.is_file():
            written.append(target / "verify.png")
            save(verify_figure(pd.read_csv(verify)), written[-1])
    return written
