"""A run directory's files: its tables (``trials.csv``, ``curves.csv``) written and read back, checked, and how
its config.yaml says each key was searched and which axes an import declares."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..errors import UserError
from ..files import CONFIG_FILE, CURVE_COLUMNS, CURVES_FILE, TRIALS_FILE, atomic_write_text, load_yaml, read_user_text
from .drift import SearchSettings
from .trial_table import searched_column, swept_axes, width_axis

__all__ = ["write_tables", "read_tables", "TRIAL_NEEDS", "CURVE_NEEDS", "REWRITE_HINT", "run_record", "declared_axes",
           "spec_settings", "search_settings"]


def write_tables(run_dir: Path, trials: pd.DataFrame, curves: pd.DataFrame) -> None:
    atomic_write_text(run_dir / TRIALS_FILE, trials.to_csv(index=False))
    atomic_write_text(run_dir / CURVES_FILE, curves.to_csv(index=False))


def read_tables(run_dir: Path, all_axes: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """trials.csv and curves.csv, checked; a sweep's trials on the width axis only unless ``all_axes`` (an
    import's all of them)."""
    path = run_dir / TRIALS_FILE
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory", "give a sweep's run directory (e.g. runs/default)")
    if not path.is_file():
        raise UserError(f"{run_dir} has no {TRIALS_FILE}", "run `mutransfer sweep` first, or give a sweep's "
                        "run directory")
    trials = _read_csv(path, TRIAL_NEEDS)
    if "width" not in trials.columns and not declared_axes(run_dir):
        raise UserError(f"{path} lacks the column(s) width", REWRITE_HINT)
    if trials.empty:
        raise UserError(f"{path} has no trials", "run or resume the sweep until some trials finish")
    for key in trials["search_key"].unique():
        column = searched_column(str(key))
        if column not in trials.columns:
            raise UserError(f"{path} searched {key} but has no column '{column}'", REWRITE_HINT)
        _numeric(trials.loc[trials["search_key"] == key], column, path)
    named = declared_axes(run_dir)
    for axis in swept_axes(trials, named):
        _numeric(trials, axis.column, path, whole=not named)
    curves_path = run_dir / CURVES_FILE
    curves = _read_csv(curves_path, CURVE_NEEDS) if curves_path.is_file() else pd.DataFrame(columns=CURVE_COLUMNS)
    return (trials if all_axes or named else width_axis(trials)), curves


TRIAL_NEEDS = {"setup": str, "seed": int, "search_key": str, "val_loss": float, "status": str}
CURVE_NEEDS = {"setup": str, "width": int, "seed": int, "search_key": str, "trial": int, "step": int,
               "train_loss": float}
REWRITE_HINT = "rewrite the run directory's tables with mutransfer export (or rerun the sweep to resume)"


def _read_csv(path: Path, needs: Mapping[str, type]) -> pd.DataFrame:
    """A run directory's CSV table with the columns ``needs`` names, of those types; one line otherwise."""
    read_user_text(path, "table")
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty", REWRITE_HINT) from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise UserError(f"{path} is not a readable CSV table ({str(exc).splitlines()[0][:120]})",
                        REWRITE_HINT) from None
    missing = [column for column in needs if column not in table.columns]
    if missing:
        raise UserError(f"{path} lacks the column(s) {', '.join(missing)}", REWRITE_HINT)
    for column, kind in needs.items():
        if kind is str:
            table[column] = table[column].astype(str)
        else:
            _numeric(table, column, path, whole=kind is int)
    return table


def _numeric(table: pd.DataFrame, column: str, path: Path, whole: bool = False) -> None:
    """Refuse a column that holds text, or (``whole``) a missing, infinite or fractional value; NaN and inf
    are fine in a loss column (a diverged or failed trial)."""
    values = pd.to_numeric(table[column], errors="coerce")
    text = table[column][values.isna() & table[column].notna()]
    if len(text):
        raise UserError(f"{path}: column {column} holds '{text.iloc[0]}', not a number", REWRITE_HINT)
    if whole and (values.isna().any() or not np.isfinite(values).all() or (values % 1 != 0).any()):
        bad = values[values.isna() | ~np.isfinite(values) | (values % 1 != 0)].iloc[0]
        raise UserError(f"{path}: column {column} holds {bad}, not a whole number", REWRITE_HINT)
    table[column] = values.astype(int) if whole else values.astype(float)


def run_record(run_dir: Path) -> dict[str, Any]:
    """The run directory's config.yaml document ({} when it is missing or not a mapping)."""
    config = run_dir / CONFIG_FILE
    record = load_yaml(config, "sweep config") if config.is_file() else None
    return record if isinstance(record, dict) else {}


def declared_axes(run_dir: Path) -> tuple[str, ...]:
    """The axes a run directory's config.yaml declares (an import's, collinear ones left out); () for a sweep,
    whose axes are its table's registered columns (``swept_axes``)."""
    record = run_record(run_dir)
    return tuple(str(a) for a in record.get("axes") or ()) if record.get("kind") == "import" else ()


def spec_settings(spec: Mapping[str, Any]) -> dict[str, dict[str, SearchSettings]]:
    """How each setup of a spec's plain data (``SweepSpec.as_dict``, a record's ``spec``) searches each key (a tuned
    constant: its log2 factor)."""
    settings: dict[str, dict[str, SearchSettings]] = {}
    constants = spec.get("constants")
    for setup in spec.get("setups", []):
        for search in setup.get("search", []):
            settings.setdefault(search["key"], {})[setup["label"]] = SearchSettings(
                step=float(search["step"]), log2=search["scale"] == "log2", low=float(search["min"]),
                high=float(search["max"]))
        for key in (constants or {}).get("keys", []):
            settings.setdefault(key, {})[setup["label"]] = SearchSettings(
                step=float(constants["step"]), log2=True, low=float(constants["low"]), high=float(constants["high"]))
    return settings


def search_settings(run_dir: Path, trials: pd.DataFrame) -> dict[str, dict[str, SearchSettings]]:
    """How each setup searched each key (``settings[key][setup]``): from the sweep's config.yaml, else each
    setup's most common spacing on a log2 scale with an unknown range."""
    try:
        settings = spec_settings(run_record(run_dir).get("spec") or {})
    except (AttributeError, KeyError, TypeError, ValueError):
        settings = {}  # a damaged config.yaml: every setup's settings inferred from its trials below
    for (key, setup), part in trials.groupby(["search_key", "setup"]):
        if str(setup) not in settings.get(str(key), {}):
            xs = np.sort(part[searched_column(str(key))].dropna().unique())
            diffs = Counter(np.round(np.diff(xs), 6)) if len(xs) > 1 else Counter({1.0: 1})
            settings.setdefault(str(key), {})[str(setup)] = SearchSettings(step=float(diffs.most_common(1)[0][0]))
    return settings
