"""Figures from tidy tables only (trials.csv, curves.csv and the summary computed from them). No torch."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..files import atomic_path
from ..schema import LR_COLUMN, LR_KEY, axis_named
from .bowl import Vertex, bowl_loss
from .colors import ordered_colors, readable
from .summary import axis_entry

__all__ = ["transfer_figure", "drift_figure", "curves_figure", "save", "mark_partial", "fitted_bowl", "BOWL_OCTAVES",
           "FITTED_BOWL"]


PANELS_PER_ROW = 3
"""A figure with more panels than this wraps them into rows."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(widths: Sequence[int]) -> dict[int, Any]:
    """One colour per width (depth, horizon), dark to light along viridis, each readable on white."""
    ordered = sorted(widths)
    return dict(zip(ordered, ordered_colors(len(ordered))))


def _grid_of_panels(runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], sharex: bool = True
                    ) -> tuple[Any, list[tuple[Any, str, str, int]]]:
    """The figure and its panels: one row per run and one column per setup (x shared down a column: one setup's
    searched range; y along a row: one run's losses) when there are several runs; one run's setups wrapped
    ``PANELS_PER_ROW`` to a row, all sharing y.
    Returns (figure, [(axes, run, setup, run index)])."""
    plt = _pyplot()
    setups = list(dict.fromkeys(s for _, trials, _ in runs for s in trials[trials["search_key"] == LR_KEY]["setup"]))
    count = max(1, len(setups))
    if len(runs) > 1:
        rows_of, per_row = len(runs), count
    else:
        rows_of = math.ceil(count / PANELS_PER_ROW)
        per_row = math.ceil(count / rows_of)
    fig, grid = plt.subplots(rows_of, per_row, figsize=(6.4 * per_row, 4.4 * rows_of),
                             sharey="row" if len(runs) > 1 else True,
                             sharex="col" if len(runs) > 1 and sharex else False, squeeze=False,
                             layout="constrained")
    flat = list(grid.reshape(-1))
    placed = []
    for r, (run, trials, _) in enumerate(runs):
        own = set(trials[trials["search_key"] == LR_KEY]["setup"])
        for c, setup in enumerate(setups):
            ax = grid[r][c] if len(runs) > 1 else flat[c]
            if setup in own:
                placed.append((ax, run, setup, r))
    used = {id(ax) for ax, *_ in placed}
    for ax in flat:
        if id(ax) not in used:
            ax.set_visible(False)
    return fig, placed


FITTED_BOWL = "fitted_bowl"
"""The gid of the line ``fitted_bowl`` draws."""

BOWL_OCTAVES = 1.5
"""The loss axis shows every curve within this many octaves of its LR*; a loss further out above that range is
clipped and marked ▲ at the panel's top edge."""


def _label_rows(placed: Sequence[tuple[Any, str, str, int]], ylabel: str) -> None:
    """The loss label and tick labels on each row's first drawn panel (a run's first setup may not be the
    figure's first column)."""
    seen: set[int] = set()
    for ax, *_ in sorted(placed, key=lambda p: (p[0].get_subplotspec().rowspan.start,
                                                 p[0].get_subplotspec().colspan.start)):
        row = ax.get_subplotspec().rowspan.start
        if row not in seen:
            seen.add(row)
            ax.set_ylabel(ylabel)
            ax.tick_params(axis="y", labelleft=True)


def _bowl_range(panels: Sequence[tuple[pd.DataFrame, dict[str, Any]]], axis: str) -> tuple[float, float]:
    """(bottom, top) of the loss axis: every curve's lowest point and best loss, up to the highest loss any curve
    reaches within ``BOWL_OCTAVES`` of its LR* (of its lowest point where no LR* was estimated), padded."""
    lows, highs = [], []
    plural = axis_named(axis).plural
    for rows, info in panels:
        for width, part in rows.groupby("width"):
            ok = part[part["status"] == "ok"]
            if ok.empty:
                continue
            line = _grid_curve(part)
            opt = info.get(plural, {}).get(str(int(width))) or {}
            centre = opt.get("log2_lr_star")
            if centre is None or not np.isfinite(centre):
                centre = float(line.loc[line["val_loss"].idxmin(), LR_COLUMN])
            near = ok[(ok[LR_COLUMN] - centre).abs() <= BOWL_OCTAVES + 1e-9]["val_loss"]
            lows.append(min(float(ok["val_loss"].min()), float(opt.get("best_loss") or np.inf)))
            highs.append(float(near.max()) if len(near) else float(line["val_loss"].min()))
    if not lows:
        return 0.0, 1.0
    low, high = min(lows), max(highs)
    pad = 0.08 * (high - low if high > low else 1.0)
    return low - pad, high + pad


