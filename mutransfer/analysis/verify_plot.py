"""verify.png: the target widths' measured curves against the prediction, over the swept widths' curves.
Tidy tables and the verify report in, a figure out."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..schema import LR_COLUMN, TRANSFER_AXES
from ..words import TrialStatus
from .colors import ordered_colors
from .figure_kit import finish_panel, fitted_bowl, grid_curve, interval_bars, point_colors, pyplot
from .layout import fit_title
from .prediction import PAIRED_AXES
from .result import SetupResult, measured_point

__all__ = ["verify_figure"]


def _titled_axes() -> list[str]:
    """The axes besides width a panel's title names where the prediction sets them: every registered one but the
    batch and its budget, which verify.json gives."""
    return [axis.name for axis in TRANSFER_AXES[1:] if axis.name not in PAIRED_AXES[1]]


def verify_figure(swept: pd.DataFrame, setups: Mapping[str, SetupResult], rows: pd.DataFrame,
                  report: dict[str, Any]) -> Any:
    """Loss vs log2 η at each verified width — the prediction as a band (its 95 % range) and a dashed line,
    the measured optimum as ★ with its interval — over the swept widths' curves, faded (``swept``: the learning
    rate's tidy rows along width, ``summary.axis_table``; ``setups``: their results); one panel per setup."""
    plt = pyplot()
    targets = report["targets"]
    labels = list(dict.fromkeys(t["setup"] for t in targets))
    fig, axes = plt.subplots(1, max(1, len(labels)), figsize=(6.4 * max(1, len(labels)), 4.8), squeeze=False,
                             layout="constrained")
    widths = sorted({t["width"] for t in targets})
    colors = dict(zip(widths, ordered_colors(len(widths), plt.get_cmap("autumn"))))
    for ax, setup in zip(axes[0], labels):
        behind = swept[swept["setup"] == setup]
        faded = point_colors(behind["point"].unique())
        line_of = setups[setup].line if setup in setups else None
        for width, part in behind.groupby("point"):
            line = grid_curve(part, line_of.points.get(width) if line_of is not None else None)
            ax.plot(line["x"], line["loss"], "-", color=faded[width], alpha=0.35, lw=1.2,
                    label=f"swept width {width}")
        mine = rows[rows["setup"] == setup]
        for t in (t for t in targets if t["setup"] == setup):
            _verified_width(ax, mine[mine["width"] == t["width"]], t, colors[t["width"]])
        _zoom(ax, mine, behind)
        mine_targets = [t for t in targets if t["setup"] == setup]
        point = "".join(f", {name} {mine_targets[0]['prediction'][name]}" for name in _titled_axes()
                        if mine_targets and mine_targets[0]["prediction"].get(name) is not None)
        finish_panel(ax, f"{setup}: verified at width {', '.join(str(t['width']) for t in mine_targets)}{point}",
               "log2(base learning rate η)", title_size=10)
    axes[0][0].set_ylabel("validation loss (nats/token)")
    measured = any(measured_point(t["width"], t.get("measured")) is not None for t in targets)
    fit_title(fig, [["Verification at the target width"], ["band: predicted 95 % range", "dashed: predicted η*"],
                    ["★ measured optimum at the vertex of its fitted bowl (thin line), with its 95 % interval"
                     if measured else "the η* × factors trained"]])
    return fig


def _zoom(ax: Any, rows: pd.DataFrame, behind: pd.DataFrame) -> None:
    """The verified points' range of η, one octave more each side; their losses and the swept curves' lowest
    point in that range (the swept curves' high ends clipped)."""
    ok = rows[rows["status"] == TrialStatus.OK]
    if ok.empty:
        return
    left, right = float(rows[LR_COLUMN].min()) - 1.0, float(rows[LR_COLUMN].max()) + 1.0
    ax.set_xlim(left, right)
    seen = behind[(behind["status"] == TrialStatus.OK) & behind["x"].between(left, right)]["loss"]
    low = min(float(ok["val_loss"].min()), float(seen.min()) if len(seen) else np.inf)
    high = float(ok["val_loss"].max())
    pad = 0.15 * (high - low if high > low else 1.0)
    ax.set_ylim(low - pad, high + pad)


def _verified_width(ax: Any, rows: pd.DataFrame, target: dict[str, Any], color: Any) -> None:
    """The measured curve (the seeds' mean loss at every trained point, joined), every trained point as a dot, the
    prediction and the measured optimum."""
    width, prediction = target["width"], target["prediction"]
    ok = rows[rows["status"] == TrialStatus.OK]
    line = ok.groupby(LR_COLUMN)["val_loss"].mean().reset_index()
    ax.plot(line[LR_COLUMN], line["val_loss"], "-o", color=color, ms=4.5, lw=1.8, label=f"width {width}")
    ax.plot(ok[LR_COLUMN], ok["val_loss"], "o", color=color, ms=3, alpha=0.5, mfc="none")
    if prediction.get("interval"):
        ax.axvspan(*prediction["interval"], color=color, alpha=0.12, lw=0)
    ax.axvline(target.get("predicted_log2_lr", prediction["log2_lr"]), color=color, ls="--", lw=1)
    measured = measured_point(target["width"], target.get("measured"))
    if measured is not None:
        below, above = interval_bars(measured)
        fitted_bowl(ax, measured, color)
        ax.errorbar([measured.x_star], [measured.best_loss], xerr=[[below], [above]], fmt="*", color=color, ms=12,
                    mec="black", mew=0.6, capsize=3, lw=1.2,
                    label=f"error {target['error']:+.2f} octaves" if target.get("error") is not None else None)
