"""MLflow: the sweep is a parent run, each trial a nested run (``mlflow.parentRunId``) in the experiment, found
again by its ``mutransfer.trial_key`` tag when it is trained again."""

from __future__ import annotations

import os
import time
from typing import Any, Optional

from .backend import FINGERPRINT_TAG, KEY_TAG, KIND_TAG, RETRY_TAG, STATUS_TAG, SWEEP_KIND, SWEEP_TAG, TRIAL_KIND
from .records import SweepAnswer, TrialEnd, TrialInfo
from .spec import TrackerSpec

__all__ = ["MlflowBackend", "HTTP_ENV", "is_file_store"]

HTTP_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
"""MLflow's HTTP client settings this process starts with unless the user set them: a server that does not answer
fails a call in seconds, not after minutes of retries."""
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
"""MLflow's UI opens such an experiment on its training runs (not on the GenAI views)."""
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
BATCH = 1000


def is_file_store(uri: str) -> bool:
    """A ``file:`` URI or a plain path: MLflow's file store."""
    return uri.startswith("file:") or "://" not in uri and uri != "" and not uri.startswith(("databricks", "sqlite:"))


class MlflowBackend:
    """The MLflow client of one process; ``spec.experiment`` is created when missing."""

    def __init__(self, spec: TrackerSpec) -> None:
        for name, value in HTTP_ENV.items():
            os.environ.setdefault(name, value)
        if is_file_store(spec.uri):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # the user chose a file store by its URI
        from mlflow.tracking import MlflowClient

        self.spec = spec
        self.client = MlflowClient(tracking_uri=spec.uri or None)
        self.experiment = self._experiment(spec.experiment)

    def _experiment(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage == "deleted":
                self.client.restore_experiment(found.experiment_id)
            return found.experiment_id
        try:
            return self.client.create_experiment(name, tags={**self.spec.tags, **EXPERIMENT_TAGS})
        except MlflowException:  # another worker created it first
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def open_sweep(self, name: str, existing: Optional[str], fingerprint: str) -> str:
        """The recorded parent, else the oldest parent run of this sweep in the experiment, else a new one. Two
        machines that start at once may both make one: each looks again after making its own and keeps the
        oldest, deleting its own when another is older."""
        if existing and self._usable(existing):
            return existing
        tags = {KIND_TAG: SWEEP_KIND, SWEEP_TAG: name, **({FINGERPRINT_TAG: fingerprint} if fingerprint else {})}
        found = self._parents(tags) if fingerprint else []
        if found:
            return self._reopened(found[0].info.run_id)
        run = self.client.create_run(self.experiment, run_name=name, tags={**self.spec.tags, **tags})
        oldest = (self._parents(tags) or [run])[0] if fingerprint else run
        if oldest.info.run_id != run.info.run_id:
            self.client.delete_run(run.info.run_id)
        return oldest.info.run_id

    def _usable(self, run_id: str) -> bool:
        from mlflow.exceptions import MlflowException

        try:
            run = self.client.get_run(run_id)
        except MlflowException:
            return False
        if run.info.lifecycle_stage == "deleted" or run.info.experiment_id != self.experiment:
            return False
        self._reopened(run_id)
        return True

    def _reopened(self, run_id: str) -> str:
        if self.client.get_run(run_id).info.status != "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
        return run_id

    def _parents(self, tags: dict[str, str]) -> list[Any]:
        """This sweep's parent runs, oldest first (ties by run id)."""
        where = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
        runs = self.client.search_runs([self.experiment], filter_string=where, max_results=100)
        return sorted(runs, key=lambda r: (r.info.start_time or 0, r.info.run_id))

    def _attempts(self, parent: str, key: str) -> list[Any]:
        escaped = key.replace("'", "\\'")
        return self.client.search_runs([self.experiment], filter_string=f"tags.`{PARENT_TAG}` = '{parent}' and "
                                       f"tags.`{KEY_TAG}` = '{escaped}'", max_results=100)

    def start_trial(self, parent: str, info: TrialInfo) -> str:
        earlier = self._attempts(parent, info.key)
        for run in earlier:
            if run.info.status != "KILLED":
                self.client.set_terminated(run.info.run_id, status="KILLED")
        tags = {**self.spec.tags, PARENT_TAG: parent, KIND_TAG: TRIAL_KIND, KEY_TAG: info.key}
        if earlier:
            tags[RETRY_TAG] = max(earlier, key=lambda r: r.info.start_time or 0).info.run_id
        run = self.client.create_run(self.experiment, run_name=info.name, tags=tags)
        from mlflow.entities import Param

        params = [Param(k, str(v)) for k, v in info.params.items()]
        for i in range(0, len(params), 100):
            self.client.log_batch(run.info.run_id, params=params[i:i + 100])
        return run.info.run_id

    def log(self, run: str, rows: list[tuple[int, dict[str, float]]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(name, value, now, step) for step, values in rows for name, value in values.items()]
        for i in range(0, len(batch), BATCH):
            self.client.log_batch(run, metrics=batch[i:i + BATCH])

    def end_trial(self, run: str, end: TrialEnd) -> None:
        self.log(run, [(end.step, end.metrics())])
        self.client.set_tag(run, STATUS_TAG, end.status)
        self.client.set_terminated(run, status={"failed": "FAILED", "interrupted": "KILLED"}.get(end.status,
                                                                                                 "FINISHED"))

    def log_answer(self, parent: str, answer: SweepAnswer) -> None:
        self.log(parent, [(answer.step, answer.metrics)])
        for name, value in answer.tags.items():
            self.client.set_tag(parent, name, value)
        for path in answer.files:
            self.client.log_artifact(parent, str(path), "provisional" if not answer.final and
                                     path.suffix == ".json" else None)
        if answer.final:
            self.client.set_terminated(parent, status="FINISHED")

    def close(self) -> None:
        pass

