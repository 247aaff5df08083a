"""Where a figure's panels and title go: exactly as many panels as there is data for (a short last row centred,
no hidden spare axes, every panel labelling its own ticks), one per (run, setup) for the loss-vs-LR figures, each
named once, and a title wrapped to the figure's width."""

from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from .figure_kit import PANELS_PER_ROW, pyplot

__all__ = ["wrapped_rows", "panel_rows", "share", "grid_of_panels", "panel_name", "label_rows", "fit_title",
           "TITLE_MARGIN", "PANEL"]


def wrapped_rows(count: int, most: int = PANELS_PER_ROW) -> list[int]:
    """How many panels each row holds when ``count`` panels wrap at ``most`` to a row, the rows as even as they
    can be (5 → [3, 2], 4 → [2, 2]), never an empty row."""
    count = max(1, count)
    rows = math.ceil(count / most)
    per_row = math.ceil(count / rows)
    return [per_row] * (rows - 1) + [count - per_row * (rows - 1)]


def panel_rows(counts: Sequence[int], panel: tuple[float, float]) -> tuple[Any, list[list[Any]]]:
    """A figure with ``counts[r]`` panels in row r, each ``panel`` (width, height) inches, a row shorter than the
    widest centred under it. Only the panels asked for are made, none shared yet (``share`` links them without
    hiding tick labels). Returns (figure, rows of axes)."""
    widest = max(counts)
    fig = pyplot().figure(figsize=(panel[0] * widest, panel[1] * len(counts)), layout="constrained")
    grid = fig.add_gridspec(len(counts), 2 * widest)
    rows = []
    for r, count in enumerate(counts):
        offset = widest - count
        rows.append([fig.add_subplot(grid[r, offset + 2 * c: offset + 2 * c + 2]) for c in range(count)])
    return fig, rows


def share(panels: Sequence[Any], axis: str) -> None:
    """Link ``panels``' ``axis`` ("x" or "y") to the first one's; each keeps its own tick labels."""
    for ax in panels[1:]:
        (ax.sharex if axis == "x" else ax.sharey)(panels[0])


PANEL = (6.4, 4.4)
"""A loss-vs-LR panel's width and height in inches."""


def grid_of_panels(runs: Sequence[tuple[str, pd.DataFrame, Any]], sharex: bool = True
                   ) -> tuple[Any, list[tuple[Any, str, str, int]]]:
    """The figure and one panel per (run, setup) the runs hold, no more: one run's setups wrapped
    ``PANELS_PER_ROW`` to a row, all sharing the loss axis; several runs that each hold every setup, a row per run
    and a column per setup (x shared down a column when ``sharex``: one setup's searched range; the loss axis along
    a row: one run's losses); several runs holding different setups, their panels wrapped ``PANELS_PER_ROW`` to a
    row, a run's panels sharing its loss axis and a setup's its x. Every panel labels its own ticks.
    Returns (figure, [(axes, run, setup, run index)])."""
    setups = list(dict.fromkeys(s for _, rows, _ in runs for s in rows["setup"]))
    pairs = [(run, setup, r) for r, (run, rows, _) in enumerate(runs) for setup in setups
             if setup in set(rows["setup"])]
    if not pairs:
        fig, rows = panel_rows([1], PANEL)
        rows[0][0].set_axis_off()
        rows[0][0].text(0.5, 0.5, "no trials to draw", ha="center", va="center", transform=rows[0][0].transAxes)
        return fig, []
    full = len(runs) > 1 and len(pairs) == len(runs) * len(setups)
    counts = [len(setups)] * len(runs) if full else wrapped_rows(len(pairs))
    fig, rows = panel_rows(counts, PANEL)
    placed = [(ax, run, setup, r) for ax, (run, setup, r) in zip([ax for row in rows for ax in row], pairs)]
    for r in range(len(runs)):
        share([ax for ax, *_, index in placed if index == r] if len(runs) > 1 else [p[0] for p in placed], "y")
    if len(runs) > 1 and sharex:
        for setup in setups:
            share([ax for ax, _, s, _ in placed if s == setup], "x")
    return fig, placed


def panel_name(run: str, setup: str, several: bool) -> str:
    """A panel's name: the setup, after its run when several runs are drawn and the run is not named as the setup
    is (``smoke: sp_adamw``; a run ``mine`` of a setup ``mine`` is ``mine``, not ``mine: mine``)."""
    return f"{run}: {setup}" if several and run != setup else setup


def label_rows(placed: Sequence[tuple[Any, str, str, int]], ylabel: str) -> None:
    """The loss label on each row's first panel (every panel labels its own ticks)."""
    seen: set[int] = set()
    for ax, *_ in sorted(placed, key=lambda p: (p[0].get_subplotspec().rowspan.start,
                                                 p[0].get_subplotspec().colspan.start)):
        row = ax.get_subplotspec().rowspan.start
        if row not in seen:
            seen.add(row)
            ax.set_ylabel(ylabel)


TITLE_MARGIN = 0.03
"""The fraction of the figure's width a title leaves free on each side."""


def fit_title(fig: Any, lines: Sequence[Sequence[str]], fontsize: float = 10, sep: str = " · ") -> Any:
    """The figure's title: each of ``lines`` a list of phrases joined by ``sep`` as long as the line fits the
    figure's width (less ``TITLE_MARGIN`` each side), broken before the phrase that does not fit, and a phrase
    wider than the figure broken between words. Returns the title's text artist."""
    from matplotlib.font_manager import FontProperties

    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=fontsize)
    room = fig.get_figwidth() * fig.dpi * (1 - 2 * TITLE_MARGIN)

    def width(text: str) -> float:
        return float(renderer.get_text_width_height_descent(text, font, ismath=False)[0])

    out: list[str] = []
    for phrases in lines:
        line = ""
        for phrase in phrases:
            joined = f"{line}{sep}{phrase}" if line else phrase
            if width(joined) <= room:
                line = joined
                continue
            if line:
                out.append(line)
            line = ""
            for word in phrase.split(" "):
                longer = f"{line} {word}" if line else word
                if line and width(longer) > room:
                    out.append(line)
                    longer = word
                line = longer
        out.append(line)
    return fig.suptitle("\n".join(out), fontsize=fontsize)
