"""Figures from tidy tables only (one key's rows along one axis, curves.csv) and the results computed from them
(``analysis.result``). No torch."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import LR_COLUMN, LR_KEY
from ..table.constants import constant_keys
from ..table.decay import DECAY_SYMBOLS
from .colors import readable
from .figure_kit import (BOWL_OCTAVES, FITTED_BOWL, PANELS_PER_ROW, finish_panel, fitted_bowl, grid_curve,
                         interval_bars, keep_legends_clear, log2_ticks, mark_at_top, mark_partial, point_colors,
                         pyplot, save)
from .result import AxisFit, PointResult, SetupResult, point_key, point_value

__all__ = ["Run", "key_label", "KEY_WORDS", "transfer_figure", "drift_figure", "curves_figure", "save", "mark_partial",
           "fitted_bowl", "BOWL_OCTAVES", "FITTED_BOWL", "DRIFT_WIDTH", "DRIFT_PANEL"]


KEY_WORDS = {"optimizer.weight_decay": "weight decay λ",
             "optimizer.weight_decay_timescale": "weight-decay timescale τ"}
"""How figures name a searched key besides the learning rate."""


def key_label(key: str) -> tuple[str, str]:
    """(symbol, quantity) naming a searched key on a figure: ``("τ", "weight-decay timescale τ")``; the learning
    rate's ``("LR", "base learning rate η")``."""
    if key == LR_KEY:
        return "LR", "base learning rate η"
    if key in constant_keys():
        return key.removeprefix("optimizer."), f"{key.removeprefix('optimizer.')} × shipped"
    return DECAY_SYMBOLS.get(key, key.rsplit(".", 1)[-1]), KEY_WORDS.get(key, key)


Run = tuple[str, pd.DataFrame, Mapping[str, SetupResult]]
"""A run as a figure reads it: its name, one key's tidy rows along one axis (``summary.axis_table``: setup,
point, seed, x, loss, status) and the key's setups' results."""


def _grid_of_panels(runs: Sequence[tuple[str, pd.DataFrame, Any]], sharex: bool = True
                    ) -> tuple[Any, list[tuple[Any, str, str, int]]]:
    """The figure and its panels: one row per run and one column per setup (x shared down a column: one setup's
    searched range; y along a row: one run's losses) when there are several runs; one run's setups wrapped
    ``PANELS_PER_ROW`` to a row, all sharing y.
    Returns (figure, [(axes, run, setup, run index)])."""
    plt = pyplot()
    setups = list(dict.fromkeys(s for _, rows, _ in runs for s in rows["setup"]))
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
    for r, (run, rows, _) in enumerate(runs):
        own = set(rows["setup"])
        for c, setup in enumerate(setups):
            ax = grid[r][c] if len(runs) > 1 else flat[c]
            if setup in own:
                placed.append((ax, run, setup, r))
    used = {id(ax) for ax, *_ in placed}
    for ax in flat:
        if id(ax) not in used:
            ax.set_visible(False)
    return fig, placed


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


def _bowl_range(panels: Sequence[tuple[pd.DataFrame, Optional[AxisFit]]]) -> tuple[float, float]:
    """(bottom, top) of the loss axis: every curve's lowest point and best loss, up to the highest loss any curve
    reaches within ``BOWL_OCTAVES`` of its x* (of its lowest point where no x* was estimated), padded."""
    lows, highs = [], []
    for rows, fit in panels:
        for point, part in rows.groupby("point"):
            ok = part[part["status"] == "ok"]
            if ok.empty:
                continue
            opt = _point(fit, point)
            line = grid_curve(part, opt)
            centre = opt.x_star if opt is not None else None
            if centre is None or not np.isfinite(centre):
                centre = float(line.loc[line["loss"].idxmin(), "x"])
            near = ok[(ok["x"] - centre).abs() <= BOWL_OCTAVES + 1e-9]["loss"]
            best = opt.best_loss if opt is not None and opt.best_loss is not None else np.inf
            lows.append(min(float(ok["loss"].min()), float(best)))
            highs.append(float(near.max()) if len(near) else float(line["loss"].min()))
    if not lows:
        return 0.0, 1.0
    low, high = min(lows), max(highs)
    pad = 0.08 * (high - low if high > low else 1.0)
    return low - pad, high + pad


