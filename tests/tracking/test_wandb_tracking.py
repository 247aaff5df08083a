"""A sweep logged to Weights & Biases offline (``WANDB_MODE=offline``), read back from what the library wrote:
a run per trial in the sweep's group, the answer on its ``sweep`` run, the round trip through ``mutransfer import
--wandb``; and W&B's service process ends with the process that started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import wandb
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.errors import UserError
from tracked_sweep import GRID, answer, write_tracked_spec

from mutransfer.tracking.wandb_offline import read_offline_runs


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> Path:
    """A sweep run with ``--log wandb`` offline, its learning rates stacked four at a time; its run directory
    (W&B writes under its ``wandb/``)."""
    folder = tmp_path_factory.mktemp("wandb")
    spec = write_tracked_spec(folder, text_file, log={"tracker": "wandb", "project": "lr-sweeps"}, batch_trials=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WANDB_MODE", "offline")
        patch.setenv("WANDB_SILENT", "true")
        patch.delenv("WANDB_DIR", raising=False)
        result = invoke(CliRunner(), "sweep", str(spec), "--out", str(folder / "run"), "--threads", "1",
                        "--log", "wandb")
        wandb.teardown()
    assert result.exit_code == 0, result.output
    return folder / "run"


def test_each_trial_is_a_finished_run_in_the_sweeps_group(logged: Path) -> None:
    runs = read_offline_runs(logged / "wandb")
    group = json.loads((logged / "tracker.json").read_text())[0]["parent"]
    trials = [r for r in runs if r.job_type == "trial"]
    sweeps = [r for r in runs if r.job_type == "sweep"]
    assert len(trials) == GRID and len(sweeps) == 1 and sweeps[0].run_id == group
    assert {r.group for r in runs} == {group} and {r.exit_code for r in runs} == {0}
    table = pd.read_csv(logged / "trials.csv")
    assert set(table["batch_trials"]) == {4}
    by_point = {(r.config["width"], r.config["log2_lr"]): r for r in trials}
    for row in table.itertuples():
        run = by_point[(row.width, row.log2_lr)]
        assert run.config["setup"] == row.setup and run.config["lr"] == pytest.approx(row.lr, rel=1e-12)
        assert run.summary["mutransfer.status"] == row.status
        if row.status == "ok":
            assert run.summary["loss"] == pytest.approx(row.val_loss, rel=1e-9)
            steps = [h["step"] for h in run.history if "train_loss" in h]
            assert steps == list(range(1, 13))


def test_the_sweep_run_holds_the_answer(logged: Path) -> None:
    sweep = next(r for r in read_offline_runs(logged / "wandb") if r.job_type == "sweep")
    label, verdict, *_ = answer(logged)[0]
    assert sweep.summary[f"{label}.verdict"] == verdict
    assert sweep.summary["trials"] == GRID
    assert (sweep.folder / "files" / "summary.json").is_file()
    assert any(key.startswith("figures/transfer") for key in sweep.summary)


def test_the_offline_runs_import_back_to_the_same_answer(logged: Path, tmp_path: Path) -> None:
    result = invoke(CliRunner(), "import", "--wandb", str(logged / "wandb"), "--out", str(tmp_path / "back"))
    assert result.exit_code == 0, result.output
    assert answer(tmp_path / "back") == answer(logged)


def test_a_log_cut_off_mid_record_reads_up_to_the_cut(logged: Path, tmp_path: Path) -> None:
    from mutransfer.tracking.wandb_offline import records

    log = next((logged / "wandb").glob("offline-run-*/run-*.wandb"))
    whole = list(records(log))
    cut = tmp_path / "cut.wandb"
    cut.write_bytes(log.read_bytes()[:log.stat().st_size * 2 // 3])
    partial = list(records(cut))
    assert 0 < len(partial) < len(whole) and partial == whole[:len(partial)]
    (tmp_path / "other.wandb").write_text("not a log")
    with pytest.raises(UserError, match="is not a W&B transaction log"):
        list(records(tmp_path / "other.wandb"))


@pytest.mark.slow
def test_sigkill_then_resume_with_two_workers_keeps_one_run_per_trial(tmp_path: Path, text_file: Path) -> None:
    spec = write_tracked_spec(tmp_path, text_file, log={"tracker": "wandb", "project": "killed"}, steps=150,
                              name="killed")
    run_dir = tmp_path / "run"
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("WANDB_DIR", None)
    cli = [sys.executable, "-m", "mutransfer", "sweep", str(spec), "--out", str(run_dir), "--threads", "1"]
    first = subprocess.Popen(cli, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(pd.read_csv(run_dir / "trials.csv")
                                               if (run_dir / "trials.csv").exists() else []) < 2:
        time.sleep(0.3)
    time.sleep(1.0)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    resumed = subprocess.run([*cli, "--workers", "2"], env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    runs = read_offline_runs(run_dir / "wandb")
    trials = [r for r in runs if r.job_type == "trial"]
    assert len(trials) == GRID and {r.exit_code for r in trials} == {0}, "one finished run per trial"
    folders = [p for p in (run_dir / "wandb").glob("offline-run-*") if p.is_dir()]
    assert len(folders) > GRID + 1, "the killed trial's run was resumed under its own id, in a new folder"
    table = pd.read_csv(run_dir / "trials.csv")
    trained = table[~table["status"].isin(["interrupted", "abandoned"])]
    assert len(trained) < len(table), "the kill left a trial to train again"
    assert sorted((r.config["width"], r.config["log2_lr"]) for r in trials) == \
        sorted(zip(trained["width"], trained["log2_lr"]))
