"""What every figure shares: pyplot without a display, a colour per point of an axis, the line a point's grid
seeds draw, an optimum's interval bars, its fitted bowl, the markers at a panel's top edge, the finish of a panel,
the partial-run mark, and the atomic save. Tidy tables and results in; no torch."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..files import atomic_path
from .bowl import Vertex, bowl_loss
from .colors import ordered_colors
from .result import PointResult

__all__ = ["pyplot", "point_colors", "grid_curve", "interval_bars", "fitted_bowl", "mark_at_top", "finish_panel",
           "mark_partial", "save", "PANELS_PER_ROW", "FITTED_BOWL", "BOWL_OCTAVES"]


PANELS_PER_ROW = 3
"""A figure with more panels than this wraps them into rows."""


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def point_colors(points: Sequence[Any]) -> dict[Any, Any]:
    """One colour per point of an axis (width, depth, horizon …), dark to light along viridis, each readable on
    white."""
    ordered = sorted(points)
    return dict(zip(ordered, ordered_colors(len(ordered))))


FITTED_BOWL = "fitted_bowl"
"""The gid of the line ``fitted_bowl`` draws."""


BOWL_OCTAVES = 1.5
"""The loss axis shows every curve within this many octaves of its LR*; a loss further out above that range is
clipped and marked ▲ at the panel's top edge."""


def mark_at_top(ax: Any, xs: Sequence[float], top: float, marker: str, color: Any) -> None:
    """Markers on the panel's top edge at ``xs`` (losses above the range shown, or diverged), unclipped."""
    if len(xs):
        ax.plot(xs, np.full(len(xs), top), marker, color=color, ms=6 if marker == "^" else 7,
                mew=2 if marker == "x" else 1, clip_on=False)


def interval_bars(opt: PointResult) -> tuple[float, float]:
    """The distances from x* to its interval's ends (0 on a censored, open side)."""
    assert opt.x_star is not None
    lo, hi = opt.ci if opt.ci is not None else (math.nan, math.nan)
    below = opt.x_star - lo if np.isfinite(lo) else 0.0
    above = hi - opt.x_star if np.isfinite(hi) else 0.0
    return below, above


def fitted_bowl(ax: Any, opt: PointResult, color: Any) -> None:
    """The two-sided parabola the optimum was fitted as (``analysis.bowl``), thin, across its fit window and its
    vertex: the curve the optimum's marker sits on. Nothing where no bowl was fitted (a flat curve, an optimum at
    the grid's edge, a summary written before the bowl was recorded)."""
    if opt.curvature is None or not opt.window or opt.best_loss is None or opt.x_star is None:
        return
    x_star = float(opt.x_star)
    xs = np.union1d(np.linspace(min(min(opt.window), x_star), max(max(opt.window), x_star), 61), [x_star])
    ys = bowl_loss(xs, Vertex(x_star, None, float(opt.best_loss), float(opt.curvature)), float(opt.asymmetry))
    ax.plot(xs, ys, "-", color=color, lw=0.9, alpha=0.85, gid=FITTED_BOWL, label="_fitted bowl", zorder=3)


def mark_partial(fig: Any, line: str) -> None:
    """``line`` (``PARTIAL: …``) in red at the figure's top left: a figure made from an unfinished sweep."""
    fig.text(0.01, 0.995, line, color="#b00020", va="top", fontsize=9)


def finish_panel(ax: Any, title: str, xlabel: str, ylabel: str | None = None, title_size: float | None = None) -> None:
    """Title, axis labels, a light grid and a small legend outside the panel, to its right, where it covers no
    data: the finish every figure's panels share."""
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def grid_curve(rows: pd.DataFrame, opt: Optional[PointResult]) -> pd.DataFrame:
    """One point's tidy rows as the line a figure draws: the mean ok loss per searched value over the seeds that
    trained the grid (the analysis's ``grid_seeds``: the noise probes train the fit window only); over every seed
    where the point has no result."""
    ok = rows[rows["status"] == "ok"]
    if opt is not None and opt.grid_seeds:
        ok = ok[ok["seed"].isin(opt.grid_seeds)]
    return ok.groupby("x")["loss"].mean().reset_index()


def save(fig: Any, path: Path, dpi: int = 120) -> None:
    """Write atomically (temp file + rename) and close the figure, also when writing fails."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    finally:
        pyplot().close(fig)