def _point(fit: Optional[AxisFit], point: Any) -> Optional[PointResult]:
    """The result at ``point`` (a value of the tidy table's ``point`` column), None where there is none."""
    return fit.points.get(point_value(point)) if fit is not None else None


def _title(name: str, fit: Optional[AxisFit], axis: str, symbol: str = "LR") -> str:
    """A panel's title: the setup, its verdict, and the slope with its 95 % interval; a tuned constant measured at
    one width alone: whether it matters there, and its gain over factor 1."""
    verdict = fit.verdict if fit is not None else ""
    if fit is not None and len(fit.points) == 1:
        effect = next(iter(fit.points.values())).constant
        if effect is not None:
            gain = f", gain {effect.gain:+.3f} nats over factor 1" if effect.gain is not None else ""
            return f"{name}: {effect.verdict}{gain}"
    if fit is None or fit.slope is None:
        return f"{name}: {verdict}" if verdict else name
    lo, hi = fit.slope_ci or (math.nan, math.nan)
    return f"{name}: {verdict}\n{symbol}* slope {fit.slope:+.2f} [{lo:+.2f}, {hi:+.2f}] octaves per {axis} doubling"


def _judged(setups: Mapping[str, SetupResult], setup: str, axis: str) -> Optional[AxisFit]:
    """A setup's fit along ``axis`` as a reader is shown it (``SetupResult.judged``), None where it has none."""
    result = setups.get(setup)
    return result.judged(axis) if result is not None and axis in result.axes else None


def transfer_figure(runs: Sequence[Run], axis: str = "width", symbol: str = "LR",
                    quantity: str = "base learning rate η", log2: bool = True) -> Any:
    """Loss vs the searched value x, one line per point of ``axis`` (the seeds that trained the grid), the seeds'
    spread shaded where several trained a point (the noise probes), one panel per setup (a row per run), each run's
    loss axis set by its bowls (``_bowl_range``). x* is marked at the vertex of its fitted bowl (drawn thin through
    the fit window's points) at the best loss, its 95 % interval a horizontal bar; an optimum at the grid's edge is
    ◀ / ▶ at that edge; a diverged value is × at the top edge where no seed trained it to a finite loss. A point
    whose result has a decay effect gets decay off's loss as a dashed line. ``symbol`` and ``quantity`` name the
    searched key (η for the learning rate)."""
    fig, placed = _grid_of_panels(runs)
    decay_drawn = False
    summaries = {run: setups for run, _, setups in runs}
    tables = {run: rows for run, rows, _ in runs}
    parts = [(tables[run][tables[run]["setup"] == setup], _judged(summaries[run], setup, axis))
             for _, run, setup, _ in placed]
    ranges = {index: _bowl_range([part for (*_, i), part in zip(placed, parts) if i == index])
              for index in {i for *_, i in placed}}
    for (ax, run, setup, index), (rows, fit) in zip(placed, parts):
        bottom, top = ranges[index]
        colors = point_colors(rows["point"].unique())
        for point, part in rows.groupby("point"):
            color = colors[point]
            opt = _point(fit, point)
            line = grid_curve(part, opt)
            ax.plot(line["x"], line["loss"], "-o", color=color, ms=3.5, lw=1.5,
                    label=f"{axis} {point_key(point_value(point))}")
            _spread(ax, part, color)
            above = line[line["loss"] > top]["x"].tolist()
            finite = set(np.round(part[part["status"] == "ok"]["x"], 9))
            div = [x for x in part[part["status"] == "diverged"]["x"].unique() if round(x, 9) not in finite]
            mark_at_top(ax, above, top, "^", color)
            mark_at_top(ax, div, top, "x", color)
            if opt is not None and opt.x_star is not None:
                fitted_bowl(ax, opt, color)
                _optimum_marker(ax, opt, part, line, color)
            if opt is not None and opt.decay is not None and opt.decay.off_loss is not None:
                ax.axhline(opt.decay.off_loss, ls="--", lw=0.9, color=color)
                decay_drawn = True
        ax.set_ylim(bottom, top)
        name = setup if len(runs) == 1 else f"{run}: {setup}"
        finish_panel(ax, _title(name, fit, axis, symbol), f"log2({quantity})" if log2 else quantity, title_size=10)
    _label_rows(placed, "validation loss (nats/token)")
    off = f"\n- - - loss with weight decay off, per {axis}" if decay_drawn else ""
    edge = " · " if len(symbol) <= 3 else "\n"
    fig.suptitle(f"Loss vs {quantity} per {axis}\n◆ {symbol}* at the vertex of its fitted bowl (thin line) with its "
                 f"95 % interval{edge}◀ ▶ optimum "
                 f"at the grid's edge\n▲ loss above the range shown · × diverged{off}", fontsize=10)
    return fig


