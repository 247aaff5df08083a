"""A run's trials as the analysis reads them: the column that holds each searched key's value and that value on
the analysis's scale, the axes a table varies, the rows on one axis's line through the base point, and the tidy
table the fits take."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import LR_KEY, TRANSFER_AXES, Axis, axis_named, searched_column
from .drift import SearchSettings

__all__ = ["searched_column", "searched_values", "key_value", "swept_axes", "axis_rows", "width_axis", "tidy_rows"]


def searched_values(part: pd.DataFrame, key: str, settings: Mapping[str, SearchSettings]) -> pd.Series:
    """One key's trials' searched values on the scale the analysis uses: log2 η for the learning rate, log2 of
    another key when every setup (``settings[setup]``) searched it on a log2 scale, the value itself otherwise."""
    x = part[searched_column(key)].astype(float)
    if key != LR_KEY and settings and all(s.log2 for s in settings.values()):
        return np.log2(x)
    return x


def key_value(x: float, log2: bool) -> float:
    """A searched key's value from its coordinate (``searched_values``' inverse): 2^x on a log2 scale."""
    return 2.0**x if log2 else x


def swept_axes(trials: pd.DataFrame, named: Sequence[str] = ()) -> list[Axis]:
    """The axes a table varies: width, and depth, steps or batch when it has their columns; the token budget when
    a batch axis held it (``hold`` tokens) at two or more values. Under ``hold: steps`` the tokens follow from the
    batch, so they are not an axis of their own: the law's coordinates are the batch and the steps. ``named``:
    the axes a table declares instead, in their order, each by its name (``schema.axis_named``: an axis the
    registry lacks — a parameter count, tokens per parameter — is its name's column, any positive values)."""
    if named:
        return [axis_named(name) for name in named]
    held = set(trials["hold"].dropna().astype(str)) if "hold" in trials.columns else set()
    return [axis for axis in TRANSFER_AXES if axis.column in trials.columns and
            (axis.name != "tokens" or held == {"tokens"} and trials[axis.column].nunique() > 1)]


def axis_rows(trials: pd.DataFrame, axis: Axis, axes: Optional[Sequence[Axis]] = None) -> pd.DataFrame:
    """The rows on ``axis``'s line through the base point: every other swept axis (``axes``, default
    ``swept_axes``) at its smallest value."""
    keep = np.ones(len(trials), dtype=bool)
    for other in swept_axes(trials) if axes is None else axes:
        if other != axis:
            keep &= (trials[other.column] == trials[other.column].min()).to_numpy()
    return trials[keep].reset_index(drop=True)


def width_axis(trials: pd.DataFrame) -> pd.DataFrame:
    """The rows on the width axis in the width-only layout (the table itself when only width is swept, or when it
    has no width column: a table imported on other axes)."""
    if TRANSFER_AXES[0].column not in trials.columns:
        return trials
    extra = [axis.column for axis in TRANSFER_AXES[1:] if axis.column in trials.columns]
    extra += ["hold"] if "hold" in trials.columns else []
    return axis_rows(trials, TRANSFER_AXES[0]).drop(columns=extra) if extra else trials


def tidy_rows(part: pd.DataFrame, x: pd.Series, columns: Mapping[str, str]) -> pd.DataFrame:
    """The analysis's table: ``columns`` maps its names to the trials' columns (``point`` → the axis's)."""
    return pd.DataFrame({**{name: part[column] for name, column in columns.items()}, "setup": part["setup"],
                         "seed": part["seed"], "x": x, "loss": part["val_loss"].astype(float),
                         "status": part["status"]})
