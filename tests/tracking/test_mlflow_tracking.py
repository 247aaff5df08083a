"""A sweep logged to MLflow's local file store: a run per trial under the sweep's parent run, the answer on the
parent, the round trip through ``mutransfer import --mlflow``, and a tracker that cannot be reached."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import mlflow
import pytest
from typer.testing import CliRunner

from conftest import invoke
from tracked_sweep import GRID, answer, write_tracked_spec



@pytest.fixture(autouse=True)
def mlflow_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings the tracker sets for its process, set here so that each test leaves the environment as it was."""
    for name, value in {"MLFLOW_ALLOW_FILE_STORE": "true", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
                        "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> tuple[Path, str]:
    """A sweep run with ``--log mlflow`` into a file store; its run directory and the store's URI."""
    folder = tmp_path_factory.mktemp("mlflow")
    uri = (folder / "mlruns").as_uri()
    spec = write_tracked_spec(folder, text_file, log={"tracker": "mlflow", "uri": uri, "tags": {"team": "lr"}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        result = invoke(CliRunner(), "sweep", str(spec), "--out", str(folder / "run"), "--threads", "1")
    assert result.exit_code == 0, result.output
    return folder / "run", uri


def runs(uri: str, experiment: str = "tracked") -> list["mlflow.entities.Run"]:
    """Every run of the experiment, read through a client of that URI."""
    client = mlflow.tracking.MlflowClient(uri)
    return client.search_runs([client.get_experiment_by_name(experiment).experiment_id], max_results=1000)


def test_each_trial_is_a_finished_run_under_the_sweeps_parent(logged: tuple[Path, str]) -> None:
    run_dir, uri = logged
    found = runs(uri)
    parents = [r for r in found if r.data.tags.get("mutransfer.kind") == "sweep"]
    trials = [r for r in found if r.data.tags.get("mutransfer.kind") == "trial"]
    assert len(parents) == 1 and len(trials) == GRID
    parent = parents[0]
    assert json.loads((run_dir / "tracker.json").read_text())[0]["parent"] == parent.info.run_id
    assert {r.data.tags["mlflow.parentRunId"] for r in trials} == {parent.info.run_id}
    assert {r.info.status for r in trials} == {"FINISHED"}
    assert all(r.data.tags["team"] == "lr" for r in found)
    rows = {(int(r.data.params["width"]), float(r.data.params["log2_lr"])): r for r in trials}
    assert sorted(rows) == [(w, x) for w in (32, 64) for x in (-6.0, -4.0, -2.0, 0.0)]
    table = pd.read_csv(run_dir / "trials.csv")
    for row in table.itertuples():
        logged_run = rows[(row.width, row.log2_lr)]
        assert logged_run.data.params["setup"] == row.setup and int(logged_run.data.params["seed"]) == row.seed
        assert float(logged_run.data.params["lr"]) == pytest.approx(row.lr, rel=1e-12)
        assert logged_run.data.tags["mutransfer.status"] == row.status
        if row.status == "ok":
            assert logged_run.data.metrics["loss"] == pytest.approx(row.val_loss, rel=1e-9)


def test_the_curve_is_logged_step_by_step(logged: tuple[Path, str]) -> None:
    _, uri = logged
    client = mlflow.tracking.MlflowClient(uri)
    trial = next(r for r in runs(uri) if r.data.tags.get("mutransfer.kind") == "trial"
                 and r.data.tags["mutransfer.status"] == "ok")
    train = client.get_metric_history(trial.info.run_id, "train_loss")
    val = client.get_metric_history(trial.info.run_id, "val_loss")
    assert [m.step for m in train] == list(range(1, 13))
    assert [m.step for m in val] == [4, 8, 12]
    assert val[-1].value == pytest.approx(trial.data.metrics["loss"])


def test_the_parent_holds_the_answer_its_figures_and_each_provisional_answer(logged: tuple[Path, str]) -> None:
    run_dir, uri = logged
    client = mlflow.tracking.MlflowClient(uri)
    parent = next(r for r in runs(uri) if r.data.tags.get("mutransfer.kind") == "sweep")
    assert parent.info.status == "FINISHED"
    names = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"summary.json", "trials.csv", "transfer.png"} <= names
    label, verdict, *_ = answer(run_dir)[0]
    assert parent.data.tags[f"{label}.verdict"] == verdict
    history = client.get_metric_history(parent.info.run_id, "mup_muon.log2_eta.width_32")
    assert len({m.step for m in history}) >= 2, "each provisional answer is logged at the trials it rests on"
    assert history[-1].value == pytest.approx(next(r[2] for r in answer(run_dir) if r[1] == 32), abs=0.005)


def test_the_logged_experiment_imports_back_to_the_same_answer(logged: tuple[Path, str], tmp_path: Path) -> None:
    run_dir, uri = logged
    result = invoke(CliRunner(), "import", "--mlflow", uri, "--experiment", "tracked", "--out", str(tmp_path / "back"))
    assert result.exit_code == 0, result.output
    assert answer(tmp_path / "back") == answer(run_dir)


def test_a_resumed_sweep_logs_into_the_same_parent(logged: tuple[Path, str]) -> None:
    run_dir, uri = logged
    parent = json.loads((run_dir / "tracker.json").read_text())[0]["parent"]
    spec = run_dir.parent / "tracked.yaml"
    result = invoke(CliRunner(), "sweep", str(spec), "--out", str(run_dir), "--threads", "1", "--retry-failed")
    assert result.exit_code == 0, result.output
    assert json.loads((run_dir / "tracker.json").read_text())[0]["parent"] == parent
    assert len([r for r in runs(uri) if r.data.tags.get("mutransfer.kind") == "sweep"]) == 1
    assert len([r for r in runs(uri) if r.data.tags.get("mutransfer.kind") == "trial"]) == GRID


def test_a_server_that_cannot_be_reached_costs_one_warning(tmp_path: Path, text_file: Path,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    spec = write_tracked_spec(tmp_path, text_file, log={"tracker": "mlflow", "uri": "http://127.0.0.1:9"}, steps=4)
    started = time.monotonic()
    result = invoke(CliRunner(), "sweep", str(spec), "--out", str(tmp_path / "run"), "--threads", "1")
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 120
    warnings = [line for line in (result.output + capfd.readouterr().err).splitlines() if "warning: mlflow" in line]
    assert len(warnings) == 1 and "the sweep goes on without logging" in warnings[0]
    assert len(pd.read_csv(tmp_path / "run" / "trials.csv")) == GRID
    assert not (tmp_path / "run" / "tracker.json").exists()


@pytest.mark.slow
def test_verify_logs_its_target_runs_where_the_sweep_logged(logged: tuple[Path, str]) -> None:
    run_dir, uri = logged
    result = invoke(CliRunner(), "verify", "--width", "128", "--from", str(run_dir), "--threads", "1",
                    "--log", "mlflow")
    assert result.exit_code == 0, result.output
    client = mlflow.tracking.MlflowClient(uri)
    verify = [r for r in runs(uri) if r.data.tags.get("mutransfer.kind") == "sweep"
              and r.data.tags.get("mutransfer.sweep", "").startswith("verify")]
    assert len(verify) == 1 and verify[0].info.status == "FINISHED"
    names = {a.path for a in client.list_artifacts(verify[0].info.run_id)}
    assert {"verify.json", "verify.csv", "verify.png"} <= names
    document = json.loads((run_dir / "verify.json").read_text())
    assert verify[0].data.tags["passed"] == str(document["passed"])
    targets = [r for r in runs(uri) if r.data.tags.get("mlflow.parentRunId") == verify[0].info.run_id]
    assert targets and {int(r.data.params["width"]) for r in targets} == {128}
    assert len(targets) == len(pd.read_csv(run_dir / "verify.csv"))
