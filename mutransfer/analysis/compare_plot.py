"""compare.png: two runs' loss curves overlaid above the difference of their optima. Tidy tables in, a figure out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import LR_KEY
from ..words import TrialStatus
from .figure_kit import BOWL_OCTAVES, finish_panel, grid_curve, interval_bars, mark_at_top, point_colors, pyplot
from .layout import fit_title
from .result import PointResult, Summary, point_key, point_value

__all__ = ["compare_figure", "RunStyle", "RUN_STYLE"]


@dataclass(frozen=True)
class RunStyle:
    """How one run of a comparison is drawn, and the words its title and legend use for it."""

    line: str
    line_words: str
    point: str
    optimum: str
    optimum_glyph: str

    @property
    def words(self) -> str:
        return f"{self.line_words} {self.point}, {self.optimum_glyph} optimum"


RUN_STYLE = {"a": RunStyle("-", "solid", "●", "v", "▼"), "b": RunStyle("--", "dashed", "○", "^", "△")}
"""Run A filled, run B hollow (``mfc`` white), in each width's colour."""


def _width_result(summary: Summary, key: str, setup: str, width: Any) -> Optional[PointResult]:
    """A run's result at one width of one key's setup, None where it has none."""
    result = summary.setups(key).get(setup)
    return result.line.points.get(point_value(width)) if result is not None else None


def compare_figure(points_a: pd.DataFrame, points_b: pd.DataFrame, widths: pd.DataFrame, setups: pd.DataFrame,
                   names: tuple[str, str], tolerance: float, summaries: tuple[Summary, Summary],
                   axis: str = "width") -> Any:
    """Run A against run B, one column per compared (key, setup). Top: loss vs the searched value per width,
    A solid and filled, B dashed and hollow (``RUN_STYLE``) in the width's colour, each optimum marked at its
    best loss. Bottom: x*_B − x*_A per
    width with its 95 % interval, red where it moved (Holm), the pooled shift with its 95 % interval and the
    ±``tolerance`` band. ``points_*``: key, setup, width, seed, x, loss, status; ``summaries``: the two runs'
    results (each width's line is drawn through its grid seeds); ``axis``: the compared axis's name (an import's
    first axis; its values sit in the ``width`` columns)."""
    plt = pyplot()
    columns = list(setups[["key", "setup"]].itertuples(index=False, name=None))
    fig, axes = plt.subplots(2, max(1, len(columns)), figsize=(5.6 * max(1, len(columns)), 7.6), squeeze=False,
                             layout="constrained", height_ratios=[3, 2])
    for c, (key, setup) in enumerate(columns):
        rows = widths[(widths["key"] == key) & (widths["setup"] == setup)]
        summary = setups[(setups["key"] == key) & (setups["setup"] == setup)].iloc[0]
        if rows["width"].map(lambda w: isinstance(w, str)).any():
            _law_panels(axes[0][c], axes[1][c], setup, rows, summary, tolerance, names)
            continue
        _curves_panel(axes[0][c], key, setup, rows, summary, (points_a, points_b), names, summaries, axis)
        _shift_panel(axes[1][c], rows, summary, tolerance, names, axis)
    if not axes[0][0].get_ylabel():
        axes[0][0].set_ylabel("validation loss (nats/token)")
    axes[1][0].set_ylabel("Δ log2 optimum")
    fit_title(fig, [["Did the optimum move? ", f"{names[0]} ({RUN_STYLE['a'].words})",
                     f"vs {names[1]} ({RUN_STYLE['b'].words})"]], fontsize=11, sep=" ")
    return fig



def _curves_panel(top: Any, key: str, setup: str, rows: pd.DataFrame, summary: pd.Series,
                  points: tuple[pd.DataFrame, pd.DataFrame], names: tuple[str, str],
                  summaries: tuple[Summary, Summary], axis: str = "width") -> None:
    """Both runs' loss curves per width, each optimum with its interval at its best loss."""
    parts = [p[(p["key"] == key) & (p["setup"] == setup) & p["width"].isin(rows["width"])] for p in points]
    colors = point_colors(rows["width"].unique())
    low, high = _compare_range(parts, rows)
    for part, side, result in zip(parts, ("a", "b"), summaries):
        style = RUN_STYLE[side].line
        for width, one in part.groupby("width"):
            line = grid_curve(one, _width_result(result, key, setup, width))
            mark_at_top(top, line[line["loss"] > high]["x"].tolist(), high, "^", colors[point_value(width)])
            color = colors[point_value(width)]
            top.plot(line["x"], line["loss"], style, marker="o", ms=3.5, lw=1.5, color=color,
                     mfc=color if side == "a" else "white")
            row = rows[rows["width"] == width].iloc[0]
            opt = PointResult(width, row[f"x_{side}"], (row[f"ci_{side}_low"], row[f"ci_{side}_high"]))
            below, above = interval_bars(opt)
            top.errorbar([opt.x_star], [row[f"loss_{side}"]], xerr=[[below], [above]],
                         fmt=RUN_STYLE[side].optimum, color=color, mfc=color if side == "a" else "white",
                         ms=7, capsize=3, lw=1.0)
    top.set_ylim(low, high)
    label = "log2(base learning rate η)" if key == LR_KEY else key
    shift = ("" if summary["shift"] != summary["shift"] else
             f"\npooled shift {summary['shift']:+.2f} [{summary['shift_ci_low']:+.2f}, "
             f"{summary['shift_ci_high']:+.2f}] octaves")
    finish_panel(top, f"{setup}: {summary['verdict']}{shift}", label, title_size=10)
    _key(top, colors, names, axis)


