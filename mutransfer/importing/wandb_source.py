"""W&B runs written offline (``WANDB_MODE=offline``) read as a table: each run a row, its config and summary as
columns, ``state`` finished / failed / running from its exit. Runs a sweep logged (``--log wandb``) keep their
trial runs and map themselves (``mlflow_source.logged_mapping``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from .source import Source

__all__ = ["read_wandb_offline"]


def read_wandb_offline(directory: Path) -> tuple[pd.DataFrame, Source, bool]:
    """The runs under ``directory`` as a table, its source record, and whether a sweep logged them (then only its
    trial runs are kept)."""
    from ..tracking.backend import KIND_TAG, TRIAL_KIND
    from ..tracking.wandb_offline import read_offline_runs

    runs = read_offline_runs(directory)
    logged = any(run.config.get(KIND_TAG) == TRIAL_KIND for run in runs)
    rows = []
    for run in runs:
        if logged and run.config.get(KIND_TAG) != TRIAL_KIND:
            continue
        state = "running" if run.exit_code is None else "finished" if run.exit_code == 0 else "failed"
        rows.append({"run_id": run.run_id, "group": run.group, "state": state,
                     **{k: v for k, v in run.config.items() if not k.startswith("_")},
                     **{k: v for k, v in run.summary.items() if not k.startswith("_")}})
    table = pd.DataFrame(rows)
    digest = hashlib.sha256(table.to_csv(index=False).encode()).hexdigest()
    return table, Source("wandb", str(directory), len(table), digest), logged
