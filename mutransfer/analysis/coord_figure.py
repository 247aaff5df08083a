"""The coordinate-check figure (``coord_check.png``): one panel per (quantity, module), the measurement against
width (or depth) on log-log axes (base 2), one line per step, as in microsoft/mup's coord-check plots.

Each panel draws, through the first point of its last step's line, the slope the verdict expects for that
(quantity, module) as a black reference line and shades the band of slopes ``stability.requirement`` accepts
(bands and tolerance are read from ``stability.py``, never restated here); its title names the module's
verdict and the measured slope. A quantity that the band expects to grow (the embedding's and the LM head's
relative weight updates under μP, +0.25…+0.40) is drawn against its own tilted reference, not a flat one.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .figure_kit import pyplot
from .stability import DEFAULT_TOL, Band, requirement, verdicts

__all__ = ["coord_check_figure", "expected_slope", "STEP_COLORS", "QUANTITY_ORDER"]

QUANTITY_ORDER = ("forward", "update", "dependency", "weight_update")
"""The order of the figure's row groups, one group per quantity measured."""

STEP_COLORS = ("#1f4e9c", "#b0306a", "#2b7a3d", "#8a5200", "#5b3fa0", "#00707a")
"""The steps' line colours, each with a WCAG contrast ratio ≥ 3:1 against white (tests check it)."""

REFERENCE_COLOR = "#000000"
BAND_COLOR = "#9aa0a6"
PANELS_PER_ROW = 6

_YLABELS = {"forward": "RMS of output", "update": "RMS of change since step 0",
            "dependency": "RMS Δout / RMS Δin", "weight_update": "‖ΔW‖₂ / ‖W₀‖₂"}


def expected_slope(band: Band) -> float:
    """The slope a reference line draws for ``band``: its midpoint when both ends are finite, else 0 clipped
    into the band (Θ(1) and O(1) requirements expect a flat line)."""
    if math.isfinite(band.low) and math.isfinite(band.high):
        return (band.low + band.high) / 2
    return min(max(0.0, band.low), band.high)


def _band_range(band: Band) -> str:
    if not math.isfinite(band.low):
        return f"≤ {band.high:+.2f}"
    if not math.isfinite(band.high):
        return f"≥ {band.low:+.2f}"
    return f"[{band.low:+.2f}, {band.high:+.2f}]"


def _layout(pairs: Sequence[tuple[str, str]]) -> list[list[tuple[str, str] | None]]:
    """Rows of panels: every quantity starts a new row, wrapped at ``PANELS_PER_ROW``."""
    rows: list[list[tuple[str, str] | None]] = []
    for quantity in dict.fromkeys(q for q, _ in pairs):
        own = [p for p in pairs if p[0] == quantity]
        for start in range(0, len(own), PANELS_PER_ROW):
            chunk: list[tuple[str, str] | None] = list(own[start:start + PANELS_PER_ROW])
            rows.append(chunk + [None] * (PANELS_PER_ROW - len(chunk)))
    return rows


