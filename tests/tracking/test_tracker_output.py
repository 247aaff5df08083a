"""What a tracker is given and what the sweep prints around it: one spelling per param value (MLflow's text and
W&B's config alike), MLflow's own URL lines switched off only while a run ends, a file store's refusal and a
library's long message each in one whole line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import mlflow
import pytest

from mutransfer.tracking.guard import REASON_CHARS, GuardedTracker, reason
from mutransfer.tracking.mlflow_backend import QUIET_ENV, MlflowBackend
from mutransfer.tracking.records import TrialEnd, TrialInfo, param_text, param_value
from mutransfer.tracking.session import connect
from mutransfer.tracking.spec import TrackerSpec
from mutransfer.tracking.wandb_backend import WandbBackend

TAIL = "; the sweep goes on without logging to it (its own files keep every result)"


@pytest.mark.parametrize("value, text", [
    (-3, "-3"), (-3.0, "-3"), (0.0, "0"), (-0.0, "0"), (64, "64"), (64.0, "64"), (-3.5, "-3.5"),
    (2.0 ** -10, "0.0009765625"), (1e-05, "1e-05"), (0.1, "0.1"), (2.0 ** 53, "9007199254740992.0"),
    (True, "True"), ("mup_muon", "mup_muon"),
])
def test_each_param_value_has_one_spelling(value: Any, text: str) -> None:
    assert param_text(value) == text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        assert float(param_text(value)) == value, "the text reads back as the same number"


def test_a_grid_trials_value_and_a_probes_are_one_param_in_mlflow(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    backend = MlflowBackend(TrackerSpec(kind="mlflow", uri=uri, experiment="spelled"))
    parent = backend.open_sweep("spelled", None, "")
    grid = backend.start_trial(parent, TrialInfo("s/-3/s0", "grid", {"log2_lr": -3, "lr": 0.125, "seed": 0}))
    probe = backend.start_trial(parent, TrialInfo("s/-3/s1", "probe", {"log2_lr": -3.0, "lr": 0.125, "seed": 1}))
    client = mlflow.tracking.MlflowClient(uri)
    assert client.get_run(grid).data.params["log2_lr"] == client.get_run(probe).data.params["log2_lr"] == "-3"
    found = client.search_runs([backend.experiment], filter_string="params.log2_lr = '-3'")
    assert {r.info.run_id for r in found} == {grid, probe}


def test_wandb_is_given_the_same_numbers(tmp_path: Path) -> None:
    class FakeWandb:
        def __init__(self) -> None:
            self.configs: list[dict[str, Any]] = []

        def Settings(self, **settings: Any) -> dict[str, Any]:  # noqa: N802 — W&B's own name
            return settings

        def init(self, **kwargs: Any) -> object:
            self.configs.append(kwargs["config"])
            return object()

    backend = WandbBackend(TrackerSpec(kind="wandb", experiment="p"), tmp_path)
    backend.wandb = FakeWandb()
    backend.start_trial("g", TrialInfo("s/-3/s1", "probe", {"log2_lr": -3.0, "lr": 0.125, "width": 64.0}))
    config = backend.wandb.configs[0]
    assert config["log2_lr"] == -3 and type(config["log2_lr"]) is int and type(config["width"]) is int
    assert config["lr"] == 0.125


class RecordingClient:
    """Stands in for ``MlflowClient``: what MLflow's URL switch said each time a run was ended."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def log_batch(self, run: str, metrics: Any = (), params: Any = ()) -> None:
        pass

    def set_tag(self, run: str, name: str, value: str) -> None:
        pass

    def set_terminated(self, run: str, status: str) -> None:
        self.seen.append(os.environ.get(QUIET_ENV))


def ended_runs_see(setting: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str | None], str | None]:
    if setting is None:
        monkeypatch.delenv(QUIET_ENV, raising=False)
    else:
        monkeypatch.setenv(QUIET_ENV, setting)
    backend = MlflowBackend.__new__(MlflowBackend)
    backend.client = RecordingClient()  # type: ignore[assignment]
    backend.end_trial("r1", TrialEnd(status="ok", loss=2.5, step=12))
    backend.end_trial("r2", TrialEnd(status="failed", step=3))
    return backend.client.seen, os.environ.get(QUIET_ENV)  # type: ignore[attr-defined]


def test_mlflows_url_lines_are_off_while_a_run_ends_and_the_environment_is_left_as_it_was(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert ended_runs_see(None, monkeypatch) == (["true", "true"], None)
    assert ended_runs_see("false", monkeypatch) == (["false", "false"], "false"), "the user's own setting wins"


def test_a_file_store_from_the_environment_is_refused_in_one_whole_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracker = connect(TrackerSpec(kind="mlflow", experiment="spelled"), tmp_path)
    assert tracker.off and tracker.backend is None
    tracker.close()
    assert capsys.readouterr().err.splitlines() == [
        f"warning: mlflow experiment 'spelled': MLflow 3's file store {uri} takes no new experiments or runs "
        "(unless MLFLOW_ALLOW_FILE_STORE=true); log to MLflow's local database instead: "
        f"MLFLOW_TRACKING_URI=sqlite:///mlflow.db, or log.uri: sqlite:///mlflow.db in the spec{TAIL}"]
    assert not (tmp_path / "mlruns").exists()


def test_a_librarys_long_message_is_cut_at_a_word(capsys: pytest.CaptureFixture[str]) -> None:
    words = "The filesystem tracking backend is in maintenance mode and will not receive further updates. " * 8
    message = reason(RuntimeError(f"{words}\nsecond line"))
    kept = message.removeprefix("RuntimeError: ").removesuffix(" …")
    assert message.endswith(" …") and len(message) <= REASON_CHARS + 2 and "second line" not in message
    assert words.startswith(kept) and words[len(kept)] == " ", "cut between two words"

    def broken() -> object:
        raise RuntimeError(words)

    GuardedTracker(broken, "mlflow experiment 'e'").close()  # type: ignore[arg-type]
    assert capsys.readouterr().err.splitlines() == [f"warning: mlflow experiment 'e': {message}{TAIL}"]
