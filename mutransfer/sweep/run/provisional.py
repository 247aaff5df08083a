"""The answer so far of a sweep still training: the same analysis on the trials finished, recomputed as trials
finish and handed on only when it changes (an optimum, a slope, an interval or a verdict at the printed digit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import optuna
import pandas as pd

from ...analysis.result import Basis, Summary
from ...analysis.run_files import spec_settings
from ...analysis.summary import summarize
from ...analysis.thresholds import Thresholds
from ..store.completion import sweep_status
from ..plan.keys import StudyKey
from ..plan.sweep_plan import SweepPlan
from ..store.studies import RERUN
from ..store.tables import collect

__all__ = ["Provisional", "ProvisionalAnswer", "answer_key", "basis_of"]


@dataclass(frozen=True)
class Provisional:
    """An answer so far and the tables it was computed from (what a sweep writes to its run directory)."""

    summary: Summary
    trials: pd.DataFrame
    curves: pd.DataFrame


def basis_of(trials: pd.DataFrame, planned: int, primary: tuple[int, ...]) -> Basis:
    """What ``trials`` (a sweep's table so far) rest on; a trial of a seed outside ``primary`` is a noise probe."""
    finished = trials[~trials["status"].isin(RERUN)]
    probes = finished[~finished["seed"].isin(primary)]
    return Basis(widths=tuple(sorted(int(w) for w in finished["width"].unique())), trials=len(finished),
                 planned=planned, noise_widths=tuple(sorted(int(w) for w in probes["width"].unique())))


def answer_key(summary: Summary) -> tuple[object, ...]:
    """What a reader of the answer sees, at the printed digits: each setup's verdict, slope and interval, and each
    width's optimum."""
    parts: list[object] = []
    for label, result in summary.setups().items():
        fit = result.judged("width")
        parts += [label, fit.verdict, None if fit.slope is None else round(fit.slope, 2),
                  None if fit.slope_ci is None else tuple(round(v, 2) for v in fit.slope_ci)]
        parts += [(point, None if o.x_star is None else round(o.x_star, 2)) for point, o in sorted(fit.points.items())]
    return tuple(parts)


class ProvisionalAnswer:
    """Recomputes a sweep's answer from its storage when more trials have finished; ``update`` returns it when it
    changed, None otherwise."""

    def __init__(self, plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str,
                 skipped: Callable[[StudyKey], bool] = lambda key: False, th: Thresholds = Thresholds()) -> None:
        self.plan, self.storage, self.prefix, self.skipped, self.th = plan, storage, prefix, skipped, th
        self.done = -1
        self.last: Optional[tuple[object, ...]] = None

    def update(self, done: int) -> Optional[Provisional]:
        """The answer when ``done`` (trials finished) moved on and the answer changed; None otherwise."""
        if done == self.done:
            return None
        self.done = done
        trials, curves = collect(self.plan, self.storage, self.prefix)
        if trials.empty:
            return None
        summary = summarize(trials, spec_settings(self.plan.spec.as_dict()), self.th)
        key = answer_key(summary)
        if key == self.last:
            return None
        self.last = key
        status = sweep_status(self.plan, self.storage, self.prefix, skipped=self.skipped)
        summary.status = status.as_dict()
        summary.provisional = basis_of(trials, status.planned, self.plan.spec.seeds)
        return Provisional(summary, trials, curves)
