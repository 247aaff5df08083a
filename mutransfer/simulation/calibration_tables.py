"""The tables a calibration reads (``measured_calibration``): a sweep's trials with its search settings, each
point's learning-rate curves, the noise about them, and one measured quantity as a record."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..analysis.bowl import SeedBowl, seed_bowl
from ..analysis.drift import SearchSettings
from ..analysis.optimum import fit_halfwidth, grid_seeds
from ..analysis.run_files import read_tables, search_settings
from ..analysis.trial_table import swept_axes
from ..schema import LR_COLUMN, LR_KEY

__all__ = ["Table", "Curve", "Measurement", "MUON", "ADAMW", "load", "curves", "lr_rows", "noise_of", "significant", "last_digit",
           "robust_sd", "table_names"]


SIGNIFICANT = 2


MUON, ADAMW = "muon", "adamw"


def significant(value: float, digits: int = SIGNIFICANT) -> float:
    """``value`` rounded to ``digits`` significant digits (0 stays 0)."""
    if value == 0 or not math.isfinite(value):
        return 0.0
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def last_digit(value: float, digits: int = SIGNIFICANT) -> float:
    """One unit of ``value``'s last digit once rounded to ``digits`` significant digits (0 for 0): how far another
    CPU's BLAS may move a measurement that sits on a rounding boundary."""
    if value == 0 or not math.isfinite(value):
        return 0.0
    return 10.0 ** (int(math.floor(math.log10(abs(value)))) - digits + 1)


def robust_sd(residuals: np.ndarray) -> float:
    """1.4826 · median |r|: the sd of normal residuals, and hardly moved by spikes."""
    return 1.4826 * float(np.median(np.abs(residuals)))


@dataclass(frozen=True)
class Table:
    """One sweep's learning-rate trials (every axis) and how each setup searched the learning rate."""

    name: str
    trials: pd.DataFrame
    settings: Mapping[str, SearchSettings]


@dataclass(frozen=True)
class Curve:
    """One grid seed's curve at one point of a sweep (width, depth, horizon) and its bowl; ``copy_of`` names the
    first table and setup whose bowl was fitted to the very same points (the base point of a depth sweep, a
    horizon sweep's matching horizon, μP and SP at the base width), which the medians and the noise count once."""

    table: str
    setup: str
    bowl: Optional[str]
    point: tuple[tuple[str, int], ...]
    seed: int
    fit: SeedBowl
    copy_of: Optional[str] = None


@dataclass(frozen=True)
class Measurement:
    name: str
    value: float
    how: str
    tables: tuple[str, ...]
    resolved: bool = True


def load(run_dir: Path) -> Table:
    """A run directory's trials.csv (all axes) with each setup's learning-rate search settings."""
    trials, _ = read_tables(run_dir, all_axes=True)
    return Table(run_dir.name, trials, search_settings(run_dir, trials).get(LR_KEY, {}))


def bowl_kind(rows: pd.DataFrame) -> Optional[str]:
    """``muon`` for μP + Muon, ``adamw`` for any AdamW setup, None otherwise (SP + Muon)."""
    optimizer = str(rows["optimizer"].iloc[0]) if "optimizer" in rows else ""
    parametrization = str(rows["parametrization"].iloc[0]) if "parametrization" in rows else ""
    if optimizer == "adamw":
        return ADAMW
    return MUON if optimizer == "muon" and parametrization == "mup" else None


def lr_rows(trials: pd.DataFrame) -> pd.DataFrame:
    rows = trials[(trials["search_key"] == LR_KEY) & (trials["status"] == "ok")]
    return rows[np.isfinite(rows["val_loss"].astype(float))]


def point_columns(trials: pd.DataFrame) -> list[str]:
    """The columns that name a point of the sweep: width, and depth or horizon when swept."""
    return [axis.column for axis in swept_axes(trials)]


def curves(table: Table) -> list[Curve]:
    """Every grid seed's bowl at every point of every setup (the grid seeds as the analysis picks them)."""
    out = []
    columns = point_columns(table.trials)
    for (setup, *point), rows in lr_rows(table.trials).groupby(["setup", *columns], sort=True):
        settings = table.settings.get(str(setup), SearchSettings())
        x, seed = rows[LR_COLUMN].to_numpy(float), rows["seed"].to_numpy(int)
        for s in grid_seeds(x, seed, fit_halfwidth(settings.step, settings.log2)):
            mine = seed == s
            fit = seed_bowl(x[mine], rows["val_loss"].to_numpy(float)[mine])
            if fit is not None:
                out.append(Curve(table.name, str(setup), bowl_kind(rows), tuple(zip(columns, map(int, point))),
                                 int(s), fit))
    return out


def table_names(items: Iterable[Any]) -> tuple[str, ...]:
    return tuple(sorted({str(getattr(item, "table", item)) for item in items}))


def noise_of(used: Sequence[Curve]) -> tuple[float, int]:
    """The residual sd about the bowls of ``used`` (Σ squared residuals / Σ their dof) and its dof."""
    dof = sum(c.fit.dof for c in used if c.fit.dof > 0)
    rss = sum(float((c.fit.residuals**2).sum()) for c in used if c.fit.dof > 0)
    return (math.sqrt(rss / dof) if dof else 0.0), dof
