"""Rich renderables for the CLI: sweep progress and the optimum/verdict table. Presentation only."""

from __future__ import annotations

import math
import time
from typing import Any, Optional, Sequence

from rich.console import Group
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..analysis.summary import axis_entry
from ..schema import axis_named

__all__ = ["SweepDisplay", "summary_table", "verdict_notes", "format_bound", "format_interval"]


class SweepDisplay:
    """Overall progress (trials done / total, ETA), the trials running now, the best loss per width so far."""

    def __init__(self, total: int = 0) -> None:
        self.progress = Progress(TextColumn("[bold]sweep"), BarColumn(), TextColumn("{task.completed}/{task.total} trials"),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        self.task = self.progress.add_task("sweep", total=total)
        self.running: list[str] = []
        self.best: dict[tuple[str, str], float] = {}
        """Best loss per (setup, point), the point as ``StudyKey.where`` writes it (``w64`` or ``w64 d8``)."""
        self.started = time.monotonic()

    def update(self, snap: Any) -> None:
        self.progress.update(self.task, completed=snap.done, total=snap.total)
        self.running, self.best = snap.running, snap.best

    def __rich__(self) -> Group:
        table = Table(title="best validation loss so far", show_edge=False, pad_edge=False)
        setups = sorted({s for s, _ in self.best})
        widths = sorted({w for _, w in self.best}, key=_point_order)
        table.add_column("setup")
        for w in widths:
            table.add_column(w, justify="right")
        for setup in setups:
            table.add_row(setup, *[f"{self.best[(setup, w)]:.4f}" if (setup, w) in self.best else "-" for w in widths])
        running = "running: " + ("; ".join(self.running[:4]) if self.running else "-")
        return Group(self.progress, running, table)


def _point_order(where: str) -> tuple[int, ...]:
    """``w64 d8`` → (64, 8): points ordered by their numbers, not as text."""
    return tuple(int("".join(c for c in tag if c.isdigit()) or 0) for tag in where.split())


def format_bound(value: Any, fmt: str = "+.2f") -> str:
    """A number, or … for a missing or infinite one (an open end of an interval)."""
    return format(value, fmt) if isinstance(value, (int, float)) and math.isfinite(value) else "…"


def format_interval(values: Optional[Sequence[Any]], fmt: str = "+.2f", missing: str = "-") -> str:
    return f"[{format_bound(values[0], fmt)}, {format_bound(values[1], fmt)}]" if values else missing


def _number(value: Any, digits: int) -> str:
    return f"{value:.{digits}f}" if value is not None else "-"


def summary_table(summary: dict[str, Any], title: str = "", axis: str = "width") -> Table:
    """setup × width (or depth, ``axis``) → log2 LR*, interval (95 % confidence, or a resolution bound with one
    seed), best loss, flags; then each setup's slope and verdict."""
    table = Table(title=title or f"optimal learning rate per {axis}")
    for column in ("setup", axis, "log2 LR*", "interval", "best loss", "flags", "slope / doubling", "verdict"):
        table.add_column(column, justify="right" if column not in ("setup", "flags", "verdict") else "left")
    colors = {"transfers": "green", "drifts": "red", "inconclusive": "yellow"}
    for setup, whole in summary.get("setups", {}).items():
        info = axis_entry(whole, axis)
        plural = axis_named(axis).plural
        widths = sorted(info.get(plural, {}), key=int)
        slope = info.get("slope")
        slope_text = f"{slope:+.2f} {format_interval(info.get('slope_ci'))}" if slope is not None and math.isfinite(slope) else "-"
        verdict = info.get("verdict", "inconclusive")
        for i, width in enumerate(widths):
            opt = info[plural][width]
            kind = " (res.)" if opt.get("ci_kind") == "resolution" else ""
            table.add_row(setup if i == 0 else "", width, _number(opt.get("log2_lr_star"), 2),
                          format_interval(opt.get("ci")) + kind, _number(opt.get("best_loss"), 4),
                          ", ".join(opt.get("flags", [])) or "-", slope_text if i == 0 else "",
                          f"[{colors.get(verdict, 'white')}]{verdict}[/]" if i == 0 else "")
        table.add_section()
    table.caption = ("interval: 95 % confidence from the seeds' spread; (res.): one seed, a grid-resolution bound, "
                     "not a confidence interval")
    return table


def verdict_notes(summary: dict[str, Any], axis: str = "width") -> list[str]:
    """One line per setup that is not decided on ``axis``: why, and what would decide it."""
    where = "" if axis == "width" else f" across {axis}"
    entries = {setup: axis_entry(info, axis) for setup, info in summary.get("setups", {}).items()}
    return [f"{setup}: inconclusive{where} — {info['reason']}; {info['fix']}"
            for setup, info in entries.items() if info.get("verdict") == "inconclusive" and info.get("reason")]
