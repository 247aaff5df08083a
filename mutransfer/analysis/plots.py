"""transfer.png: loss against the searched value per point of an axis, from tidy tables only (one key's rows along
one axis) and the results computed from them (``analysis.result``); the names every figure gives a searched key.
Re-exports the other run figures (``drift_plot``, ``curves_plot``). No torch."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import LR_KEY
from ..table.constants import constant_keys
from ..table.decay import DECAY_SYMBOLS
from ..words import TrialStatus
from .curves_plot import curves_figure
from .drift_plot import DRIFT_PANEL, DRIFT_WIDTH, drift_figure
from .figure_kit import (BOWL_OCTAVES, FITTED_BOWL, finish_panel, fitted_bowl, grid_curve, interval_bars, judged_fit,
                         mark_at_top, mark_partial, point_colors, save)
from .layout import fit_title, grid_of_panels, label_rows, panel_name
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


def _bowl_range(panels: Sequence[tuple[pd.DataFrame, Optional[AxisFit]]]) -> tuple[float, float]:
    """(bottom, top) of the loss axis: every curve's lowest point and best loss, up to the highest loss any curve
    reaches within ``BOWL_OCTAVES`` of its x* (of its lowest point where no x* was estimated), padded."""
    lows, highs = [], []
    for rows, fit in panels:
        for point, part in rows.groupby("point"):
            ok = part[part["status"] == TrialStatus.OK]
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


def transfer_figure(runs: Sequence[Run], axis: str = "width", symbol: str = "LR",
                    quantity: str = "base learning rate η", log2: bool = True) -> Any:
    """Loss vs the searched value x, one line per point of ``axis`` (the seeds that trained the grid), the seeds'
    spread shaded where several trained a point (the noise probes), one panel per run and setup
    (``layout.grid_of_panels``), each run's loss axis set by its bowls (``_bowl_range``). x* is marked at the vertex of its fitted bowl (drawn thin through
    the fit window's points) at the best loss, its 95 % interval a horizontal bar; an optimum at the grid's edge is
    ◀ / ▶ at that edge; a diverged value is × at the top edge where no seed trained it to a finite loss. A point
    whose result has a decay effect gets decay off's loss as a dashed line. ``symbol`` and ``quantity`` name the
    searched key (η for the learning rate)."""
    fig, placed = grid_of_panels(runs)
    decay_drawn = False
    summaries = {run: setups for run, _, setups in runs}
    tables = {run: rows for run, rows, _ in runs}
    parts = [(tables[run][tables[run]["setup"] == setup], judged_fit(summaries[run], setup, axis))
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
            finite = set(np.round(part[part["status"] == TrialStatus.OK]["x"], 9))
            div = [x for x in part[part["status"] == TrialStatus.DIVERGED]["x"].unique() if round(x, 9) not in finite]
            mark_at_top(ax, above, top, "^", color)
            mark_at_top(ax, div, top, "x", color)
            if opt is not None and opt.x_star is not None:
                fitted_bowl(ax, opt, color)
                _optimum_marker(ax, opt, part, line, color)
            if opt is not None and opt.decay is not None and opt.decay.off_loss is not None:
                ax.axhline(opt.decay.off_loss, ls="--", lw=0.9, color=color)
                decay_drawn = True
        ax.set_ylim(bottom, top)
        finish_panel(ax, _title(panel_name(run, setup, len(runs) > 1), fit, axis, symbol),
                     f"log2({quantity})" if log2 else quantity, title_size=10)
    label_rows(placed, "validation loss (nats/token)")
    off = [[f"- - - loss with weight decay off, per {axis}"]] if decay_drawn else []
    fit_title(fig, [[f"Loss vs {quantity} per {axis}"],
                    [f"◆ {symbol}* at the vertex of its fitted bowl (thin line) with its 95 % interval",
                     "◀ ▶ optimum at the grid's edge"], ["▲ loss above the range shown", "× diverged"], *off])
    return fig


def _spread(ax: Any, part: pd.DataFrame, color: Any) -> None:
    """The seeds' spread, shaded, where several seeds trained a point."""
    ok = part[part["status"] == TrialStatus.OK]
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


