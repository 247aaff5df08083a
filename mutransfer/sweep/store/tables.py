"""A sweep's storage → tidy tables (``trials.csv``, ``curves.csv``). Reads the storage only."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import pandas as pd
from optuna.trial import TrialState

from ...files import CURVE_COLUMNS
from ...schema import LR_COLUMN, LR_KEY, TRANSFER_AXES, Axis
from ...words import TrialStatus
from ..plan.sweep_plan import SweepPlan
from .studies import StudyKey, live_trials, load_study, seed_of

__all__ = ["TRIAL_COLUMNS", "OPTIONAL_COLUMNS", "STATE_STATUS", "collect"]

TRIAL_COLUMNS = ["setup", "parametrization", "optimizer", "width", "seed", "search_key", LR_COLUMN, "lr", "val_loss",
                 "train_loss", "status", "steps", "seconds", "tokens_per_s", "optimizer_fraction", "peak_memory_mb",
                 "batch_trials", "study", "trial", "host", "pid"]
OPTIONAL_COLUMNS = ("noise_scale", "branched_at", "compiled", "message")
"""Columns a sweep's trials.csv has only when some trial recorded them: the gradient noise scale
(``train.noise_scale``), the trunk step a horizon branched off (``trunks``), whether the steps ran compiled
(``train.compile``; trials of sweeps from before 0.7 did not record it) and why a trial failed."""
STATE_STATUS = {TrialState.COMPLETE: TrialStatus.OK, TrialState.PRUNED: TrialStatus.PRUNED,
                TrialState.FAIL: TrialStatus.FAILED}


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _coordinate(key: StudyKey, axis: Axis, attrs: dict[str, Any]) -> Any:
    """The study's value on ``axis``; the trial's own record where the point leaves it to the config (the tokens
    a batch axis held at fixed steps reads)."""
    value = getattr(key.point, axis.name)
    return attrs.get(axis.column) if value is None else value


def collect(plan: SweepPlan, storage: Any, prefix: str,
            keys: Optional[Sequence[StudyKey]] = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per finished trial (bookkeeping entries left out) and one row per recorded curve point, of every
    study or of ``keys``'. A sweep across depth or horizon adds a ``depth`` or ``horizon`` column to the trials,
    one across batch sizes the ``batch_size``, ``tokens`` and ``hold`` columns; its curves are those of the width
    axis (at the base point)."""
    spec = plan.spec
    axes = [axis for axis in TRANSFER_AXES[1:] if axis.name in spec.swept() or
            (spec.listed("batch") and axis.name == "tokens")]
    axis_columns = [axis.column for axis in axes] + (["hold"] if spec.hold else [])
    stage_columns = ["stage"] if spec.constants is not None else []
    base = spec.points()[0]
    extra_keys = sorted({s.key for setup in spec.setups for s in setup.search if s.key != LR_KEY} |
                        set(spec.constants.keys if spec.constants is not None else ()))
    rows: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    for key in plan.studies if keys is None else keys:
        study = load_study(storage, key, prefix)
        for t in live_trials(study, tuple(STATE_STATUS)):
            if key.search.column not in t.params:
                continue
            a = t.user_attrs
            x = t.params[key.search.column]
            lr = _num(a.get("lr"))
            row = {"setup": key.setup, "parametrization": a.get("parametrization"), "optimizer": a.get("optimizer"),
                   "width": key.width, "seed": seed_of(t, key), "search_key": key.search.key,
                   LR_COLUMN: math.log2(lr) if lr > 0 else math.nan, "lr": lr,
                   "val_loss": _num(a.get("val_loss")), "train_loss": _num(a.get("train_loss")),
                   "status": a.get("status") or STATE_STATUS[t.state], "steps": a.get("steps"),
                   "seconds": _num(a.get("seconds")), "tokens_per_s": _num(a.get("tokens_per_s")),
                   "optimizer_fraction": _num(a.get("optimizer_fraction")),
                   "peak_memory_mb": _num(a.get("peak_memory_mb")), "batch_trials": a.get("batch_trials"),
                   "study": study.study_name, "trial": t.number,
                   "host": a.get("host"), "pid": a.get("pid"),
                   **{axis.column: _coordinate(key, axis, a) for axis in axes},
                   **({"hold": spec.hold} if spec.hold else {}),
                   **({"stage": key.stage} if stage_columns else {})}
            for extra in extra_keys:
                row[extra] = key.search.value(x) if key.search.key == extra else math.nan
            for name in OPTIONAL_COLUMNS:
                if name == "message":
                    row.update({"message": a["message"]} if a.get("message") else {})
                elif name in a:
                    row[name] = a[name] if isinstance(a[name], bool) else _num(a.get(name))
            rows.append(row)
            if key.point[1:] != base[1:] or key.stage is not None:
                continue
            evals = {int(step): val for step, val in a.get("evals") or []}
            for step, loss in a.get("curve") or []:
                curves.append({"setup": key.setup, "width": key.width, "seed": seed_of(t, key), "search_key": key.search.key,
                               "x": x, "trial": t.number, "step": int(step), "train_loss": _num(loss),
                               "val_loss": _num(evals.get(int(step)))})
    optional = [name for name in OPTIONAL_COLUMNS if any(name in row for row in rows)]
    trials = pd.DataFrame(rows, columns=TRIAL_COLUMNS + axis_columns + stage_columns + extra_keys + optional)
    trials = trials.sort_values(["setup", "search_key", "width", *axis_columns, *stage_columns, "seed", LR_COLUMN,
                                 "trial"], kind="stable")
    return trials.reset_index(drop=True), pd.DataFrame(curves, columns=CURVE_COLUMNS)
