"""A storage and a run directory as input: storage passwords never printed or written (and --storage from
MUTRANSFER_STORAGE), and a run directory another sweep is using, shared or refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import HARD_POINTS, FaultTally, completed_points, hard_spec, no_loss
from mutransfer.errors import redact

CLI = [sys.executable, "-m", "mutransfer"]

PASSWORD = "Zq7-not-a-real-password"


def test_redact_hides_every_url_password() -> None:
    text = (f"postgresql://u:{PASSWORD}@h:5432/db, postgresql+psycopg://me:p%40ss@h/db, "
            "sqlite:///tmp/x.db, postgresql://h/db, mail a@b.c")
    out = redact(text)
    assert PASSWORD not in out and "p%40ss" not in out
    assert "postgresql://u:***@h:5432/db" in out and "postgresql+psycopg://me:***@h/db" in out
    assert "sqlite:///tmp/x.db" in out and "postgresql://h/db" in out and "a@b.c" in out


@pytest.mark.parametrize("via_env", [False, True], ids=["--storage", "MUTRANSFER_STORAGE"])
def test_an_unreachable_database_error_never_shows_the_password(tmp_path: Path, via_env: bool) -> None:
    url = f"postgresql://someone:{PASSWORD}@127.0.0.1:1/db"
    env = {**os.environ, "MUTRANSFER_STORAGE": url} if via_env else {k: v for k, v in os.environ.items()
                                                                       if k != "MUTRANSFER_STORAGE"}
    args = [*CLI, "sweep", "smoke", "--out", str(tmp_path / "run")] + ([] if via_env else ["--storage", url])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr
    assert "postgresql://someone:***@127.0.0.1:1/db" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_database_sweep_writes_and_prints_no_password(tmp_path: Path, text_file: Path, pg_url: str) -> None:
    """A real sweep on PostgreSQL (URL from MUTRANSFER_STORAGE): no output, file or dry run holds the password."""
    password = pg_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    secret = f":{password}@"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": f"sec{uuid.uuid4().hex[:8]}",
        "setups": {"mup_muon": {"overrides": ["optimizer=muon"], "search": {"log2_min": -5, "log2_max": -3}}},
        "widths": [32, 64], "search": {"step": 1, "noise_seeds": 0, "extend": False},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=2",
                      "train.seq_len=16", "train.eval_every=0", "train.eval_batches=1", "data=text",
                      f"data.path={text_file}"]}))
    env = {**os.environ, "MUTRANSFER_STORAGE": pg_url}
    out = tmp_path / "run"
    printed = ""
    for args in (["sweep", str(spec), "--out", str(out), "--dry-run"], ["sweep", str(spec), "--out", str(out)],
                 ["transfer", "--width", "256", "--from", str(out)],
                 ["verify", "--width", "64", "--from", str(out), "--factors", "0.5,1,2", "--dry-run"]):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        printed += proc.stdout + proc.stderr
    assert not (out / "optuna.journal").exists(), "the sweep should have used the database from the environment"
    assert secret not in printed
    written = [p for p in out.rglob("*") if p.is_file()]
    assert {"config.yaml", "trials.csv", "summary.json", "transfer_w256.yaml"} <= {p.name for p in written}
    for path in written:
        assert secret.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_two_sweeps_of_the_same_spec_on_one_directory_share_the_work(tmp_path: Path, text_file: Path,
                                                                     fault_tally: FaultTally) -> None:
    spec, out = hard_spec(tmp_path, text_file), tmp_path / "run"
    command = [*CLI, "sweep", str(spec), "--out", str(out), "--threads", "1"]
    procs = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    assert fault_tally(HARD_POINTS, completed_points(out / "optuna.journal"), errors) == no_loss(HARD_POINTS)
    trials = pd.read_csv(out / "trials.csv")
    assert len(trials) == HARD_POINTS and (trials["status"] == "ok").all()


@pytest.mark.slow
def test_a_second_sweep_of_another_spec_on_a_running_directory_is_refused(tmp_path: Path, text_file: Path) -> None:
    spec, out = hard_spec(tmp_path, text_file), tmp_path / "run"
    first = subprocess.Popen([*CLI, "sweep", str(spec), "--out", str(out), "--threads", "1", "train.steps=30"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "config.yaml").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    second = subprocess.run([*CLI, "sweep", str(spec), "--out", str(out), "train.steps=31"], capture_output=True,
                            text=True, timeout=120)
    assert second.returncode == 2 and "holds a different sweep" in second.stderr, second.stderr
    assert len(second.stderr.strip().splitlines()) == 1
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    assert len(pd.read_csv(out / "trials.csv")) == HARD_POINTS