def _shift_panel(bottom: Any, rows: pd.DataFrame, summary: pd.Series, tolerance: float,
                 names: tuple[str, str], axis: str = "width") -> None:
    """x*_B − x*_A per width with its interval, red where it moved (Holm), the pooled shift and the ±tolerance
    band."""
    x = np.log2(rows["width"].to_numpy(float))
    span = (x.min() - 0.5, x.max() + 0.5)
    bottom.axhspan(-tolerance, tolerance, color="0.9", zorder=0, label=f"±{tolerance:g} (same)")
    if summary["shift"] == summary["shift"]:
        bottom.fill_between(span, summary["shift_ci_low"], summary["shift_ci_high"], color="tab:purple",
                            alpha=0.15, lw=0)
        bottom.axhline(summary["shift"], color="tab:purple", lw=1.6, ls=(0, (6, 3)), zorder=3,
                       label=f"pooled shift {summary['shift']:+.2f} "
                             f"[{summary['shift_ci_low']:+.2f}, {summary['shift_ci_high']:+.2f}]")
    moved = rows["moved"].to_numpy(bool)
    below = np.where(np.isfinite(rows["ci_low"]), rows["difference"] - rows["ci_low"], 0.0)
    above = np.where(np.isfinite(rows["ci_high"]), rows["ci_high"] - rows["difference"], 0.0)
    for mask, color, text in ((~moved, "tab:blue", f"{axis}: not moved (Holm)"),
                              (moved, "tab:red", f"{axis}: moved (Holm)")):
        if mask.any():
            bottom.errorbar(x[mask], rows["difference"].to_numpy(float)[mask],
                            yerr=[below[mask], above[mask]], fmt="o", color=color, capsize=4, label=text)
    bottom.axhline(0.0, color="0.4", lw=0.8, zorder=1)
    bottom.set_xticks(x, [_tick(w) for w in rows["width"]])
    bottom.set_xlim(*span)
    finish_panel(bottom, f"{names[1]} − {names[0]} (octaves), 95 % intervals", f"{axis} (log2 axis)", title_size=10)

def _law_panels(top: Any, bottom: Any, setup: str, rows: pd.DataFrame, summary: pd.Series, tolerance: float,
                names: tuple[str, str]) -> None:
    """A setup its law judges, compared on every point both runs hold: B's optimum against A's (top, the line of
    no change and the pooled shift), and B − A per point ordered by A's optimum (bottom)."""
    ordered = rows.sort_values("x_a", kind="stable").reset_index(drop=True)
    x_a, x_b = ordered["x_a"].to_numpy(float), ordered["x_b"].to_numpy(float)
    top.plot(x_a, x_b, "o", ms=4, color="tab:blue", label=f"{len(ordered)} points on all axes")
    span = np.array([min(x_a.min(), x_b.min()) - 0.5, max(x_a.max(), x_b.max()) + 0.5])
    top.plot(span, span, color="0.4", lw=0.8, label="no change")
    if summary["shift"] == summary["shift"]:
        top.plot(span, span + summary["shift"], color="tab:purple", ls=(0, (6, 3)),
                 label=f"pooled shift {summary['shift']:+.2f}")
    top.legend(fontsize=8, loc="upper left")
    finish_panel(top, f"{setup}: {summary['verdict']} (its law's points, matched on all axes)",
                 f"log2 η* in {names[0]}", title_size=10)
    top.set_ylabel(f"log2 η* in {names[1]}")
    index = np.arange(1, len(ordered) + 1)
    _shift_panel(bottom, ordered.assign(width=2.0**index), summary, tolerance, names, "point")
    step = max(1, len(ordered) // 8)
    bottom.set_xticks(index[::step], [str(i) for i in index[::step]])
    bottom.set_xlabel("point, in order of its optimum in A")


def _tick(value: Any) -> str:
    """A point's value as a tick or legend reads it: whole up to 99,999 as is (``256``), else three digits
    (``2e+07``, ``20.5``)."""
    number = point_value(value)
    return point_key(number) if isinstance(number, int) and number < 100_000 else f"{float(number):.3g}"


def _key(ax: Any, colors: dict[int, Any], names: tuple[str, str], axis: str = "width") -> None:
    """The top panel's legend: a colour per width, then each run's line, points and optimum marker as drawn."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=color, lw=2, label=f"{axis} {_tick(width)}") for width, color in colors.items()]
    for side, name in zip(("a", "b"), names):
        style, fill = RUN_STYLE[side], "0.25" if side == "a" else "white"
        handles += [Line2D([], [], color="0.25", ls=style.line, marker="o", ms=4, mfc=fill,
                           label=f"{name}: {style.line_words} line, {style.point} points"),
                    Line2D([], [], color="0.25", ls="none", marker=style.optimum, ms=7, mfc=fill,
                           label=f"{name}: {style.optimum_glyph} its optimum")]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _compare_range(parts: Sequence[pd.DataFrame], rows: pd.DataFrame) -> tuple[float, float]:
    """The loss axis of a comparison's top panel: both runs' curves within ``BOWL_OCTAVES`` of their optima."""
    lows, highs = [], []
    for part, side in zip(parts, ("a", "b")):
        ok = part[part["status"] == TrialStatus.OK]
        for width, one in ok.groupby("width"):
            centre = rows[rows["width"] == width][f"x_{side}"]
            near = one[(one["x"] - float(centre.iloc[0])).abs() <= BOWL_OCTAVES + 1e-9] if len(centre) else one
            lows.append(float(one["loss"].min()))
            highs.append(float((near if len(near) else one)["loss"].max()))
    if not lows:
        return 0.0, 1.0
    low, high = min(lows), max(highs)
    pad = 0.08 * (high - low if high > low else 1.0)
    return low - pad, high + pad
