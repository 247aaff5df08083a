"""MLflow: the sweep is a parent run, each trial a nested run (``mlflow.parentRunId``) in the experiment, found
again by its ``mutransfer.trial_key`` tag when it is trained again."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from ..errors import UserError
from .backend import FINGERPRINT_TAG, KEY_TAG, KIND_TAG, RETRY_TAG, STATUS_TAG, SWEEP_KIND, SWEEP_TAG, TRIAL_KIND
from .records import SweepAnswer, TrialEnd, TrialInfo, param_text
from .spec import TrackerSpec

__all__ = ["MlflowBackend", "HTTP_ENV", "QUIET_ENV", "is_file_store", "quiet_urls", "file_store_refused"]

HTTP_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
"""MLflow's HTTP client settings this process starts with unless the user set them: a server that does not answer
fails a call in seconds, not after minutes of retries."""
QUIET_ENV = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"
"""MLflow's switch for the ``View run …`` and ``View experiment …`` lines its client prints on stdout each time a
run on a server ends (``mlflow.environment_variables``): on while the tracker ends a run (``quiet_urls``), so the
sweep's own lines are all its output holds."""
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
"""MLflow's UI opens such an experiment on its training runs (not on the GenAI views)."""
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
BATCH = 1000


def is_file_store(uri: str) -> bool:
    """A ``file:`` URI or a plain path: MLflow's file store."""
    return uri.startswith("file:") or "://" not in uri and uri != "" and not uri.startswith(("databricks", "sqlite:"))


def file_store_refused(uri: str) -> UserError:
    """Why MLflow 3 will not log to the file store ``uri`` (it opens one only with ``MLFLOW_ALLOW_FILE_STORE=true``),
    and MLflow's local database to use instead: one line."""
    return UserError(f"MLflow 3's file store {uri} takes no new experiments or runs (unless "
                     "MLFLOW_ALLOW_FILE_STORE=true)", "log to MLflow's local database instead: "
                     "MLFLOW_TRACKING_URI=sqlite:///mlflow.db, or log.uri: sqlite:///mlflow.db in the spec")


@contextmanager
def quiet_urls() -> Iterator[None]:
    """MLflow's URL lines off (``QUIET_ENV``) for the calls inside, unless the user set the switch either way; the
    environment as it was afterwards. Only the scope that set it removes it."""
    if QUIET_ENV in os.environ:
        yield
        return
    os.environ[QUIET_ENV] = "true"
    try:
        yield
    finally:
        os.environ.pop(QUIET_ENV, None)


class MlflowBackend:
    """The MLflow client of one process; ``spec.experiment`` is created when missing."""

    def __init__(self, spec: TrackerSpec) -> None:
        for name, value in HTTP_ENV.items():
            os.environ.setdefault(name, value)
        if is_file_store(spec.uri):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # the user chose a file store by its URI
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE
        from mlflow.tracking import MlflowClient, get_tracking_uri

        uri = spec.uri or get_tracking_uri()
        if is_file_store(uri) and not MLFLOW_ALLOW_FILE_STORE.get():
            raise file_store_refused(uri)
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
                self._terminate(run.info.run_id, "KILLED")
        tags = {**self.spec.tags, PARENT_TAG: parent, KIND_TAG: TRIAL_KIND, KEY_TAG: info.key}
        if earlier:
            tags[RETRY_TAG] = max(earlier, key=lambda r: r.info.start_time or 0).info.run_id
        run = self.client.create_run(self.experiment, run_name=info.name, tags=tags)
        from mlflow.entities import Param

        params = [Param(k, param_text(v)) for k, v in info.params.items()]
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
        self._terminate(run, {"failed": "FAILED", "interrupted": "KILLED"}.get(end.status, "FINISHED"))

    def _terminate(self, run: str, status: str) -> None:
        """End ``run`` with ``status``, without MLflow's URL lines on stdout."""
        with quiet_urls():
            self.client.set_terminated(run, status=status)

    def log_answer(self, parent: str, answer: SweepAnswer) -> None:
        self.log(parent, [(answer.step, answer.metrics)])
        for name, value in answer.tags.items():
            self.client.set_tag(parent, name, value)
        for path in answer.files:
            self.client.log_artifact(parent, str(path), "provisional" if not answer.final and
                                     path.suffix == ".json" else None)
        if answer.final:
            self._terminate(parent, "FINISHED")

    def close(self) -> None:
        pass

