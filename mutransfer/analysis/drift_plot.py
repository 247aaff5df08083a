"""lr_drift.png: each setup's optimum against log2 of each swept axis's value, with its interval and fitted line
(or the law's points and slope), and the targets ``transfer`` predicted for (``transfer_targets``): where each
lies on the axis, its predicted η* with its 95 % range, and the setup's line carried out to it. Results in, a
figure out; no torch."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .colors import readable
from .figure_kit import finish_panel, interval_bars, judged_fit, keep_legends_clear, log2_ticks, pyplot
from .layout import fit_title, panel_name, panel_rows, wrapped_rows
from .result import AxisFit, SetupResult
from .transfer_targets import TransferTarget

__all__ = ["drift_figure", "DRIFT_WIDTH", "DRIFT_PANEL", "TARGET_MARK", "TARGET_LINE"]


DRIFT_WIDTH = 13.0
"""The drift figure's width in inches when it holds several panels in a row (1560 px at ``save``'s 120 dpi); one
panel alone keeps ``DRIFT_PANEL`` inches."""
DRIFT_PANEL = (10.5, 4.6)
"""One drift panel's width and height in inches."""


TARGET_MARK = "transfer_target"
"""The gid of a target's marker (its predicted η* with its 95 % range) on the drift figure."""
TARGET_LINE = "transfer_target_line"
"""The gid of the dotted vertical line at a target's value on an axis."""


def drift_figure(runs: Sequence[tuple[str, Mapping[str, SetupResult]]], axes: Sequence[str] = ("width",),
                 symbol: str = "LR", quantity: str = "base learning rate η", log2: bool = True,
                 targets: Sequence[tuple[str, TransferTarget]] = ()) -> Any:
    """x* vs log2 of each axis's value with intervals and the fitted line, one series per setup (``runs``: each
    run's name and one key's setups); one panel per axis in ``axes``, ``PANELS_PER_ROW`` to a row, no wider than
    ``DRIFT_WIDTH`` in all; ``symbol`` and ``quantity`` name the key. A setup the law judges (``primary == "law"``)
    shows every point the law saw and the law's slope on each axis (``_law_series``). ``targets`` (each run's name
    and a transfer's target; the learning rate's only) are marked on each axis they name (``_target_marks``)."""
    counts = wrapped_rows(len(axes))
    width = DRIFT_PANEL[0] if max(counts) == 1 else DRIFT_WIDTH / max(counts)
    fig, rows = panel_rows(counts, (width, DRIFT_PANEL[1]))
    drawn_law = marked = False
    for ax, axis in zip([ax for row in rows for ax in row], axes):
        law, target = _drift_panel(ax, runs, axis, symbol,
                                   f"log2({symbol}*)  ({quantity})" if log2 else f"{symbol}*", targets)
        drawn_law, marked = drawn_law or law, marked or target
    lines = [["law setups: every point the law saw, its optimum with its 95 % interval (open ▽ △: a bound at the "
              "grid's edge)"], ["dashed: the law's slope on the axis, the other axes at their weighted centre"]] \
        if drawn_law else []
    lines += [["◇ transfer's target: its predicted η* with the 95 % range",
               "dotted: the setup's fitted line carried out to it"]] if marked else []
    if lines:
        fit_title(fig, lines, fontsize=9)
    keep_legends_clear(fig)
    return fig


def _drift_panel(ax: Any, runs: Sequence[tuple[str, Mapping[str, SetupResult]]], axis: str, symbol: str,
                 ylabel: str, targets: Sequence[tuple[str, TransferTarget]] = ()) -> tuple[bool, bool]:
    """One axis's panel: per setup its optima along the axis and its line (the law's points and slope for a setup
    the law judges), the targets on the axis; ticks at the data's and the targets' values. Returns whether a law
    series was drawn and whether a target was."""
    cmap = pyplot().get_cmap("tab10")
    colors: dict[tuple[str, str], Any] = {}
    values: set[float] = set()
    drawn_law = False
    for run, setups in runs:
        for setup, result in setups.items():
            label = panel_name(run, setup, len(runs) > 1)
            color = readable(cmap(len(colors) % 10))
            if _law_judges(result, axis):
                drawn = _law_series(ax, result, axis, label, color, symbol)
                drawn_law |= bool(drawn)
            else:
                drawn = _line_series(ax, judged_fit(setups, setup, axis), axis, label, color, symbol)
            if drawn:
                colors[(run, setup)] = color
                values.update(drawn)
    values.update(float(p) for _, setups in runs for result in setups.values() if axis in result.axes
                  for p in result.axes[axis].points)
    lines = {(run, setup): judged_fit(setups, setup, axis) for run, setups in runs
             for setup, result in setups.items() if not _law_judges(result, axis)}
    marked = _target_marks(ax, [(run, t) for run, t in targets if axis in t.at], axis, colors, lines, len(runs) > 1)
    log2_ticks(ax, sorted(values | set(marked)))
    finish_panel(ax, f"{symbol}* vs {axis}  (▼ ▲ past the grid's edge)", f"{axis} (log2 axis)", ylabel,
                 legend_inside=True)
    return drawn_law, bool(marked)


def _target_marks(ax: Any, targets: Sequence[tuple[str, TransferTarget]], axis: str,
                  colors: Mapping[tuple[str, str], Any], lines: Mapping[tuple[str, str], Optional[AxisFit]],
                  several: bool) -> list[float]:
    """Each target on the axis: a dotted vertical line at its value, ◇ at its predicted η* with the 95 % range as
    a bar, in its setup's colour, and the setup's fitted line (``lines``: a law's setup has none) carried, dotted,
    from its nearest point out to the target. Returns the values marked."""
    marked = []
    for run, target in targets:
        value = float(target.at[axis])
        x = math.log2(value)
        color = colors.get((run, target.setup), "0.3")
        ax.axvline(x, color="0.45", ls=":", lw=1.0, zorder=1, gid=TARGET_LINE)
        fit = lines.get((run, target.setup))
        estimated = sorted(fit.estimated()) if fit is not None else []
        if fit is not None and fit.slope is not None and fit.intercept is not None and estimated:
            start = math.log2(float(estimated[-1] if x > math.log2(float(estimated[-1])) else estimated[0]))
            ends = np.array([start, x])
            ax.plot(ends, fit.intercept + fit.slope * ends, ":", color=color, lw=1.0)
        below, above = (target.log2_lr - target.interval[0], target.interval[1] - target.log2_lr) \
            if target.interval else (0.0, 0.0)
        name = f"{panel_name(run, target.setup, several)}: " if target.setup else ""
        drawn = ax.errorbar([x], [target.log2_lr], yerr=[[below], [above]], fmt="D", color=color, mfc="white",
                            mec=color, mew=1.6, ms=8, capsize=4, lw=1.4, zorder=4,
                            label=f"{name}transfer to {target.where()}\n{target.estimate()}")
        drawn.lines[0].set_gid(TARGET_MARK)
        marked.append(value)
    return marked


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