def _title(name: str, info: dict[str, Any], axis: str, symbol: str = "LR") -> str:
    """A panel's title: the setup, its verdict, and the slope with its 95 % interval."""
    verdict, slope = info.get("verdict", ""), info.get("slope")
    if slope is None:
        return f"{name}: {verdict}" if verdict else name
    lo, hi = info.get("slope_ci") or (math.nan, math.nan)
    return f"{name}: {verdict}\n{symbol}* slope {slope:+.2f} [{lo:+.2f}, {hi:+.2f}] octaves per {axis} doubling"


def transfer_figure(runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], axis: str = "width",
                    symbol: str = "LR", quantity: str = "base learning rate η", log2: bool = True) -> Any:
    """Loss vs log2(LR), one line per width (the seeds that trained the grid), the seeds' spread shaded where
    several trained a point (the noise probes), one panel per setup (a row per run), each run's loss axis set by
    its bowls (``_bowl_range``). LR* is marked at the vertex of its fitted bowl (drawn thin through the fit
    window's points) at the best loss, its 95 % interval a horizontal bar; an
    optimum at the grid's edge is ◀ / ▶ at that edge; a diverged learning rate is × at the top edge where no seed
    trained it to a finite loss. With ``axis='depth'`` (or ``'steps'``) the tables' ``width`` column holds the
    depths (horizons), and each setup's ``axes.depth`` entry gives the optima. Another searched key (``symbol``,
    ``quantity``; its tables through ``key_view``) draws the same way, and a point whose entry has ``off_loss``
    (weight decay off) gets it as a dashed line."""
    fig, placed = _grid_of_panels(runs)
    summaries = {run: summary for run, _, summary in runs}
    tables = {run: trials for run, trials, _ in runs}
    parts = [(tables[run][(tables[run]["search_key"] == LR_KEY) & (tables[run]["setup"] == setup)],
              axis_entry(summaries[run].get("setups", {}).get(setup, {}), axis)) for _, run, setup, _ in placed]
    ranges = {index: _bowl_range([part for (*_, i), part in zip(placed, parts) if i == index], axis)
              for index in {i for *_, i in placed}}
    plural = axis_named(axis).plural
    for (ax, run, setup, index), (rows, info) in zip(placed, parts):
        bottom, top = ranges[index]
        colors = _colors(rows["width"].unique())
        for width, part in rows.groupby("width"):
            color = colors[int(width)]
            line = _grid_curve(part)
            ax.plot(line[LR_COLUMN], line["val_loss"], "-o", color=color, ms=3.5, lw=1.5, label=f"{axis} {width}")
            _spread(ax, part, color)
            above = line[line["val_loss"] > top][LR_COLUMN].tolist()
            finite = set(np.round(part[part["status"] == "ok"][LR_COLUMN], 9))
            div = [x for x in part[part["status"] == "diverged"][LR_COLUMN].unique() if round(x, 9) not in finite]
            _at_top(ax, above, top, "^", color)
            _at_top(ax, div, top, "x", color)
            opt = info.get(plural, {}).get(str(int(width)))
            if opt and opt.get("log2_lr_star") is not None:
                fitted_bowl(ax, opt, color)
                _optimum_marker(ax, opt, part, line, color)
            if opt and opt.get("off_loss") is not None:
                ax.axhline(opt["off_loss"], ls="--", lw=0.9, color=color)
        ax.set_ylim(bottom, top)
        name = setup if len(runs) == 1 else f"{run}: {setup}"
        _label(ax, _title(name, info, axis, symbol), f"log2({quantity})" if log2 else quantity, title_size=10)
    _label_rows(placed, "validation loss (nats/token)")
    off = "\n- - - loss with weight decay off, per width" if symbol != "LR" else ""
    fig.suptitle(f"Loss vs {quantity} per {axis}\n◆ {symbol}* at the vertex of its fitted bowl (thin line) with its "
                 f"95 % interval · ◀ ▶ optimum "
                 f"at the grid's edge\n▲ loss above the range shown · × diverged{off}", fontsize=10)
    return fig


