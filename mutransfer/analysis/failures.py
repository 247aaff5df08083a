"""Failed trials in a table: in a point's tidy rows (columns ``x, seed, status``), how many failures no later trial
at the same value and seed replaced (``--retry-failed`` trains a failed point again; its first trial stays in the
table) and whether the optimum was placed past the last finished value, toward the failed ones; in a run's
trials.csv, whether every trial failed, and how. No pandas import: the rerun of a finished sweep reads it."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..words import TrialStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FINISHED", "PAST_FINISHED", "unresolved_failures", "past_finished", "AllFailed", "all_failed"]

FINISHED = (TrialStatus.OK, TrialStatus.DIVERGED, TrialStatus.PRUNED)
"""Statuses of trials that ended with a loss or a bound."""
PAST_FINISHED = "past_finished"
"""The flag of an optimum beyond the last finished value on the side where trials failed (``:high`` or ``:low``):
the bowl's vertex extrapolated into a region no trial measured."""
_DIGITS = 9


def _failed_values(rows: pd.DataFrame) -> list[float]:
    """The (value, seed) pairs' values where trials failed and none finished, each pair once."""
    done = {(round(float(x), _DIGITS), seed) for x, seed, status in zip(rows["x"], rows["seed"], rows["status"])
            if status in FINISHED}
    failed = {(round(float(x), _DIGITS), seed): float(x) for x, seed, status in zip(rows["x"], rows["seed"],
                                                                                    rows["status"])
              if status == TrialStatus.FAILED}
    return [x for pair, x in failed.items() if pair not in done]


def unresolved_failures(rows: pd.DataFrame) -> int:
    """The point's failed (value, seed) pairs that no finished trial replaced: a value that failed, was retried
    and failed again counts once."""
    return len(_failed_values(rows))


def past_finished(rows: pd.DataFrame, x_star: Optional[float]) -> list[str]:
    """``["past_finished:high"]`` when ``x_star`` lies above every finished value and a trial above them failed
    (``:low`` below); ``[]`` otherwise."""
    finished = [float(x) for x, status in zip(rows["x"], rows["status"]) if status in FINISHED]
    failed = _failed_values(rows)
    if x_star is None or not finished or not failed:
        return []
    low, high = min(finished), max(finished)
    flags = []
    if x_star > high and any(x > high for x in failed):
        flags.append(f"{PAST_FINISHED}:high")
    if x_star < low and any(x < low for x in failed):
        flags.append(f"{PAST_FINISHED}:low")
    return flags


@dataclass(frozen=True)
class AllFailed:
    """A run whose every trial failed: how many, and the most common failure with how many trials it ended."""

    trials: int
    message: str
    count: int

    def line(self) -> str:
        """``every trial failed (21 of 21), 21 with: the command exited with code 2: python: can't open file …``."""
        return f"every trial failed ({self.trials} of {self.trials}), {self.count} with: {self.message}"


def all_failed(trials_csv: Path) -> Optional[AllFailed]:
    """The failures of a trials.csv whose trials all failed (none ended with a loss or a bound; interrupted and
    abandoned ones, which run again, not counted); None when one did not, or the file cannot be read."""
    try:
        with open(trials_csv, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, csv.Error):
        return None
    statuses = [row.get("status") for row in rows]
    failed = [row.get("message") or "no message recorded" for row in rows if row.get("status") == TrialStatus.FAILED]
    if not failed or any(status in FINISHED for status in statuses):
        return None
    message, count = Counter(failed).most_common(1)[0]
    return AllFailed(trials=len(failed), message=message, count=count)
