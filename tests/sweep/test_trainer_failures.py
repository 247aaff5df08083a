"""Failures of a user's trainer that speak: a misspelt script refused before any trial, the same failure repeated
stopping the sweep and every process of it (``trainer.max_failures``), ``--retry-failed`` on resume, failures in
the final table, and a sweep whose every trial failed naming the failure rather than the grid."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke, process_alive
from mutransfer.sweep.spec.trainer import script_words

TRAINER = '''
import json, math, os, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
out, x = args["--out"], math.log2(float(args["--lr"]))
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(out, "pid"), "w") as f:
    f.write(str(os.getpid()))
if os.path.exists(os.path.join(here, "hang")):
    try:
        os.close(os.open(os.path.join(here, "hang-taken"), os.O_CREAT | os.O_EXCL))
        time.sleep(600)  # the first trial hangs: a child still running when the sweep stops
    except FileExistsError:
        pass
if os.path.exists(os.path.join(here, "broken")):
    print("loading data.bin", file=sys.stderr)
    sys.exit("python: can't open file 'data.bin'")
if x >= -4:
    sys.exit("RuntimeError: CUDA error: out of memory")
with open(os.path.join(out, "result.json"), "w") as f:
    json.dump({"val_loss": 2.0 + 0.1 * (x + 4.6) ** 2}, f)
'''
STOP_LINE = "stopped: the last 3 trials failed the same way: python: can't open file 'data.bin'"


def _spec(folder: Path, script: str = "fake_trainer.py", **trainer: object) -> Path:
    (folder / "fake_trainer.py").write_text(TRAINER)
    spec = {"name": "fails", "trainer": {"command": [sys.executable, script, "--lr", "{lr}", "--out", "{trial_dir}"],
                                         **trainer},
            "setups": {"a": []}, "widths": [32], "seeds": [0],
            "search": {"log2_min": -7, "log2_max": -4, "step": 1, "noise_seeds": 0, "extend": False}}
    path = folder / "fails.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _processes() -> list[tuple[int, int, str]]:
    """(pid, session id, command line) of every process on the machine."""
    listing = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True, check=True).stdout
    rows = [line.split(None, 2) for line in listing.splitlines() if line.strip()]
    return [(int(row[0]), int(row[1]), row[2] if len(row) > 2 else "") for row in rows]


def test_a_misspelt_script_is_refused_before_any_trial(runner: CliRunner, tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(_spec(tmp_path, "fake_trian.py")), "--out", str(run))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1
    assert f"trainer.command: fake_trian.py is not found (looked for {tmp_path / 'fake_trian.py'})" in line
    assert "did you mean 'fake_trainer.py'?" in line
    assert not run.exists()


def test_only_the_words_that_name_a_script_are_checked() -> None:
    words = ["torchrun", "--nproc_per_node", "2", "train.py", "--config=c.py", "{trial_dir}/x.py", "-c", "y.py",
             "sub/run.sh"]
    assert script_words(words) == [3, 8]
    assert script_words(["python", "-m", "pkg.main.py", "data.bin"]) == []


@pytest.mark.slow
def test_the_same_failure_repeated_stops_the_sweep_and_every_process(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    (tmp_path / "hang").touch()
    (tmp_path / "broken").touch()
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "mutransfer", "sweep", str(spec), "--out", str(run), "--workers",
                             "2", "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, output
    assert STOP_LINE in output and "--retry-failed" in output
    hung = [int(p.read_text()) for p in (run / "trials").glob("*/trial-*/pid")]
    deadline = time.monotonic() + 10
    while any(sid == proc.pid or str(tmp_path) in args for _, sid, args in _processes()) and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [row for row in _processes() if row[1] == proc.pid or str(tmp_path) in row[2]]
    assert hung and not any(process_alive(pid) for pid in hung)
    trials = pd.read_csv(run / "trials.csv")
    assert (trials["status"] == "failed").sum() == 3 and (trials["status"] == "interrupted").sum() == 1
    assert set(trials["message"].dropna()) == {"the command exited with code 1: loading data.bin | python: can't "
                                               "open file 'data.bin'"}


def test_every_trial_failed_names_the_failure_and_retry_failed_trains_them_again(runner: CliRunner,
                                                                                tmp_path: Path) -> None:
    spec = _spec(tmp_path, max_failures=10)
    (tmp_path / "broken").touch()
    run = tmp_path / "run"
    first = invoke(runner, "sweep", str(spec), "--out", str(run))
    assert first.exit_code == 1, first.output
    assert ("every trial failed (4 of 4), 4 with: the command exited with code 1: loading data.bin | python: can't "
            "open file 'data.bin'") in first.output
    assert "lower the grid" not in first.output and "mutransfer transfer" not in first.output
    assert "all 4 failed" in first.output and "--retry-failed" in first.output
    (tmp_path / "broken").unlink()
    again = invoke(runner, "sweep", str(spec), "--out", str(run))
    assert again.exit_code == 1 and "already done" in again.output  # failed trials are not retried unasked
    assert len(pd.read_csv(run / "trials.csv")) == 4
    retried = invoke(runner, "sweep", str(spec), "--out", str(run), "--retry-failed")
    assert retried.exit_code == 0, retried.output
    trials = pd.read_csv(run / "trials.csv")
    assert len(trials) == 8 and (trials["status"] == "ok").sum() == 3
    assert "past_finished:high, 1 failed" in retried.output  # the trial at 2^-4 crashed again
    point = json.loads((run / "summary.json").read_text())["keys"]["optimizer.lr"]["setups"]["a"]["axes"]["width"][
        "points"]["32"]
    assert point["failed"] == 1 and point["x_star"] > -5 and "past_finished:high" in point["flags"]


@pytest.mark.parametrize(("words", "says"), [
    (["trainer.max_failures=0"], "trainer.max_failures=0 must be an integer >= 1"),
    (["setups={a: {trainer: {max_failures: 5}}}"], "setups.a.trainer.max_failures: the limit is the sweep's"),
])
def test_max_failures_is_refused_where_it_cannot_work(runner: CliRunner, tmp_path: Path, words: list[str],
                                                      says: str) -> None:
    result = invoke(runner, "sweep", str(_spec(tmp_path)), *words, "--dry-run", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and says in result.output, result.output
