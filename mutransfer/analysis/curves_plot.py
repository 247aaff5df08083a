"""curves.png: the loss curve of each width at its best learning rate, where "best" is the fitted optimum η* that
transfer.png marks ◆ and ``transfer`` carries (the trained value nearest it), not the lowest single trial; the
training loss, or the validation loss where the trainer reports no training curve. Tidy tables and results in;
no torch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import LR_COLUMN, LR_KEY
from ..words import TrialStatus
from .figure_kit import finish_panel, judged_fit, point_colors
from .layout import fit_title, grid_of_panels, panel_name
from .result import AxisFit, PointResult, SetupResult, point_value
from .summary import final_stages

__all__ = ["curves_figure", "CurveRun", "ChosenLR", "chosen_lr", "curve_metric"]

CurveRun = tuple[str, pd.DataFrame, pd.DataFrame, Mapping[str, SetupResult]]
"""A run as curves.png reads it: its name, its trials along width (``width_axis``), its curves.csv and the
learning rate's setups' results."""


@dataclass(frozen=True)
class ChosenLR:
    """The trained learning rate whose curve a width shows, and why."""

    x: float
    """log2 η of the trials drawn."""
    x_star: Optional[float]
    """The fitted optimum log2 η* it is the nearest trained value to; None where none was fitted."""
    trials: tuple[tuple[int, int], ...]
    """(trial, seed) of the grid seeds' trials at ``x``."""

    def words(self) -> str:
        basis = f"nearest η* {self.x_star:+.2f}" if self.x_star is not None else "lowest mean loss, no η* fitted"
        return f"log2 η {self.x:g} ({basis})"


def chosen_lr(rows: pd.DataFrame, opt: Optional[PointResult]) -> Optional[ChosenLR]:
    """Of one width's finished learning-rate trials (``rows``: trials.csv's), the trained value nearest the fitted
    optimum ``opt.x_star`` (of two as near, the one with the lower mean loss), over the seeds that trained the grid
    (``opt.grid_seeds``, as transfer.png's lines); where no optimum was fitted, the value of lowest mean loss."""
    seeds = set(opt.grid_seeds) if opt is not None and opt.grid_seeds else set(rows["seed"])
    grid = rows[rows["seed"].isin(seeds)]
    grid = grid if len(grid) else rows
    means = grid.groupby(LR_COLUMN)["val_loss"].mean().dropna()
    if means.empty:
        return None
    x_star = float(opt.x_star) if opt is not None and opt.x_star is not None and math.isfinite(opt.x_star) else None
    if x_star is not None:
        order = sorted(means.index, key=lambda x: (round(abs(float(x) - x_star), 9), float(means[x])))
        x = float(order[0])
    else:
        x = float(means.idxmin())
    picked = grid[np.isclose(grid[LR_COLUMN].astype(float), x)]
    return ChosenLR(x, x_star, tuple((int(t), int(s)) for t, s in zip(picked["trial"], picked["seed"])))


def curve_metric(curves: pd.DataFrame) -> Optional[str]:
    """The loss a panel's curves show: ``train_loss`` where any is recorded, else ``val_loss`` (a trainer that
    reports validation curves only), None where neither is."""
    for column in ("train_loss", "val_loss"):
        if column in curves.columns and np.isfinite(pd.to_numeric(curves[column], errors="coerce")).any():
            return column
    return None


def curves_figure(runs: Sequence[CurveRun]) -> Any:
    """The loss curve of each width at the trained learning rate nearest its fitted η* (``chosen_lr``; the mean
    over the grid seeds' trials there), one panel per setup (several runs: ``layout.grid_of_panels``). A panel
    whose trainer reports no training loss draws the validation curves and says so."""
    staged = [(name, final_stages(trials), curves, setups) for name, trials, curves, setups in runs]
    fig, placed = grid_of_panels([(name, trials[trials["search_key"] == LR_KEY], {})
                                  for name, trials, _, _ in staged])
    tables = {name: (trials, curves, setups) for name, trials, curves, setups in staged}
    for ax, run, setup, _ in placed:
        trials, curves, setups = tables[run]
        _panel(ax, trials, curves, setup, judged_fit(setups, setup, "width"), panel_name(run, setup, len(runs) > 1))
    fit_title(fig, [["Loss curves per width at the trained learning rate nearest η*"],
                    ["η*: the fitted optimum transfer.png marks ◆ (the lowest mean loss where none was fitted)",
                     "mean of the seeds that trained the grid"]])
    return fig


def _panel(ax: Any, trials: pd.DataFrame, curves: pd.DataFrame, setup: str, fit: Optional[AxisFit],
           name: str) -> None:
    """One setup's curves: per width the chosen learning rate's mean curve, labelled with it and η*."""
    rows = trials[(trials["search_key"] == LR_KEY) & (trials["status"] == TrialStatus.OK) & (trials["setup"] == setup)]
    mine = curves[(curves["setup"] == setup) & (curves["search_key"] == LR_KEY)]
    chosen: dict[Any, tuple[ChosenLR, pd.DataFrame]] = {}
    for width, part in rows.groupby("width"):
        pick = chosen_lr(part, fit.points.get(point_value(width)) if fit is not None else None)
        if pick is not None:
            drawn = pd.Series(list(zip(mine["trial"], mine["seed"])), index=mine.index).isin(pick.trials)
            chosen[width] = (pick, mine[(mine["width"] == width) & drawn])
    metric = curve_metric(pd.concat([part for _, part in chosen.values()])) if chosen else None
    colors = point_colors(list(chosen))
    for width, (pick, part) in chosen.items() if metric is not None else ():
        line = part.assign(loss=pd.to_numeric(part[metric], errors="coerce")).groupby("step")["loss"].mean().dropna()
        ax.plot(line.index, line.to_numpy(), "-o" if metric == "val_loss" else "-", ms=3.5, lw=1.2,
                color=colors[width], label=f"width {width}: {pick.words()}")
    kind = "validation" if metric == "val_loss" else "training"
    note = "\nthe trainer reports no training loss: validation curves" if metric == "val_loss" else ""
    if metric is None:
        ax.text(0.5, 0.5, "no loss curves recorded", ha="center", va="center", transform=ax.transAxes)
    finish_panel(ax, f"{name}: {kind} loss at the trained LR nearest η*{note}", "step", f"{kind} loss (nats/token)",
                 title_size=10)