def _spread(ax: Any, part: pd.DataFrame, color: Any) -> None:
    """The seeds' spread, shaded, where several seeds trained a point."""
    ok = part[part["status"] == "ok"]
    if ok["seed"].nunique() > 1:
        spread = ok.groupby("x")["loss"].agg(["min", "max", "count"]).reset_index()
        spread = spread[spread["count"] > 1]
        ax.fill_between(spread["x"], spread["min"], spread["max"], color=color, alpha=0.25, lw=0)


def _optimum_marker(ax: Any, opt: PointResult, part: pd.DataFrame, line: pd.DataFrame, color: Any) -> None:
    """◆ at (x*, best loss) with its interval as a horizontal bar; for an optimum censored at the grid's edge,
    ◀ or ▶ on the curve's point at that edge."""
    if opt.censored in ("low", "high"):
        x = float(part["x"].min() if opt.censored == "low" else part["x"].max())
        at = line[np.isclose(line["x"], x)]
        y = float(at["loss"].iloc[0]) if len(at) else float(opt.best_loss or math.nan)
        ax.plot([x], [y], "<" if opt.censored == "low" else ">", color=color, ms=9, mec="black", mew=0.6, zorder=4)
        return
    below, above = interval_bars(opt)
    ax.errorbar([opt.x_star], [opt.best_loss], xerr=[[below], [above]], fmt="D", color=color, ms=6,
                mec="black", mew=0.6, capsize=3, lw=1.4, zorder=4)


DRIFT_WIDTH = 13.0
"""The drift figure's width in inches when it holds several panels in a row (1560 px at ``save``'s 120 dpi); one
panel alone keeps ``DRIFT_PANEL`` inches."""
DRIFT_PANEL = (10.5, 4.6)
"""One drift panel's width and height in inches."""


def drift_figure(runs: Sequence[tuple[str, Mapping[str, SetupResult]]], axes: Sequence[str] = ("width",),
                 symbol: str = "LR", quantity: str = "base learning rate η", log2: bool = True) -> Any:
    """x* vs log2 of each axis's value with intervals and the fitted line, one series per setup (``runs``: each
    run's name and one key's setups); one panel per axis in ``axes``, ``PANELS_PER_ROW`` to a row, no wider than
    ``DRIFT_WIDTH`` in all; ``symbol`` and ``quantity`` name the key. A setup the law judges (``primary == "law"``)
    shows every point the law saw and the law's slope on each axis (``_law_series``)."""
    fig, panels = _drift_panels(len(axes))
    drawn_law = False
    for ax, axis in zip(panels, axes):
        drawn_law |= _drift_panel(ax, runs, axis, symbol, f"log2({symbol}*)  ({quantity})" if log2 else f"{symbol}*")
    if drawn_law:
        fig.suptitle("law setups: every point the law saw, its optimum with its 95 % interval (open ▽ △: a bound "
                     "at the grid's edge)\ndashed: the law's slope on the axis, the other axes at their weighted "
                     "centre", fontsize=9)
    keep_legends_clear(fig)
    return fig


