"""What the tracker refuses before anything trains (one line, exit 2, nothing written), and the guard that keeps a
failing or hanging tracker from breaking a sweep."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.errors import UserError
from mutransfer.tracking.guard import GuardedTracker
from mutransfer.tracking.spec import TrackerSpec, check_uri, parse_log_section
from tracked_sweep import write_tracked_spec


def refused(runner: CliRunner, words: list[str], says: str, out: Path) -> None:
    result = invoke(runner, *words)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], result.output
    assert not out.exists(), "nothing is written when the tracker is refused"


@pytest.mark.parametrize("words, says", [
    (["--log", "mflow"], "--log mflow is not a tracker; did you mean 'mlflow'?"),
    (["--log", "mlflow", "log.tracker=mlflow", "log.uri=htp://127.0.0.1:5000"], "'htp' is not a tracking URI scheme"),
    (["--log", "mlflow", "log.tracker=mlflow", "log.uri=http://"], "names no host and port"),
    (["--log", "mlflow", "log.tracker=mlflow", "log.uri=http://127.0.0.1:99999"], "names no host and port"),
    (["log.tracker=mlflow", "log.project=p"], "log.project is not a mlflow setting"),
    (["log.tracker=tensorboard"], "log.tracker='tensorboard' is not a tracker"),
    (["log.tracker=wandb", "log.entity=no/slash"], "is not a W&B entity name"),
])
def test_a_bad_tracker_is_refused_in_one_line(runner: CliRunner, tmp_path: Path, text_file: Path, words: list[str],
                                              says: str) -> None:
    spec = write_tracked_spec(tmp_path, text_file)
    out = tmp_path / "run"
    refused(runner, ["sweep", str(spec), *words, "--out", str(out)], says, out)


def test_an_unknown_key_of_the_log_section_is_named() -> None:
    with pytest.raises(UserError, match="unknown key 'log.url'; did you mean 'uri'"):
        parse_log_section({"tracker": "mlflow", "url": "http://127.0.0.1:5000"})


def test_a_tracker_whose_package_is_missing_is_refused(runner: CliRunner, tmp_path: Path, text_file: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)
    spec = write_tracked_spec(tmp_path, text_file)
    out = tmp_path / "run"
    refused(runner, ["sweep", str(spec), "--log", "wandb", "--out", str(out)],
            "--log wandb needs the wandb package; pip install 'mutransfer[wandb]'", out)
    refused(runner, ["import", "--wandb", str(tmp_path), "--out", str(out)], "pip install 'mutransfer[wandb]'", out)


def test_verify_refuses_a_bad_tracker_before_training(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    out.mkdir()
    result = invoke(runner, "verify", "--width", "128", "--from", str(out), "--log", "neptune")
    assert result.exit_code == 2 and "--log neptune is not a tracker" in result.output
    assert list(out.iterdir()) == []


def test_import_takes_the_experiment_with_the_uri(runner: CliRunner, tmp_path: Path) -> None:
    refused(runner, ["import", "--mlflow", "http://127.0.0.1:5000", "--out", str(tmp_path / "x")],
            "--mlflow and --experiment go together", tmp_path / "x")
    refused(runner, ["import", "--mlflow", "ftp://host/x", "--experiment", "e", "--out", str(tmp_path / "x")],
            "'ftp' is not a tracking URI scheme", tmp_path / "x")


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5000", "https://mlflow.example.org", "sqlite:///mlflow.db",
                                 "file:///tmp/mlruns", "mlruns", "/abs/mlruns", "databricks", ""])
def test_the_uris_mlflow_takes_pass(uri: str) -> None:
    assert check_uri(uri, "log.uri") == uri


class Failing:
    def __init__(self) -> None:
        self.calls = 0

    def start_trial(self, parent: str, info: object) -> str:
        self.calls += 1
        raise ConnectionError("connection refused")


def test_the_first_failure_warns_once_and_turns_the_tracker_off(capsys: pytest.CaptureFixture[str]) -> None:
    backend = Failing()
    tracker = GuardedTracker(lambda: backend, "mlflow experiment 'e'")  # type: ignore[arg-type,return-value]
    results = [tracker.call(lambda b: b.start_trial("p", None)) for _ in range(5)]
    tracker.close()
    assert results == [None] * 5 and backend.calls == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: mlflow experiment 'e': ConnectionError: connection refused; the sweep goes on without "
                   "logging to it (its own files keep every result)"]


def test_a_call_that_hangs_holds_the_trial_for_a_bounded_time(capsys: pytest.CaptureFixture[str]) -> None:
    release = threading.Event()
    tracker = GuardedTracker(lambda: object(), "wandb project 'p'")  # type: ignore[arg-type,return-value]
    started = time.monotonic()
    assert tracker.call(lambda b: release.wait(30), seconds=0.5) is None
    assert time.monotonic() - started < 5 and tracker.off
    assert tracker.call(lambda b: "after") is None, "a tracker that hung stays off"
    release.set()
    tracker.close()
    assert "no answer within 0.5 s" in capsys.readouterr().err


def test_a_tracker_that_cannot_start_is_off_from_the_start(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> object:
        raise ImportError("libssl.so.3: cannot open shared object file")

    tracker = GuardedTracker(broken, "mlflow experiment 'e'")  # type: ignore[arg-type]
    assert tracker.off and tracker.backend is None and tracker.call(lambda b: 1) is None
    tracker.close()
    assert capsys.readouterr().err.count("warning:") == 1


def test_a_spec_names_the_experiment_or_takes_the_sweeps() -> None:
    spec = parse_log_section({"tracker": "wandb", "project": "runs", "entity": "team", "tags": {"a": 1}})
    assert spec == TrackerSpec(kind="wandb", experiment="runs", entity="team", tags={"a": "1"})
    assert TrackerSpec(kind="mlflow").named("sweep").experiment == "sweep"
    assert spec.named("other").experiment == "runs"


def test_a_training_command_is_told_its_trials_run(tmp_path: Path, text_file: Path) -> None:
    from mutransfer.sweep.run.command_trainer import CommandTrainer
    from mutransfer.sweep.spec.sweep_spec import load_spec
    from mutransfer.tracking.session import RUN_ID_ENV, TrackerHandle

    spec = load_spec(str(write_tracked_spec(tmp_path, text_file)))
    wandb_handle = TrackerHandle(TrackerSpec(kind="wandb", experiment="p", entity="team"), "sweep-1a2b3c4d", tmp_path)
    assert CommandTrainer(spec, tmp_path, "x", tracker=wandb_handle).tracker_env("r1") == {
        RUN_ID_ENV: "r1", "WANDB_RUN_GROUP": "sweep-1a2b3c4d", "WANDB_PROJECT": "p", "WANDB_ENTITY": "team"}
    mlflow_handle = TrackerHandle(TrackerSpec(kind="mlflow", uri="http://127.0.0.1:5000", experiment="e"), "p1",
                                  tmp_path)
    assert CommandTrainer(spec, tmp_path, "x", tracker=mlflow_handle).tracker_env("r2") == {
        RUN_ID_ENV: "r2", "MLFLOW_RUN_ID": "r2", "MLFLOW_EXPERIMENT_NAME": "e",
        "MLFLOW_TRACKING_URI": "http://127.0.0.1:5000"}
    assert CommandTrainer(spec, tmp_path, "x").tracker_env("r3") == {}
