"""Points of an imported table: axis values that differ only by float noise merged into one, the learning rates'
log2 grid (its step inferred, or the LRs binned on it), and the axes that cannot be told apart (collinear)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["SAME_VALUE", "merge_close", "LrGrid", "lr_grid", "bin_on_grid", "collinear_axes", "GRID_SHARE",
           "COLLINEAR_R2"]

SAME_VALUE = 1e-6
"""Two values whose relative difference is at most this are one value (float noise from a CSV round trip)."""
GRID_SHARE = 0.5
"""A setup's LRs lie on a grid when at least this share of the spacings between neighbouring LRs is the most
common spacing; otherwise they were sampled continuously (an Optuna TPE study)."""
SPACING_DIGITS = 3
COLLINEAR_R2 = 0.95
"""An axis fixed by others is left out only where it is also near-linear in them on log2 scales (R² at least this,
a variance inflation of 20): a law cannot tell its slope from theirs. Model sizes that each train their own token
budgets make the size a function of the budget over the table, but with a few tokens-per-parameter ratios the two
stay far from collinear (R² about 0.8), and the law needs both."""


def merge_close(values: pd.Series, rel: float = SAME_VALUE) -> pd.Series:
    """``values`` with every run of sorted neighbours within relative ``rel`` of each other replaced by the run's
    first value; whole numbers come back as integers."""
    unique = np.unique(values.to_numpy(float))
    keep = np.empty_like(unique)
    start = 0
    for i, v in enumerate(unique):
        if abs(v - unique[start]) > rel * max(abs(unique[start]), abs(v)):
            start = i
        keep[i] = unique[start]
    merged = pd.Series(keep[np.searchsorted(unique, values.to_numpy(float))], index=values.index)
    whole = np.all(np.mod(merged, 1) == 0) and np.all(np.abs(merged) < 2**53)
    return merged.astype(np.int64) if whole else merged


@dataclass(frozen=True)
class LrGrid:
    """One setup's learning rates: the log2 step the analysis uses and whether they lie on a grid."""

    step: float
    on_grid: bool


def lr_grid(points: Iterable[np.ndarray]) -> LrGrid:
    """The most common spacing between neighbouring distinct log2 LRs within each point, and whether it covers
    ``GRID_SHARE`` of them (else their median spacing, and the LRs are continuous)."""
    gaps = [np.diff(np.unique(np.round(x, 9))) for x in points]
    diffs = np.concatenate(gaps) if gaps else np.array([])
    if len(diffs) == 0:
        return LrGrid(1.0, True)
    spacing, count = Counter(np.round(diffs, SPACING_DIGITS).tolist()).most_common(1)[0]
    if count >= GRID_SHARE * len(diffs) and spacing > 0:
        return LrGrid(float(spacing), True)
    return LrGrid(float(max(np.median(diffs), 10.0**-SPACING_DIGITS)), False)


def bin_on_grid(x: np.ndarray, step: float, origin: float) -> np.ndarray:
    """Each log2 LR moved to the nearest node of the grid ``origin + k·step``."""
    return origin + np.round((x - origin) / step) * step


def collinear_axes(points: pd.DataFrame, axes: Sequence[str]) -> dict[str, str]:
    """The axes to leave out of the analysis, each with why: one value only (``constant``), or its value fixed by
    the other axes' values over the whole table and near-linear in their log2 (``COLLINEAR_R2``: width chosen per
    parameter count, tokens = batch × steps). The first listed such axis goes first, then the rest are checked
    again, so the axis listed last of a set that moves together is kept."""
    dropped: dict[str, str] = {}
    for name in axes:
        if points[name].nunique() < 2:
            dropped[name] = "constant"
    while True:
        kept = [a for a in axes if a not in dropped]
        if len(kept) < 2:
            return dropped
        found = next(((name, others) for name in kept for others in _explainers(name, kept)
                      if (points.groupby(list(others))[name].nunique() <= 1).all()
                      and _log_r2(points, name, others) >= COLLINEAR_R2), None)
        if found is None:
            return dropped
        name, others = found
        dropped[name] = f"moves with {others[0]}" if len(others) == 1 else f"a function of {', '.join(others)}"


def _log_r2(points: pd.DataFrame, name: str, others: Sequence[str]) -> float:
    """R² of log2 ``name`` on log2 of ``others`` (with an intercept) over the distinct points."""
    distinct = points[[name, *others]].drop_duplicates().astype(float)
    y = np.log2(distinct[name].to_numpy())
    x = np.column_stack([np.ones(len(y)), np.log2(distinct[list(others)].to_numpy())])
    total = float(np.sum((y - y.mean()) ** 2))
    if total == 0:
        return 1.0
    residual = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]
    return 1.0 - float(residual @ residual) / total


def _explainers(name: str, kept: Sequence[str]) -> list[tuple[str, ...]]:
    """The sets of other axes that might fix ``name``: each one alone, then all of them."""
    others = tuple(a for a in kept if a != name)
    return [(a,) for a in others] + ([others] if len(others) > 1 else [])
