"""The second stage of a two-stage search: a key searched at each point's measured learning-rate optimum
(``search.at: optimum``) waits until the learning-rate studies at that point are done, then trains there.

The optimum is the one ``summary.json`` reports for that point (the same analysis of the same trials, every
seed and noise probe), so a resumed sweep, or another worker, finds the same learning rate."""

from __future__ import annotations

import math
from typing import Any, Optional

import optuna
import pandas as pd
from optuna.trial import TrialState

from ..analysis.drift import SearchSettings, analyze
from ..schema import LR_KEY
from .spec import SweepSpec
from .studies import StudyKey, finished_points, live_trials, load_study, seed_of, study_keys
from .tables import STATE_STATUS

__all__ = ["lr_keys", "stage_done", "point_optimum"]


def lr_keys(spec: SweepSpec, key: StudyKey) -> list[StudyKey]:
    """The learning-rate studies at ``key``'s point (its setup, width, depth and horizon; every seed), not the
    stages of a spec's ``constants`` rounds."""
    return [k for k in study_keys(spec) if k.setup == key.setup and k.point == key.point and k.search.key == LR_KEY
            and k.stage is None]


def stage_done(study: optuna.Study, key: StudyKey) -> bool:
    """Whether a study has nothing running, waiting or left to queue (a sampler's: its budget reached)."""
    if live_trials(study, (TrialState.RUNNING, TrialState.WAITING)):
        return False
    policy = key.policy()
    finished = finished_points(live_trials(study, tuple(TrialState)), key)
    if not policy.queued:
        return len(finished) >= policy.budget()
    return bool(finished) and not policy.missing_initial_points(finished) and not policy.next_points(finished)


def _rows(study: optuna.Study, key: StudyKey) -> list[dict[str, Any]]:
    rows = []
    for t in live_trials(study, tuple(STATE_STATUS)):
        if key.search.column not in t.params:
            continue
        loss = t.user_attrs.get("val_loss")
        rows.append({"point": key.width, "setup": key.setup, "seed": seed_of(t, key), "x": t.params[key.search.column],
                     "loss": float(loss) if isinstance(loss, (int, float)) else math.nan,
                     "status": t.user_attrs.get("status") or STATE_STATUS[t.state]})
    return rows


def point_optimum(spec: SweepSpec, key: StudyKey, storage: optuna.storages.BaseStorage,
                  prefix: str) -> Optional[float]:
    """log2 η* at ``key``'s point once its learning-rate studies are done (None before): the analysis's optimum
    (a bound when censored at the grid's edge), else the best finished point, else NaN (every trial diverged or
    failed: the config's η)."""
    rows: list[dict[str, Any]] = []
    search = None
    for lr_key in lr_keys(spec, key):
        study = load_study(storage, lr_key, prefix)
        if not stage_done(study, lr_key):
            return None
        rows += _rows(study, lr_key)
        search = lr_key.search
    if search is None:
        return None
    table = pd.DataFrame(rows)
    settings = SearchSettings(step=search.step, log2=True, low=search.min, high=search.max)
    entry = analyze(table, settings)[key.setup].points[key.width]
    if entry.x_star is not None:
        return float(entry.x_star)
    finite = table[(table["status"] == "ok") & table["loss"].map(math.isfinite)]
    if len(finite):
        return float(finite.groupby("x")["loss"].mean().idxmin())
    return math.nan