def _at_top(ax: Any, xs: Sequence[float], top: float, marker: str, color: Any) -> None:
    """Markers on the panel's top edge at ``xs`` (losses above the range shown, or diverged), unclipped."""
    if len(xs):
        ax.plot(xs, np.full(len(xs), top), marker, color=color, ms=6 if marker == "^" else 7,
                mew=2 if marker == "x" else 1, clip_on=False)


def _spread(ax: Any, part: pd.DataFrame, color: Any) -> None:
    """The seeds' spread, shaded, where several seeds trained a point."""
    ok = part[part["status"] == "ok"]
    if ok["seed"].nunique() > 1:
        spread = ok.groupby(LR_COLUMN)["val_loss"].agg(["min", "max", "count"]).reset_index()
        spread = spread[spread["count"] > 1]
        ax.fill_between(spread[LR_COLUMN], spread["min"], spread["max"], color=color, alpha=0.25, lw=0)


def _interval_bars(opt: dict[str, Any]) -> tuple[float, float]:
    """The distances from LR* to its interval's ends (0 on a censored, open side)."""
    lo, hi = opt["ci"] if opt.get("ci") else (None, None)
    x = opt["log2_lr_star"]
    below = x - lo if lo is not None and np.isfinite(lo) else 0.0
    above = hi - x if hi is not None and np.isfinite(hi) else 0.0
    return below, above


def fitted_bowl(ax: Any, opt: dict[str, Any], color: Any) -> None:
    """The two-sided parabola the optimum was fitted as (``analysis.bowl``), thin, across its fit window and its
    vertex: the curve the optimum's marker sits on. Nothing where no bowl was fitted (a flat curve, an optimum at
    the grid's edge, a summary written before the bowl was recorded)."""
    curvature, window = opt.get("curvature"), opt.get("window") or []
    if curvature is None or not window or opt.get("best_loss") is None:
        return
    x_star = float(opt["log2_lr_star"])
    xs = np.union1d(np.linspace(min(min(window), x_star), max(max(window), x_star), 61), [x_star])
    ys = bowl_loss(xs, Vertex(x_star, None, float(opt["best_loss"]), float(curvature)), float(opt.get("asymmetry", 1.0)))
    ax.plot(xs, ys, "-", color=color, lw=0.9, alpha=0.85, gid=FITTED_BOWL, label="_fitted bowl", zorder=3)


def mark_partial(fig: Any, line: str) -> None:
    """``line`` (``PARTIAL: …``) in red at the figure's top left: a figure made from an unfinished sweep."""
    fig.text(0.01, 0.995, line, color="#b00020", va="top", fontsize=9)


def _optimum_marker(ax: Any, opt: dict[str, Any], part: pd.DataFrame, line: pd.DataFrame, color: Any) -> None:
    """◆ at (LR*, best loss) with its interval as a horizontal bar; for an optimum censored at the grid's edge,
    ◀ or ▶ on the curve's point at that edge."""
    edge = opt.get("censored")
    if edge in ("low", "high"):
        x = float(part[LR_COLUMN].min() if edge == "low" else part[LR_COLUMN].max())
        at = line[np.isclose(line[LR_COLUMN], x)]
        y = float(at["val_loss"].iloc[0]) if len(at) else float(opt["best_loss"])
        ax.plot([x], [y], "<" if edge == "low" else ">", color=color, ms=9, mec="black", mew=0.6, zorder=4)
        return
    below, above = _interval_bars(opt)
    ax.errorbar([opt["log2_lr_star"]], [opt["best_loss"]], xerr=[[below], [above]], fmt="D", color=color, ms=6,
                mec="black", mew=0.6, capsize=3, lw=1.4, zorder=4)


def drift_figure(runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], axes: Sequence[str] = ("width",),
                 symbol: str = "LR", quantity: str = "base learning rate η", log2: bool = True) -> Any:
    """log2(LR*) vs log2(width) with intervals and the fitted line, one series per setup; one panel per axis
    in ``axes`` (a setup's depth and steps entries are its summary's ``axes.depth`` and ``axes.steps``); another
    searched key as ``transfer_figure`` draws one."""
    plt = _pyplot()
    fig, panels = plt.subplots(1, len(axes), figsize=(10.5 * len(axes), 4.6), layout="constrained", squeeze=False)
    for ax, axis in zip(panels[0], axes):
        _drift_panel(ax, runs, axis, symbol, f"log2({symbol}*)  ({quantity})" if log2 else f"{symbol}*")
    return fig