def _drift_panels(count: int) -> tuple[Any, list[Any]]:
    """The figure and ``count`` panels, ``PANELS_PER_ROW`` to a row (the rows' spare panels hidden)."""
    count = max(1, count)
    rows = math.ceil(count / PANELS_PER_ROW)
    per_row = math.ceil(count / rows)
    width = DRIFT_PANEL[0] if per_row == 1 else DRIFT_WIDTH / per_row
    fig, grid = pyplot().subplots(rows, per_row, figsize=(width * per_row, DRIFT_PANEL[1] * rows),
                                  layout="constrained", squeeze=False)
    flat = list(grid.reshape(-1))
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def _drift_panel(ax: Any, runs: Sequence[tuple[str, Mapping[str, SetupResult]]], axis: str, symbol: str,
                 ylabel: str) -> bool:
    """One axis's panel: per setup its optima along the axis and its line (the law's points and slope for a setup
    the law judges); ticks at the data's values. Returns whether a law series was drawn."""
    cmap = pyplot().get_cmap("tab10")
    index = 0
    values: set[float] = set()
    drawn_law = False
    for run, setups in runs:
        for setup, result in setups.items():
            label = setup if len(runs) == 1 else f"{run}: {setup}"
            color = readable(cmap(index % 10))
            if _law_judges(result, axis):
                drawn = _law_series(ax, result, axis, label, color, symbol)
                drawn_law |= bool(drawn)
            else:
                drawn = _line_series(ax, _judged(setups, setup, axis), axis, label, color, symbol)
            if drawn:
                index += 1
                values.update(drawn)
    values.update(float(p) for _, setups in runs for result in setups.values() if axis in result.axes
                  for p in result.axes[axis].points)
    log2_ticks(ax, sorted(values))
    finish_panel(ax, f"{symbol}* vs {axis}  (▼ ▲ past the grid's edge)", f"{axis} (log2 axis)", ylabel,
                 legend_inside=True)
    return drawn_law


def _law_judges(result: SetupResult, axis: str) -> bool:
    """Whether ``axis``'s panel draws the setup's law: the law carries the setup and has a slope on the axis."""
    law = result.law
    return result.primary == "law" and law is not None and axis in law.axes and axis in law.coefficients


def _law_words(fit: AxisFit, axis: str, symbol: str) -> str:
    """The law's slope on the axis with its 95 % interval (and β on a learning rate's steps axis)."""
    if fit.slope is None:
        return "law: no slope"
    lo, hi = fit.slope_ci or (math.nan, math.nan)
    words = f"law slope {fit.slope:+.2f} [{lo:+.2f}, {hi:+.2f}]"
    if axis == "steps" and symbol == "LR":
        words += f", β = {-fit.slope:.2f}"
    return words


def _line_series(ax: Any, fit: Optional[AxisFit], axis: str, label: str, color: Any, symbol: str) -> list[float]:
    """A setup's optima along the axis (its cut through the other axes) with their intervals and its fitted line,
    ▼ ▲ at a bound past the grid's edge. Returns the values drawn (none where nothing was estimated)."""
    estimated = fit.estimated() if fit is not None else {}
    if fit is None or not estimated:
        return []
    points = sorted(estimated)
    if fit.slope is not None and fit.intercept is not None:
        lo, hi = fit.slope_ci or (math.nan, math.nan)
        label += f" (slope {fit.slope:+.2f} [{lo:+.2f}, {hi:+.2f}], {fit.verdict})"
        if axis == "steps" and symbol == "LR":
            label += f", β = {-fit.slope:.2f}"
        x = np.log2(points)
        ax.plot(x, fit.intercept + fit.slope * x, "--", color=color, lw=1)
    else:
        label += f" ({fit.verdict or 'inconclusive'})"
    for i, point in enumerate(points):
        opt = estimated[point]
        below, above = interval_bars(opt)
        marker = {"low": "v", "high": "^"}.get(opt.censored or "", "o")
        ax.errorbar([np.log2(point)], [opt.x_star], yerr=[[below], [above]], fmt=marker, color=color,
                    capsize=3, label=label if i == 0 else None)
    return [float(p) for p in points]


