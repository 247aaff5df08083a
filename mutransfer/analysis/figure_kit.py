"""What every figure shares: pyplot without a display, a colour per point of an axis, the line a point's grid
seeds draw, an optimum's interval bars, its fitted bowl, the markers at a panel's top edge, the finish of a panel,
short tick labels on a log2 axis, legends kept inside their panels and off the data, the partial-run mark, a
setup's fit as a reader is shown it, and the atomic save. Tidy tables and results in; no torch."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..files import atomic_path
from ..words import TrialStatus
from .bowl import Vertex, bowl_loss
from .colors import ordered_colors
from .result import AxisFit, PointResult, SetupResult

__all__ = ["pyplot", "point_colors", "grid_curve", "interval_bars", "fitted_bowl", "mark_at_top", "finish_panel",
           "mark_partial", "save", "PANELS_PER_ROW", "FITTED_BOWL", "BOWL_OCTAVES", "short_number", "spread_values",
           "log2_ticks", "MOST_TICKS", "keep_legends_clear", "judged_fit"]


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


def finish_panel(ax: Any, title: str, xlabel: str, ylabel: str | None = None, title_size: float | None = None,
                 legend_inside: bool = False) -> None:
    """Title, axis labels, a light grid and a small legend: outside the panel, to its right, where it covers no
    data (the finish every figure's panels share); with ``legend_inside``, in the panel's best corner (two columns
    from four entries on), which ``keep_legends_clear`` then keeps off the data."""
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    entries = len(ax.get_legend_handles_labels()[0])
    if entries and legend_inside:
        ax.legend(fontsize=8, loc="best", ncol=2 if entries >= 4 else 1)
    elif entries:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))
"""Decimal suffixes ``short_number`` writes, largest first: trillion, billion, million, thousand."""


def short_number(value: float) -> str:
    """``value`` in at most 5 characters for a tick label: a whole number below 10 000 as it is (``"128"``,
    ``"4096"``), larger ones in 3 significant digits with a decimal suffix (``"65.5k"``, ``"188M"``, ``"2B"``,
    ``"1.5T"``), from 1000 T on and below 0.001 in 2 significant digits with a bare exponent (``"1.9e17"``)."""
    number = float(value)
    if not math.isfinite(number) or number == 0:
        return "0" if number == 0 else str(number)
    sign, size = ("-" if number < 0 else ""), abs(number)
    if size < 10_000 and size == int(size):
        return f"{sign}{int(size)}"
    rounded = float(f"{size:.3g}")
    if 1e-3 <= rounded < 1e3:
        return sign + _trimmed(f"{rounded:.3g}")
    for scale, suffix in _SUFFIXES:
        if 1e3 <= rounded < 1e15 and rounded >= scale:
            return f"{sign}{_trimmed(f'{rounded / scale:.3g}')}{suffix}"
    mantissa, exponent = f"{size:.1e}".split("e")
    return f"{sign}{_trimmed(mantissa)}e{int(exponent)}"


def _trimmed(text: str) -> str:
    """A decimal without trailing zeros after its point (``"1.50"`` → ``"1.5"``, ``"2.0"`` → ``"2"``)."""
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


MOST_TICKS = 6
"""The most labelled ticks ``log2_ticks`` puts on a panel's x axis."""


def spread_values(values: Sequence[float], most: int = MOST_TICKS) -> list[float]:
    """At most ``most`` of ``values``, the smallest and the largest among them, the rest at least 1/(most - 1)
    of the values' log2 span apart: the values a log2 axis labels without crowding."""
    ordered = sorted({float(v) for v in values if float(v) > 0})
    if len(ordered) <= most:
        return ordered
    logs = np.log2(ordered)
    gap = (logs[-1] - logs[0]) / (most - 1)
    kept = [0]
    for i in range(1, len(ordered)):
        if logs[i] - logs[kept[-1]] >= gap - 1e-9:
            kept.append(i)
    if kept[-1] != len(ordered) - 1:
        if logs[-1] - logs[kept[-1]] < gap - 1e-9 and len(kept) > 1:
            kept[-1] = len(ordered) - 1
        else:
            kept.append(len(ordered) - 1)
    return [ordered[i] for i in kept]


def log2_ticks(ax: Any, values: Sequence[float], most: int = MOST_TICKS) -> None:
    """An x axis drawn at log2 of the values: a minor tick at every value, a labelled major tick (``short_number``)
    at no more than ``most`` of them (``spread_values``)."""
    every = sorted({float(v) for v in values if float(v) > 0})
    if not every:
        return
    labelled = spread_values(every, most)
    ax.set_xticks(np.log2(labelled), [short_number(v) for v in labelled])
    ax.set_xticks(np.log2(every), minor=True)
    ax.tick_params(axis="x", which="minor", labelbottom=False)


def keep_legends_clear(fig: Any) -> None:
    """Every visible panel's legend inside its panel and off its plotted points: a legend whose place covers a
    point moves to the panel's top left, and the y axis grows upward until every point lies below it; a legend
    wider than its panel gets a smaller font in one column."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not ax.get_visible():
            continue
        frame = ax.get_window_extent(renderer)
        if legend.get_window_extent(renderer).width > frame.width:
            legend = ax.legend(fontsize=6.5, loc="best", ncol=1)
            fig.canvas.draw()
        points = _plotted_points(ax)
        if not _covers(legend.get_window_extent(renderer), ax.transData.transform(points)):
            continue
        legend.set_loc("upper left")
        fig.canvas.draw()
        box = legend.get_window_extent(renderer)
        free = (box.y0 - frame.y0 - 8 * fig.dpi / 72) / frame.height
        low, high = ax.get_ylim()
        top = float(points[:, 1].max())
        if free > 0.2 and top > low:
            ax.set_ylim(low, max(high, low + (top - low) / free))


def _plotted_points(ax: Any) -> np.ndarray:
    """Every finite vertex of a panel's lines and line collections (error bars), in data coordinates."""
    parts = [np.column_stack([np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)])
             for line in ax.get_lines() if len(line.get_xdata())]
    parts += [np.asarray(segment, float).reshape(-1, 2) for collection in ax.collections
              if hasattr(collection, "get_segments") for segment in collection.get_segments() if len(segment)]
    points = np.vstack(parts) if parts else np.empty((0, 2))
    return points[np.isfinite(points).all(axis=1)]


def _covers(box: Any, points: np.ndarray) -> bool:
    """Whether the display box holds any of the display points."""
    if not len(points):
        return False
    return bool(((points[:, 0] > box.x0) & (points[:, 0] < box.x1) &
                 (points[:, 1] > box.y0) & (points[:, 1] < box.y1)).any())


def judged_fit(setups: Mapping[str, SetupResult], setup: str, axis: str) -> Optional[AxisFit]:
    """A setup's fit along ``axis`` as a reader is shown it (``SetupResult.judged``), None where it has none."""
    result = setups.get(setup)
    return result.judged(axis) if result is not None and axis in result.axes else None


def grid_curve(rows: pd.DataFrame, opt: Optional[PointResult]) -> pd.DataFrame:
    """One point's tidy rows as the line a figure draws: the mean ok loss per searched value over the seeds that
    trained the grid (the analysis's ``grid_seeds``: the noise probes train the fit window only); over every seed
    where the point has no result."""
    ok = rows[rows["status"] == TrialStatus.OK]
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
