"""Points of an imported table: axis values that differ only by float noise merged into one, the learning rates'
log2 grid (its step inferred, or the LRs binned on it), and the axes that cannot be told apart (collinear)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["SAME_VALUE", "merge_close", "LrGrid", "lr_grid", "bin_on_grid", "collinear_axes", "collinear_reason",
           "LeftOut", "left_out_axes", "GRID_SHARE", "COLLINEAR_R2"]

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


def collinear_axes(points: pd.DataFrame, axes: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The axes to leave out of the analysis, each with the kept axes it moves with: none for an axis with one
    value only, else those whose values fix its value over the whole table and in whose log2 it is near-linear
    (``COLLINEAR_R2``: width chosen per parameter count, tokens = batch × steps). The first listed such axis goes
    first, then the rest are checked again, so the axis listed last of a set that moves together is kept; an axis
    left out beside one left out later is named with the kept axes that one moves with."""
    dropped: dict[str, tuple[str, ...]] = {name: () for name in axes if points[name].nunique() < 2}
    while True:
        kept = [a for a in axes if a not in dropped]
        found = next(((name, others) for name in kept for others in _explainers(name, kept)
                      if (points.groupby(list(others))[name].nunique() <= 1).all()
                      and _log_r2(points, name, others) >= COLLINEAR_R2), None) if len(kept) > 1 else None
        if found is None:
            return {name: _kept_of(name, dropped, axes) for name in dropped}
        dropped[found[0]] = found[1]


def _kept_of(name: str, dropped: dict[str, tuple[str, ...]], axes: Sequence[str]) -> tuple[str, ...]:
    """The kept axes ``name`` moves with: its explainers, each one left out later replaced by its own, in the
    order the axes are listed."""
    kept: set[str] = set()
    for other in dropped[name]:
        kept.update(_kept_of(other, dropped, axes) if other in dropped else (other,))
    return tuple(a for a in axes if a in kept)


def collinear_reason(kept: Sequence[str]) -> str:
    """Why an axis is left out, as ``config.yaml`` records it: ``constant``, ``moves with params`` or ``a function
    of steps, tokens``."""
    if not kept:
        return "constant"
    return f"moves with {kept[0]}" if len(kept) == 1 else f"a function of {', '.join(kept)}"


@dataclass(frozen=True)
class LeftOut:
    """An axis left out of the analysis: the kept axes it moves with (none: it holds one value), whether the order
    of the ``--axis`` options decided which was kept, and what would keep it instead."""

    kept: tuple[str, ...] = ()
    by_order: bool = False
    """Listed last, it would be kept and another of the set left out."""
    keep_instead: str = ""
    """What keeps it instead: ``list --axis params=n_params last``, or ``leave out --axis width``."""

    def reason(self) -> str:
        """Why, as ``config.yaml`` records it (``collinear_reason``)."""
        return collinear_reason(self.kept)

    def line(self, name: str) -> str:
        """Why, which axis was kept by which rule, and how to keep ``name`` instead (the import's printout)."""
        if not self.kept:
            return self.reason()
        kept = ", ".join(self.kept)
        rule = ("of axes that move together, the one listed last is kept" if self.by_order else
                f"{name} is fixed by {kept}, not the other way round, so the order of the --axis options does not "
                "decide")
        return f"{self.reason()}; kept {kept} ({rule}); to keep {name} instead, {self.keep_instead}"


def left_out_axes(points: pd.DataFrame, axes: Sequence[str], options: Mapping[str, str]) -> dict[str, LeftOut]:
    """``collinear_axes`` with, for each axis left out beside kept ones, whether listing it last would keep it
    and how to keep it: list its option (``options``: each axis's ``--axis`` as given) last, or else leave out
    the kept axes' options."""
    out: dict[str, LeftOut] = {}
    for name, kept in collinear_axes(points, axes).items():
        if not kept:
            out[name] = LeftOut()
            continue
        by_order = name not in collinear_axes(points, [a for a in axes if a != name] + [name])
        how = (f"list {options[name]} last" if by_order
               else "leave out " + " and ".join(options[k] for k in kept))
        out[name] = LeftOut(kept, by_order, how)
    return out


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