def _drift_panel(ax: Any, runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], axis: str, symbol: str,
                 ylabel: str) -> None:
    plural = axis_named(axis).plural
    cmap = _pyplot().get_cmap("tab10")
    index = 0
    for run, _, summary in runs:
        for setup, whole in summary.get("setups", {}).items():
            info = axis_entry(whole, axis)
            points = info.get(plural, {})
            widths = sorted(int(w) for w, o in points.items() if o.get("log2_lr_star") is not None)
            if not widths:
                continue
            label = setup if len(runs) == 1 else f"{run}: {setup}"
            color = readable(cmap(index % 10))
            index += 1
            slope = info.get("slope")
            if slope is not None:
                lo, hi = info["slope_ci"]
                label += f" (slope {slope:+.2f} [{lo:+.2f}, {hi:+.2f}], {info['verdict']})"
                if axis == "steps" and symbol == "LR":
                    label += f", β = {-slope:.2f}"
                x = np.log2(widths)
                ax.plot(x, info["intercept"] + slope * x, "--", color=color, lw=1)
            else:
                label += f" ({info.get('verdict', 'inconclusive')})"
            for i, width in enumerate(widths):
                opt = points[str(width)]
                below, above = _interval_bars(opt)
                marker = {"low": "v", "high": "^"}.get(opt.get("censored") or "", "o")
                ax.errorbar([np.log2(width)], [opt["log2_lr_star"]], yerr=[[below], [above]], fmt=marker, color=color,
                            capsize=3, label=label if i == 0 else None)
    all_widths = sorted({int(w) for _, _, summary in runs for info in summary.get("setups", {}).values()
                         for w in axis_entry(info, axis).get(plural, {})})
    if all_widths:
        ax.set_xticks(np.log2(all_widths), [str(w) for w in all_widths])
    _label(ax, f"{symbol}* vs {axis}  (▼ ▲ past the grid's edge)", f"{axis} (log2 axis)", ylabel)


def _label(ax: Any, title: str, xlabel: str, ylabel: str | None = None, title_size: float | None = None) -> None:
    """Title, axis labels, a light grid and a small legend outside the panel, to its right, where it covers no
    data: the finish every figure's panels share."""
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def curves_figure(runs: Sequence[tuple[str, pd.DataFrame, pd.DataFrame]]) -> Any:
    """Training loss curves of each width's lowest-loss trial, one panel per setup (a row per run, steps and loss
    shared). ``runs``: (name, trials, curves)."""
    fig, placed = _grid_of_panels([(name, trials, {}) for name, trials, _ in runs])
    tables = {name: (trials, curves) for name, trials, curves in runs}
    for ax, run, setup, _ in placed:
        trials, curves = tables[run]
        rows = trials[(trials["search_key"] == LR_KEY) & (trials["status"] == "ok") & (trials["setup"] == setup)]
        colors = _colors(rows["width"].unique())
        for width, part in rows.groupby("width"):
            best = part.loc[part["val_loss"].idxmin()]
            curve = curves[(curves["trial"] == best["trial"]) & (curves["setup"] == setup) &
                           (curves["width"] == width) & (curves["seed"] == best["seed"]) &
                           (curves["search_key"] == LR_KEY)]
            ax.plot(curve["step"], curve["train_loss"], color=colors[int(width)], lw=1.2,
                    label=f"width {width}, log2 η={best[LR_COLUMN]:.2f}")
        name = setup if len(runs) == 1 else f"{run}: {setup}"
        _label(ax, f"{name}: training loss at each width's lowest-loss LR", "step", title_size=10)
    _label_rows(placed, "training loss (nats/token)")
    return fig


def _grid_curve(rows: pd.DataFrame, x: str = LR_COLUMN, y: str = "val_loss") -> pd.DataFrame:
    """Mean ok loss per searched value over the seeds that trained the most points (the grid seeds)."""
    ok = rows[rows["status"] == "ok"]
    points = ok.groupby("seed")[x].nunique()
    grid = ok[ok["seed"].isin(points[points == points.max()].index)]
    return grid.groupby(x)[y].mean().reset_index()


def save(fig: Any, path: Path, dpi: int = 120) -> None:
    """Write atomically (temp file + rename) and close the figure, also when writing fails."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    finally:
        _pyplot().close(fig)