def _panel(ax: Any, part: pd.DataFrame, slopes: pd.DataFrame, verdict: dict[str, Any], quantity: str, module: str,
           steps: Sequence[int], axis: str, tol: float) -> None:
    means = part.groupby(["step", axis], sort=True)["value"].mean().reset_index()
    shown = [s for s in steps if s in set(means["step"])]
    for step in shown:
        rows = means[means["step"] == step]
        color = STEP_COLORS[list(steps).index(step) % len(STEP_COLORS)]
        ax.plot(rows[axis], rows["value"], "-o", ms=3, lw=1.3, color=color,
                label=f"step {step}", gid=f"data:{step}")
    last = shown[-1]
    band = requirement(quantity, module, last, tol)
    slope = expected_slope(band)
    line = means[means["step"] == last].sort_values(axis)
    x = line[axis].to_numpy(float)
    x0, y0 = x[0], float(line["value"].iloc[0])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.plot(x, y0 * (x / x0) ** slope, "--", color=REFERENCE_COLOR, lw=1.1, label="expected slope",
            gid="reference")
    ax.relim()
    ax.autoscale_view()
    bottom, top = ax.get_ylim()
    grid = np.geomspace(x0, x[-1], 32)
    low = y0 * (grid / x0) ** band.low if math.isfinite(band.low) else np.full_like(grid, bottom)
    high = y0 * (grid / x0) ** band.high if math.isfinite(band.high) else np.full_like(grid, top)
    ax.fill_between(grid, low, high, color=BAND_COLOR, alpha=0.3, lw=0, label="accepted slopes", gid="band",
                    zorder=0)
    ax.set_ylim(min(bottom, float(np.min(low[low > 0])) if np.any(low > 0) else bottom),
                max(top, float(np.max(high))))
    fitted = slopes[(slopes["quantity"] == quantity) & (slopes["module"] == module) & (slopes["step"] == last)]
    measured = f"{float(fitted['slope'].iloc[0]):+.2f}" if not fitted.empty else "n/a"
    ax.set_title(f"{quantity} · {module.removesuffix('.weight')}: {verdict['verdict']}\n"
                 f"slope {measured} at step {last}, needs {_band_range(band)}", fontsize=7)
    ax.tick_params(labelsize=6.5)
    ax.grid(alpha=0.3)


def coord_check_figure(table: pd.DataFrame, slopes: pd.DataFrame, steps: Sequence[int], axis: str = "width",
                       title: str = "", tol: float = DEFAULT_TOL) -> Any:
    """One panel per (quantity, module): ``value`` (seeds averaged) against ``axis`` on log2-log2 axes, one line per
    step in ``steps``, the expected slope as a dashed reference through the last step's first point, the slopes
    the verdict accepts shaded (before the 2-standard-error widening several seeds add), and the module's verdict
    and measured slope in the panel title. ``table``: the tidy coord-check table (``quantity, module, step,
    <axis>, value``); ``slopes``: ``stability.fit_slopes`` output; ``title``: the setup, shown in the suptitle."""
    plt = pyplot()
    usable = table[np.isfinite(table["value"]) & (table["value"] > 0) & table["step"].isin(list(steps))]
    present = set(usable["quantity"])
    pairs = [(q, m) for q in QUANTITY_ORDER if q in present
             for m in dict.fromkeys(usable.loc[usable["quantity"] == q, "module"])]
    judged = verdicts(slopes, tol)["modules"]
    rows = _layout(pairs) or [[None] * PANELS_PER_ROW]
    fig, axes = plt.subplots(len(rows), PANELS_PER_ROW, figsize=(2.75 * PANELS_PER_ROW, 2.35 * len(rows) + 0.9),
                             squeeze=False, layout="constrained")
    for r, row in enumerate(rows):
        for c, pair in enumerate(row):
            ax = axes[r][c]
            if pair is None:
                ax.set_visible(False)
                continue
            quantity, module = pair
            part = usable[(usable["quantity"] == quantity) & (usable["module"] == module)]
            verdict = judged.get(module, {"verdict": "not judged"})
            _panel(ax, part, slopes, verdict, quantity, module, steps, axis, tol)
            ax.set_gid(f"{quantity}|{module}")
            ax.set_xlabel(axis, fontsize=7)
            if c == 0:
                ax.set_ylabel(_YLABELS.get(quantity, quantity), fontsize=7)
    visible = [ax for row in axes for ax in row if ax.get_visible()]
    if visible:
        handles: dict[str, Any] = {}
        for ax in visible:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        order = sorted(handles, key=lambda label: (not label.startswith("step"),
                                                    int(label.split()[1]) if label.startswith("step") else 0))
        fig.legend([handles[label] for label in order], order, loc="outside right upper", fontsize=8,
                   title="lines", title_fontsize=8)
    stable = sum(v["verdict"] == "stable" for v in judged.values())
    setup = f"{title} · " if title else ""
    fig.suptitle(f"Coordinate check: {setup}across {axis} · {stable}/{len(judged)} modules stable\n"
                 f"dashed: the slope each panel's verdict expects · shaded: the slopes it accepts", fontsize=11)
    return fig
