"""An MLflow experiment read as a table of runs through MLflow's ``search_runs``: each run a row, its params,
metrics and tags as columns under their own names (``params.``/``metrics.``/``tags.`` dropped where the name is
free; params that read as numbers become numbers). An experiment a sweep logged (``--log mlflow``) keeps its
trial runs less the attempts a retry replaced (KILLED), and maps itself (``logged_mapping``)."""

from __future__ import annotations

import hashlib
from typing import Any, Optional

import pandas as pd

from ..errors import UserError, redact
from .mapping import AxisColumn, ImportMapping
from .source import Source

__all__ = ["read_mlflow", "logged_mapping", "AXIS_COLUMNS"]

AXIS_COLUMNS = ("width", "depth", "horizon", "batch_size", "tokens")
"""A logged trial's axis params (trials.csv's columns): each one whose runs hold two values or more is an axis."""
PREFIXES = ("params.", "metrics.", "tags.")
PAGE = 1000


def _flat(runs: pd.DataFrame) -> pd.DataFrame:
    renamed: dict[str, str] = {}
    for column in runs.columns:
        for prefix in PREFIXES:
            name = column[len(prefix):]
            if column.startswith(prefix) and name not in runs.columns and name not in renamed.values():
                renamed[column] = name
    table = runs.rename(columns=renamed)
    for column in table.columns:
        if column.startswith("params.") or renamed.get(f"params.{column}") == column:
            numbers = pd.to_numeric(table[column], errors="coerce")
            if numbers.notna().sum() == table[column].notna().sum():
                table[column] = numbers
    return table


def _runs(client: Any, experiment_id: str) -> pd.DataFrame:
    """Every run of the experiment, page by page, as ``mlflow.search_runs`` lays them out (``run_id``,
    ``status``, ``start_time``, ``params.*``, ``metrics.*``, ``tags.*``), read through ``client``'s URI."""
    rows: list[dict[str, Any]] = []
    token: Optional[str] = None
    while True:
        page = client.search_runs([experiment_id], max_results=PAGE, page_token=token)
        for run in page:
            rows.append({"run_id": run.info.run_id, "status": run.info.status, "start_time": run.info.start_time,
                         "end_time": run.info.end_time,
                         **{f"params.{k}": v for k, v in run.data.params.items()},
                         **{f"metrics.{k}": v for k, v in run.data.metrics.items()},
                         **{f"tags.{k}": v for k, v in run.data.tags.items()}})
        token = page.token
        if not token:
            return pd.DataFrame(rows, columns=None if rows else ["run_id", "status", "start_time", "end_time"])


def read_mlflow(uri: str, experiment: str) -> tuple[pd.DataFrame, Source, bool]:
    """The experiment's runs as a table, its source record, and whether a sweep logged it (then only its trial
    runs, less those a retry replaced, are kept)."""
    from ..tracking.mlflow_backend import HTTP_ENV, is_file_store
    from ..tracking.spec import check_uri

    check_uri(uri, "--mlflow")
    import os

    for name, value in HTTP_ENV.items():
        os.environ.setdefault(name, value)
    if is_file_store(uri):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    try:
        import mlflow
        from mlflow.exceptions import MlflowException
    except ImportError:
        raise UserError("--mlflow needs the mlflow package", "pip install 'mutransfer[mlflow]'") from None
    from ..tracking.backend import KIND_TAG, TRIAL_KIND

    try:
        client = mlflow.tracking.MlflowClient(tracking_uri=uri)  # never the process-wide URI
        found = client.get_experiment_by_name(experiment)
        if found is None:
            names = [e.name for e in client.search_experiments(max_results=50)]
            from ..errors import did_you_mean

            raise UserError(f"--experiment {experiment} is not in {redact(uri)}",
                            f"{did_you_mean(experiment, names)}its experiments: {', '.join(names[:10]) or '(none)'}")
        runs = _runs(client, found.experiment_id)
    except MlflowException as exc:
        raise UserError(f"cannot read {redact(uri)}: {str(exc).splitlines()[0][:160]}",
                        "check the tracking URI (and that its server runs)") from None
    kind = f"tags.{KIND_TAG}"
    logged = kind in runs.columns and bool((runs[kind] == TRIAL_KIND).any())
    if logged:
        runs = runs[(runs[kind] == TRIAL_KIND) & (runs["status"] != "KILLED")]
    table = _flat(runs.drop(columns=[c for c in ("artifact_uri",) if c in runs.columns]).sort_values(
        "start_time", kind="stable").reset_index(drop=True))
    text = table.drop(columns=[c for c in ("start_time", "end_time") if c in table.columns]).to_csv(index=False)
    source = Source("mlflow", redact(uri), len(table), hashlib.sha256(text.encode()).hexdigest(), experiment)
    return table, source, logged


def logged_mapping(table: pd.DataFrame, base: ImportMapping) -> ImportMapping:
    """The mapping of an experiment a sweep logged: its own columns (lr, loss, seed, setup, its status tag) and each axis
    param whose runs hold two values or more (width always), where ``base`` leaves them unset."""
    axes = base.axes or tuple(AxisColumn(c, c) for c in AXIS_COLUMNS
                              if c in table.columns and (c == "width" or table[c].nunique() > 1))
    from ..tracking.backend import STATUS_TAG

    return ImportMapping(lr=base.lr or "lr", loss=base.loss or "loss", axes=axes, seed=base.seed or "seed",
                         setup=base.setup or "setup", status=base.status or STATUS_TAG, where=base.where,
                         diverged_above=base.diverged_above, duplicates=base.duplicates, step=base.step,
                         lr_range=base.lr_range)
