"""The finished trials a run directory's ``trials.csv`` records, as the time estimates read them: each trial's
setup, width, status and seconds (its share when it trained stacked, ``batch_trials``). Read with the standard
library: the estimates of a resumed dry run, ``transfer``'s ``next:`` line and ``verify --dry-run`` import
neither pandas nor torch for it."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ...files import TRIALS_FILE
from ...words import TrialStatus
from .measured_cost import MeasuredCost, TrialSeconds, measured_cost

__all__ = ["TIMED_STATUS", "FinishedRow", "SetupCost", "FinishedTrials", "read_finished"]

TIMED_STATUS = TrialStatus.OK
"""The trials whose seconds the estimates use: trained to the end (a diverged or pruned trial stops early, a
failed one at its crash)."""


@dataclass(frozen=True)
class FinishedRow:
    setup: str
    width: int
    status: str
    seconds: float
    """The trial's share of the seconds it trained (NaN when it recorded none)."""


@dataclass(frozen=True)
class SetupCost:
    """What a setup's trial costs: from its own finished trials, or (``pooled``) every setup's when it has none."""

    setup: str
    cost: MeasuredCost
    pooled: bool

    def seconds(self, width: int) -> float:
        return self.cost.seconds(width)

    def basis(self) -> str:
        whose = " (none of its own finished: every setup's trials)" if self.pooled else ""
        return f"{self.setup}{whose}: {self.cost.basis()}"


@dataclass(frozen=True)
class FinishedTrials:
    """Every row of a run's ``trials.csv`` (none when it has no readable one)."""

    rows: tuple[FinishedRow, ...]

    def done(self, setup: str, width: int) -> int:
        """The trials of ``setup`` at ``width`` that finished, whatever their status."""
        return sum(row.setup == setup and row.width == width for row in self.rows)

    def timed(self) -> int:
        return sum(row.status == TIMED_STATUS and math.isfinite(row.seconds) for row in self.rows)

    def cost(self, setup: str) -> Optional[SetupCost]:
        """``setup``'s cost from its trained trials, else every setup's; None when no trial recorded its time."""
        own = measured_cost([TrialSeconds(r.width, r.seconds) for r in self.rows
                             if r.setup == setup and r.status == TIMED_STATUS])
        if own is not None:
            return SetupCost(setup, own, pooled=False)
        pooled = measured_cost([TrialSeconds(r.width, r.seconds) for r in self.rows if r.status == TIMED_STATUS])
        return SetupCost(setup, pooled, pooled=True) if pooled is not None else None


def _number(text: Optional[str]) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def _row(record: dict[str, str]) -> Optional[FinishedRow]:
    width, seconds, stacked = _number(record.get("width")), _number(record.get("seconds")), \
        _number(record.get("batch_trials"))
    if not math.isfinite(width) or width <= 0:
        return None
    share = seconds / stacked if math.isfinite(stacked) and stacked >= 1 else seconds
    return FinishedRow(str(record.get("setup") or ""), int(width), str(record.get("status") or ""), share)


def read_finished(run_dir: Path) -> FinishedTrials:
    """The finished trials of ``run_dir/trials.csv``; none when the file is missing or unreadable."""
    try:
        with open(run_dir / TRIALS_FILE, newline="", encoding="utf-8") as handle:
            rows = [_row(record) for record in csv.DictReader(handle)]
    except (OSError, csv.Error, UnicodeDecodeError):
        return FinishedTrials(())
    return FinishedTrials(tuple(row for row in rows if row is not None))
