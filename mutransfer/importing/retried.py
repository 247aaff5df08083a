"""An import's points with failed attempts beside a run with a loss at the same LR and seed (a crashed run and its
finished retry, ``convert.WITH_LOSS``), flagged on the summary's points as ``retried:N``: the analysis reads such an
attempt as a sweep reads a failed trial ``--retry-failed`` replaced (not among the point's failures), and the flag
keeps it in sight where the sweep's ``past_finished`` and failure counts are shown."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from ..analysis.point_result import PointResult
from ..analysis.result import Summary
from ..schema import axis_named

__all__ = ["RETRIED", "flag_retried"]

RETRIED = "retried"
"""The flag of a point with failed attempts beside runs with a loss at their LR and seed: ``retried:2``."""
_DIGITS = 9


def _key(setup: str, at: Mapping[str, Any], axes: Sequence[str]) -> Optional[tuple[Any, ...]]:
    """A point's setup and its value on each of ``axes`` (9 significant digits); None where ``at`` lacks one."""
    if any(name not in at for name in axes):
        return None
    return (setup, *(float(f"{float(at[name]):.{_DIGITS}g}") for name in axes))


def _flag(point: PointResult, failed: Optional[int]) -> None:
    flag = f"{RETRIED}:{failed}"
    if failed and flag not in point.flags:
        point.flags.append(flag)


def flag_retried(summary: Summary, retried: Sequence[Mapping[str, Any]], trials: pd.DataFrame,
                 axes: Sequence[str]) -> None:
    """Add ``retried:N`` to the flags of each point of ``summary`` (along each axis's line and in the law) that
    ``retried`` (``Imported.retried_points``) lists; a line with no cut recorded lies through the smallest value
    of every other axis of ``trials``, as the analysis draws it."""
    counts = {_key(str(p["setup"]), p, axes): int(p["failed"]) for p in retried}
    if not counts:
        return
    base = {name: trials[axis_named(name).column].min() for name in axes}
    for label, setup in summary.setups().items():
        for name, fit in setup.axes.items():
            at = fit.at if fit.at is not None else base
            for value, point in fit.points.items():
                _flag(point, counts.get(_key(label, {**at, name: value}, axes)))
        for law_point in setup.law.points if setup.law is not None else []:
            _flag(law_point.result, counts.get(_key(label, law_point.at, axes)))
