"""A sweep logged to a real ``mlflow server`` on 127.0.0.1: killed with SIGKILL mid-sweep, resumed with two
workers, and still one finished run per trial, one parent, and the same answer read back over HTTP; a sweep with
grid, extension and probe trials spells each param value one way and prints none of MLflow's own URL lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import mlflow
import pandas as pd
import pytest

from conftest import load_script, wait_for
from mutransfer.tracking.records import param_text
from tracked_sweep import GRID, answer, write_tracked_spec


CLI = [sys.executable, "-m", "mutransfer"]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mlflow server`` on a free port of 127.0.0.1 (a SQLite store, artifacts served from a folder), as
    ``scripts/mlflow_screenshot.py`` starts it, in a process group of its own that is ended, all of it,
    afterwards."""
    script = load_script("mlflow_screenshot")
    proc, url = script.start_server(tmp_path_factory.mktemp("mlflow-server"))
    try:
        yield url
    finally:
        script.stop_server(proc)
        wait_for(lambda: not group_alive(proc.pid), 20, "the server's processes to end")


def trial_runs(url: str, experiment: str) -> list["mlflow.entities.Run"]:
    client = mlflow.tracking.MlflowClient(url)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    return [r for r in client.search_runs([found.experiment_id], max_results=1000)
            if r.data.tags.get("mutransfer.kind") == "trial"]


@pytest.mark.slow
def test_sigkill_then_resume_with_two_workers_leaves_one_finished_run_per_trial(
        server: str, tmp_path: Path, text_file: Path) -> None:
    spec = write_tracked_spec(tmp_path, text_file, log={"tracker": "mlflow", "uri": server}, steps=150,
                              name="killed")
    run_dir = tmp_path / "run"
    first = subprocess.Popen([*CLI, "sweep", str(spec), "--out", str(run_dir), "--threads", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def finished_and_one_running() -> bool:
        runs = trial_runs(server, "killed")
        return (sum(r.info.status == "FINISHED" for r in runs) >= 2
                and any(r.info.status == "RUNNING" for r in runs))

    wait_for(finished_and_one_running, 240, "two finished trials and one training")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    wait_for(lambda: not group_alive(first.pid), 20, "the killed sweep's processes to end")
    orphaned = [r.info.run_id for r in trial_runs(server, "killed") if r.info.status == "RUNNING"]
    assert orphaned, "the kill left a trial's run open"

    resumed = subprocess.run([*CLI, "sweep", str(spec), "--out", str(run_dir), "--workers", "2", "--threads", "1"],
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "warning" not in resumed.stderr, resumed.stderr[-2000:]

    runs = trial_runs(server, "killed")
    finished = [r for r in runs if r.info.status == "FINISHED"]
    keys = [r.data.tags["mutransfer.trial_key"] for r in finished]
    assert len(finished) == GRID and len(set(keys)) == GRID, "one finished run per trial, none twice"
    by_id = {r.info.run_id: r for r in runs}
    for run_id in orphaned:
        assert by_id[run_id].info.status == "KILLED"
        retry = [r for r in finished if r.data.tags.get("mutransfer.retry_of") == run_id]
        assert len(retry) == 1 and retry[0].data.tags["mutransfer.trial_key"] == \
            by_id[run_id].data.tags["mutransfer.trial_key"]
    parents = {r.data.tags["mlflow.parentRunId"] for r in runs}
    assert parents == {json.loads((run_dir / "tracker.json").read_text())[0]["parent"]}

    back = subprocess.run([*CLI, "import", "--mlflow", server, "--experiment", "killed", "--out",
                           str(tmp_path / "back")], capture_output=True, text=True, timeout=300)
    assert back.returncode == 0, back.stderr[-2000:]
    assert answer(tmp_path / "back") == answer(run_dir)


@pytest.mark.slow
def test_two_machines_sharing_postgres_log_into_one_parent(server: str, pg_url: str, tmp_path: Path,
                                                            text_file: Path) -> None:
    spec = write_tracked_spec(tmp_path, text_file, log={"tracker": "mlflow", "uri": server}, name="shared")
    study = f"s{os.getpid()}{int(time.time())}"
    procs = [subprocess.Popen([*CLI, "sweep", str(spec), "--storage", pg_url, "--study", study, "--heartbeat", "1",
                               "--threads", "1", "--out", str(tmp_path / f"machine{i}")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(2)]
    errors = [proc.communicate(timeout=600)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err[-2000:] for err in errors]
    recorded = {json.loads((tmp_path / f"machine{i}" / "tracker.json").read_text())[0]["parent"] for i in range(2)}
    client = mlflow.tracking.MlflowClient(server)
    experiment = client.get_experiment_by_name(study)
    parents = [r for r in client.search_runs([experiment.experiment_id], max_results=1000)
               if r.data.tags.get("mutransfer.kind") == "sweep"]
    assert len(recorded) == 1 and [r.info.run_id for r in parents] == list(recorded)
    finished = [r for r in trial_runs(server, study) if r.info.status == "FINISHED"]
    assert len(finished) == GRID and {r.data.tags["mlflow.parentRunId"] for r in finished} == recorded


@pytest.mark.slow
def test_grid_extension_and_probe_trials_spell_each_value_once_and_mlflow_prints_no_urls(
        server: str, tmp_path: Path, text_file: Path) -> None:
    spec = write_tracked_spec(tmp_path, text_file, log={"tracker": "mlflow", "uri": server}, name="spelled",
                              widths=(32,), log2=(-12, -8), search={"extend": True, "noise_seeds": 1})
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"}
    result = subprocess.run([*CLI, "sweep", str(spec), "--out", str(run_dir), "--threads", "1"], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "warning" not in result.stderr, result.stderr[-2000:]
    urls = [line for line in result.stdout.splitlines() if "View run" in line or "View experiment" in line]
    assert urls == [], urls[:4]
    assert sum(" · ok · " in line for line in result.stdout.splitlines()) == 8, result.stdout

    table = pd.read_csv(run_dir / "trials.csv")
    grid = table[(table.seed == 0) & (table.log2_lr <= -8)]
    extension = table[(table.seed == 0) & (table.log2_lr > -8)]
    probes = table[table.seed == 1]
    assert (len(grid), len(extension), len(probes)) == (3, 2, 3), "the grid's optimum at its high edge: extended"
    assert set(grid.log2_lr) & set(probes.log2_lr) == {-8.0}, "a probe trains a grid point again"

    runs = trial_runs(server, "spelled")
    assert len(runs) == len(table)
    spellings: dict[tuple[str, float], set[str]] = {}
    for run in runs:
        for name, text in run.data.params.items():
            try:
                value = float(text)
            except ValueError:
                continue
            spellings.setdefault((name, value), set()).add(text)
            assert text == param_text(value), (name, text)
    assert {key: texts for key, texts in spellings.items() if len(texts) > 1} == {}
    assert spellings[("log2_lr", -8.0)] == {"-8"} and spellings[("lr", 2.0 ** -10)] == {"0.0009765625"}

    client = mlflow.tracking.MlflowClient(server)
    experiment = client.get_experiment_by_name("spelled").experiment_id
    found = client.search_runs([experiment], filter_string="params.log2_lr = '-8'")
    assert sorted(int(r.data.params["seed"]) for r in found) == [0, 1]