def _law_series(ax: Any, result: SetupResult, axis: str, label: str, color: Any, symbol: str) -> list[float]:
    """Every point the setup's law saw, at its value on the axis: its optimum with its 95 % interval, a bound at
    the grid's edge as an open ▽ / △; and the law's slope on the axis through the other axes' weighted centre,
    labelled with the law's verdict there (``SetupResult.judged``). Returns the values drawn."""
    law = result.law
    assert law is not None
    estimated = [p for p in law.points if p.result.estimated and p.result.x_star is not None and axis in p.at]
    if not estimated:
        return []
    fit = result.judged(axis)
    xs = np.log2([float(p.at[axis]) for p in estimated])
    centre = law.coefficients.get("intercept", 0.0) + sum(
        law.coefficients[other] * law.centre[other] for other in law.axes if other != axis and other in law.centre)
    ends = np.array([xs.min(), xs.max()])
    ax.plot(ends, centre + law.coefficients[axis] * ends, "--", color=color, lw=1.2)
    for censored, marker in ((None, "o"), ("low", "v"), ("high", "^")):
        chosen = [i for i, p in enumerate(estimated) if (p.result.censored or None) == censored]
        if not chosen:
            continue
        bars = np.array([interval_bars(estimated[i].result) for i in chosen]).T
        ax.errorbar(xs[chosen], [estimated[i].result.x_star for i in chosen], yerr=bars, fmt=marker, color=color,
                    ms=5, mfc=color if censored is None else "none", alpha=0.75, elinewidth=0.8, capsize=2,
                    label=f"{label} (law, {fit.verdict})\n{_law_words(fit, axis, symbol)}"
                    if censored is None else None)
    return [float(p.at[axis]) for p in estimated]


def curves_figure(runs: Sequence[tuple[str, pd.DataFrame, pd.DataFrame]]) -> Any:
    """Training loss curves of each width's lowest-loss trial, one panel per setup (a row per run, steps and loss
    shared). ``runs``: (name, trials, curves)."""
    fig, placed = _grid_of_panels([(name, trials[trials["search_key"] == LR_KEY], {}) for name, trials, _ in runs])
    tables = {name: (trials, curves) for name, trials, curves in runs}
    for ax, run, setup, _ in placed:
        trials, curves = tables[run]
        rows = trials[(trials["search_key"] == LR_KEY) & (trials["status"] == "ok") & (trials["setup"] == setup)]
        colors = point_colors(rows["width"].unique())
        for width, part in rows.groupby("width"):
            best = part.loc[part["val_loss"].idxmin()]
            curve = curves[(curves["trial"] == best["trial"]) & (curves["setup"] == setup) &
                           (curves["width"] == width) & (curves["seed"] == best["seed"]) &
                           (curves["search_key"] == LR_KEY)]
            ax.plot(curve["step"], curve["train_loss"], color=colors[int(width)], lw=1.2,
                    label=f"width {width}, log2 η={best[LR_COLUMN]:.2f}")
        name = setup if len(runs) == 1 else f"{run}: {setup}"
        finish_panel(ax, f"{name}: training loss at each width's lowest-loss LR", "step", title_size=10)
    _label_rows(placed, "training loss (nats/token)")
    return fig


