"""Sweeps that survive: PostgreSQL across processes, SIGKILL and resume, SIGINT, determinism."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml
from optuna.trial import TrialState

from conftest import FaultTally, no_loss, wait_for
from mutransfer.sweep.store.storage import open_storage
from mutransfer.sweep.store.studies import prefixed_studies

CLI = [sys.executable, "-m", "mutransfer"]


def write_spec(tmp_path: Path, text_file: Path, steps: int = 8, name: str = "rel") -> Path:
    spec = {"name": name,
            "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                    "search": {"log2_min": -7, "log2_max": -1}}},
            "widths": [32, 64], "search": {"step": 1, "extend": False, "noise_seeds": 0},
            "overrides": ["model.depth=1", "parametrization.base_width=32", f"train.steps={steps}",
                          "train.batch_size=4", "train.seq_len=32", "train.eval_every=0", "train.eval_batches=2",
                          "data=text", f"data.path={text_file}"]}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


GRID = 7 * 2  # 7 learning rates × 2 widths


def completed(storage_url: str | None, run_dir: Path, prefix: str) -> list[optuna.trial.FrozenTrial]:
    storage = open_storage(storage_url, run_dir)
    return [t for name in prefixed_studies(storage, prefix)
            for t in optuna.load_study(study_name=name, storage=storage).get_trials()
            if t.state == TrialState.COMPLETE]


def finished_points(trials: list[optuna.trial.FrozenTrial]) -> list[tuple[int, float]]:
    return [(t.user_attrs["width"], t.params["log2_lr"]) for t in trials]


def one_row_per_point(trials: pd.DataFrame) -> None:
    done = trials[trials["status"].isin(["ok", "diverged"])]
    assert len(done) == GRID and not done.duplicated(["setup", "width", "log2_lr"]).any()


@pytest.mark.slow
def test_two_machines_share_postgres_and_train_each_point_once(pg_url: str, tmp_path: Path, text_file: Path,
                                                               fault_tally: FaultTally) -> None:
    spec = write_spec(tmp_path, text_file)
    study = f"t{uuid.uuid4().hex[:8]}"
    procs = [subprocess.Popen([*CLI, "sweep", str(spec), "--storage", pg_url, "--study", study, "--heartbeat", "1",
                               "--out", str(tmp_path / f"m{i}")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for i in range(2)]
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err[-2000:] for err in errors]
    assert fault_tally(GRID, finished_points(completed(pg_url, tmp_path, study)), errors) == no_loss(GRID)
    out = tmp_path / "exported"
    export = subprocess.run([*CLI, "export", "--storage", pg_url, "--study", study, "--out", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert export.returncode == 0, export.stderr
    one_row_per_point(pd.read_csv(out / "trials.csv"))
    assert (out / "summary.json").is_file() and (out / "transfer.png").is_file()
    transfer = subprocess.run([*CLI, "transfer", "--width", "256", "--from", str(out)], capture_output=True, text=True)
    assert transfer.returncode == 0, transfer.stderr


@pytest.mark.slow
def test_killed_worker_trial_is_finished_by_the_other(pg_url: str, tmp_path: Path, text_file: Path,
                                                      fault_tally: FaultTally) -> None:
    spec = write_spec(tmp_path, text_file, steps=150)
    study = f"k{uuid.uuid4().hex[:8]}"
    command = [*CLI, "sweep", str(spec), "--storage", pg_url, "--study", study, "--heartbeat", "1", "--threads", "1"]
    victim = subprocess.Popen([*command, "--out", str(tmp_path / "a")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    storage = open_storage(pg_url, tmp_path)

    def claimed_by(pid: int, states: tuple[TrialState, ...]) -> list[tuple[str, int]]:
        return [(name, t.number) for name in prefixed_studies(storage, study)
                for t in optuna.load_study(study_name=name, storage=storage).get_trials()
                if t.state in states and t.user_attrs.get("pid") == pid]

    wait_for(lambda: claimed_by(victim.pid, (TrialState.RUNNING,)), 120, "the first worker to start a trial")
    survivor = subprocess.Popen([*command, "--out", str(tmp_path / "b")], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    wait_for(lambda: claimed_by(survivor.pid, tuple(TrialState)), 120, "the second worker to claim a trial")
    # Kill the first worker while it holds a trial: between two trials it would hold none.
    wait_for(lambda: claimed_by(victim.pid, (TrialState.RUNNING,)), 120, "the first worker to hold a trial")
    victim.kill()
    victim.wait()
    orphaned = claimed_by(victim.pid, (TrialState.RUNNING,))
    assert orphaned, "the first worker died holding no trial; the test needs it to hold one"
    _, err = survivor.communicate(timeout=600)
    assert survivor.returncode == 0, err[-2000:]
    done = completed(pg_url, tmp_path, study)
    assert fault_tally(GRID, finished_points(done), [err]) == no_loss(GRID)
    points = set(finished_points(done))
    trials = {(name, t.number): t for name in prefixed_studies(storage, study)
              for t in optuna.load_study(study_name=name, storage=storage).get_trials()}
    assert [trials[key].state for key in orphaned] == [TrialState.FAIL] * len(orphaned), \
        "the killed worker's trial should be marked failed"
    assert {(trials[key].user_attrs["width"], trials[key].params["log2_lr"]) for key in orphaned} <= points


@pytest.mark.slow
def test_sigkill_then_resume_finishes_without_retraining(tmp_path: Path, text_file: Path,
                                                        fault_tally: FaultTally) -> None:
    spec = write_spec(tmp_path, text_file, steps=60)
    out = tmp_path / "run"
    command = [*CLI, "sweep", str(spec), "--out", str(out), "--workers", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: (out / "optuna.journal").exists() and len(completed(None, out, "rel")) >= 3, 180,
             "three finished trials")
    proc.kill()
    proc.wait()
    time.sleep(0.5)
    before = {(t.user_attrs["width"], t.params["log2_lr"]): (t.number, t.value) for t in completed(None, out, "rel")}
    assert 3 <= len(before) < GRID
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    one_row_per_point(pd.read_csv(out / "trials.csv"))
    after = completed(None, out, "rel")
    assert fault_tally(GRID, finished_points(after), [resumed.stderr]) == no_loss(GRID)
    by_point = {(t.user_attrs["width"], t.params["log2_lr"]): (t.number, t.value) for t in after}
    for point, kept in before.items():
        assert by_point[point] == kept


@pytest.mark.slow
@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_interrupted_sweep_stops_cleanly_and_resumes(tmp_path: Path, text_file: Path, sent: int, code: int,
                                                     fault_tally: FaultTally) -> None:
    """Ctrl-C (130) and SIGTERM (143, e.g. a scheduler's kill) sent to the sweep process alone: the workers
    stop, their running trials are marked for a re-run, the tables are written; the rerun finishes the rest.
    Trials long enough (200 steps) that the signal lands mid-sweep even when the test shares a core."""
    spec = write_spec(tmp_path, text_file, steps=200)
    out = tmp_path / "run"
    command = [*CLI, "sweep", str(spec), "--out", str(out), "--workers", "2"]
    # SIGTERM: started with `&` (SIGINT ignored), as by nohup; SIGINT: a foreground run that Ctrl-C reaches, even
    # when the test itself was started in the background (which leaves SIGINT ignored for its children)
    disposition = signal.SIG_IGN if sent == signal.SIGTERM else signal.SIG_DFL
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, disposition))
    wait_for(lambda: (out / "optuna.journal").exists() and len(completed(None, out, "rel")) >= 1, 180,
             "a finished trial")
    proc.send_signal(sent)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err
    partial = pd.read_csv(out / "trials.csv")
    assert 1 <= (partial["status"] == "ok").sum() < GRID
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    one_row_per_point(pd.read_csv(out / "trials.csv"))
    assert fault_tally(GRID, finished_points(completed(None, out, "rel")), [err, resumed.stderr]) == no_loss(GRID)


@pytest.mark.slow
def test_two_workers_reproduce_one_worker_bit_for_bit(tmp_path: Path, text_file: Path) -> None:
    spec = write_spec(tmp_path, text_file)
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        run = subprocess.run([*CLI, "sweep", str(spec), "--out", str(out), "--workers", str(workers), "--threads", "1"],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        tables.append(pd.read_csv(out / "trials.csv").set_index(["width", "log2_lr"])["val_loss"].sort_index())
    pd.testing.assert_series_equal(tables[0], tables[1], check_exact=True)
