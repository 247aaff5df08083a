"""batch.png: best loss against the batch size at each token budget, per setup, with the best and the critical
batch marked. A tidy table first (``batch_frame``), the figure from it. No torch."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
import pandas as pd

from .colors import ordered_colors
from .figure_kit import PANELS_PER_ROW, pyplot
from .result import Summary

__all__ = ["batch_frame", "batch_marks", "batch_figure"]


def batch_frame(summary: Summary) -> pd.DataFrame:
    """One row per (setup, budget, batch): the best loss over the LR and its standard error from the seeds."""
    rows = []
    for setup, info in summary.setups().items():
        for tokens, entry in ((info.batch or {}).get("budgets") or {}).items():
            for point in entry.get("curve") or []:
                rows.append({"setup": setup, "tokens": int(tokens), "batch": int(point["batch"]),
                             "loss": point["loss"], "loss_se": point["loss_se"]})
    return pd.DataFrame(rows, columns=["setup", "tokens", "batch", "loss", "loss_se"])


def batch_marks(summary: Summary) -> pd.DataFrame:
    """One row per (setup, budget, kind ∈ {best, critical}): the batch, its interval, and whether it is a bound
    (best at the grid's edge, critical past the largest batch) or unresolved."""
    rows = []
    for setup, info in summary.setups().items():
        for tokens, entry in ((info.batch or {}).get("budgets") or {}).items():
            for kind in ("best", "critical"):
                mark = entry.get(kind)
                if not mark:
                    continue
                status = ("bound" if mark.get("censored") else "measured") if kind == "best" else mark["status"]
                low, high = (mark.get("ci") or [None, None])
                rows.append({"setup": setup, "tokens": int(tokens), "kind": kind, "batch": mark["batch"],
                             "low": low, "high": high, "status": status})
    return pd.DataFrame(rows, columns=["setup", "tokens", "kind", "batch", "low", "high", "status"])


def _loss_at(curve: pd.DataFrame, batch: float) -> float:
    """The curve's loss at ``batch``, linear in log2 B between the swept batches."""
    return float(np.interp(math.log2(batch), np.log2(curve["batch"].to_numpy(float)), curve["loss"].to_numpy(float)))


def batch_figure(frame: pd.DataFrame, marks: pd.DataFrame, tolerance: Optional[float] = None) -> Any:
    """A panel per setup: loss against batch (log2 axis) with the seeds' 95 % bars, a line per budget; ★ the best
    batch, ◆ the critical batch with its interval as a bar at its loss (hollow: a bound or unresolved)."""
    plt = pyplot()
    setups = list(dict.fromkeys(frame["setup"]))
    rows_of = max(1, math.ceil(len(setups) / PANELS_PER_ROW))
    per_row = max(1, math.ceil(len(setups) / rows_of))
    fig, grid = plt.subplots(rows_of, per_row, figsize=(6.4 * per_row, 4.4 * rows_of), squeeze=False,
                             layout="constrained")
    budgets = sorted(frame["tokens"].unique())
    colors = dict(zip(budgets, ordered_colors(len(budgets))))
    for ax, setup in zip(grid.reshape(-1), setups):
        own = frame[frame["setup"] == setup]
        for tokens in budgets:
            curve = own[own["tokens"] == tokens].sort_values("batch")
            if curve.empty:
                continue
            bars = 1.96 * curve["loss_se"].fillna(0.0)
            ax.errorbar(curve["batch"], curve["loss"], yerr=bars, color=colors[tokens], marker="o", ms=4, capsize=3,
                        label=f"{tokens:,} tokens")
            for mark in marks[(marks["setup"] == setup) & (marks["tokens"] == tokens)].itertuples():
                solid = mark.status == "measured"
                y = _loss_at(curve, mark.batch)
                if mark.kind == "best":
                    ax.plot([mark.batch], [y], marker="*", ms=15, color=colors[tokens],
                            markerfacecolor=colors[tokens] if solid else "white", zorder=5)
                    continue
                low = curve["batch"].min() if pd.isna(mark.low) else mark.low
                high = curve["batch"].max() if pd.isna(mark.high) else mark.high
                ax.plot([low, high], [y, y], color=colors[tokens], lw=2, alpha=0.5)
                ax.plot([mark.batch], [y], marker="D", ms=8, color=colors[tokens],
                        markerfacecolor=colors[tokens] if solid else "white", zorder=5)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(own["batch"].unique()), [str(b) for b in sorted(own["batch"].unique())])
        ax.set_xlabel("batch size (sequences)")
        ax.set_ylabel("best validation loss (each batch at its own η*)")
        ax.set_title(setup)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="budget", title_fontsize=8)
    for ax in grid.reshape(-1)[len(setups):]:
        ax.set_visible(False)
    note = f": the largest within {100 * tolerance:g} % of the best loss" if tolerance else ""
    fig.suptitle(f"loss against batch size at fixed token budgets\n★ best batch · ◆ critical batch{note}\n"
                 "bars: 95 % intervals from the seeds; hollow: a bound or unresolved", fontsize=9)
    return fig
