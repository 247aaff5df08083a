"""Trials run by the user's own training command (a spec's ``trainer`` section): the shipped shell and PyTorch
examples through real sweeps, what a result means, failures, retries, timeouts, Ctrl-C and resume, refusals,
the environment a child sees, bounded logs, the fingerprint, and the Python helpers a trainer calls."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke, process_alive, refused_in_one_line
from mutransfer.errors import UserError
from mutransfer.files import TRIAL_DIR_ENV
from mutransfer.sweep.run.child_process import BoundedLog
from mutransfer.sweep.run.command_trainer import child_environment
from mutransfer.sweep.spec.sweep_spec import load_spec, spec_dir
from mutransfer.sweep.plan.trial import sweep_record
from mutransfer.trainer_api import report, trial
from mutransfer.trial_io import read_progress, read_result, write_trial_values
from printed_numbers import missing_lines

TRAINERS = spec_dir() / "trainers"
FAKE_TRAINER = '''
import json, math, os, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
out, mode, lr = args["--out"], args.get("--mode", "ok"), float(args["--lr"])
with open(os.path.join(out, "pid"), "w") as f:
    f.write(str(os.getpid()))
count = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(out))), f"attempts-{mode}")
with open(count, "a") as f:
    f.write("x")
x = math.log2(lr)
if mode == "exit3":
    print("something went wrong", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(600)
if mode == "none":
    sys.exit(0)
if mode == "garbage":
    open(os.path.join(out, "result.json"), "w").write("{not json")
    sys.exit(0)
if mode == "noloss":
    open(os.path.join(out, "result.json"), "w").write(json.dumps({"steps": 5}))
    sys.exit(0)
if mode == "slow":
    time.sleep(float(args.get("--sleep", "30")))
block = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(out)))), "block")
while mode == "blocked" and os.path.exists(block):
    time.sleep(0.1)
loss = float("nan") if x >= -3 else 2.0 + 0.1 * (x + 5) ** 2
open(os.path.join(out, "result.json"), "w").write(json.dumps({"val_loss": loss, "curve": [[5, loss + 1], [10, loss]]}))
'''


def _spec(folder: Path, setups: dict, **extra: object) -> Path:
    (folder / "fake_trainer.py").write_text(FAKE_TRAINER)
    spec = {"name": "fake", "trainer": {"command": [sys.executable, "fake_trainer.py", "--lr", "{lr}", "--out",
                                                    "{trial_dir}"], "timeout": 60},
            "setups": setups, "widths": [32], "seeds": [0],
            "search": {"log2_min": -7, "log2_max": -3, "step": 1, "noise_seeds": 0, "extend": False}, **extra}
    path = folder / "fake.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_the_shell_example_sweeps_transfers_and_verifies(runner: CliRunner, tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = invoke(runner, "sweep", "shell_trainer", "--out", str(run), "widths=[32,64]", "seeds=[0]",
                    "search.noise_seeds=0")
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(run / "trials.csv")
    assert len(trials) == 2 * 7 and set(trials["status"]) == {"ok"}
    summary = json.loads((run / "summary.json").read_text())
    points = summary["keys"]["optimizer.lr"]["setups"]["synthetic"]["axes"]["width"]["points"]
    assert all(abs(p["x_star"] + 6) < 0.05 for p in points.values())
    folder = next((run / "trials").glob("*/trial-0"))
    assert {"trial.json", "result.json", "stdout.log", "stderr.log"} <= {p.name for p in folder.iterdir()}
    assert "width 32" in (folder / "stdout.log").read_text()
    result = invoke(runner, "transfer", "--width", "1024", "--from", str(run), "--out", str(tmp_path / "t.yaml"))
    assert result.exit_code == 0, result.output
    assert abs(math.log2(yaml.safe_load((tmp_path / "t.yaml").read_text())["lr"]) + 6) < 0.1
    result = invoke(runner, "verify", "--width", "128", "--from", str(run))
    assert result.exit_code == 0, result.output
    verify = json.loads((run / "verify.json").read_text())
    assert abs(verify["targets"][0]["measured"]["x_star"] + 6) < 0.1
    assert list((run / "trials").glob("verify-*"))  # the trainer ran at the target width


@pytest.mark.slow
def test_the_pytorch_example_applies_each_trials_plan(runner: CliRunner, tmp_path: Path) -> None:
    spec = yaml.safe_load((spec_dir() / "own_trainer.yaml").read_text())
    spec["trainer"].update(command=[sys.executable, "nanogpt_trainer.py"], cwd=str(TRAINERS))
    spec["model"]["factory_path"] = str(TRAINERS)
    spec["setups"] = {"mup_muon": ["parametrization=mup", "optimizer=muon"]}
    spec["search"] = {"log2_min": -6, "log2_max": -4, "step": 1, "noise_seeds": 0, "extend": False}
    spec["overrides"] = ["parametrization.base_width=32", "train.steps=6", "train.batch_size=4", "train.eval_every=3"]
    (tmp_path / "own.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(tmp_path / "own.yaml"), "--out", str(run))
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(run / "trials.csv")
    assert len(trials) == 6 and set(trials["status"]) == {"ok"} and set(trials["steps"]) == {6}
    curves = pd.read_csv(run / "curves.csv")
    assert set(curves.dropna(subset=["val_loss"])["step"]) == {3, 6}
    from mutransfer import Plan

    for width in (32, 64):
        folder = next(p for p in (run / "trials").glob(f"*.w{width}.*/trial-*"))
        plan = Plan.load(folder / "plan.yaml")
        values = json.loads((folder / "trial.json").read_text())
        assert plan.width == width and plan.lr == pytest.approx(values["lr"])
        assert {p.role for p in plan.params} == {"embedding", "readout", "gain", "hidden"}


@pytest.mark.slow
def test_failures_retries_timeouts_and_diverged_runs(runner: CliRunner, tmp_path: Path) -> None:
    modes = ("exit3", "none", "garbage", "noloss", "hang")
    setups = {mode: {"overrides": [], "trainer": {"args": ["--mode", mode]}} for mode in modes}
    setups["ok"] = []
    spec = _spec(tmp_path, setups)
    spec.write_text(spec.read_text().replace("timeout: 60", "timeout: 1\n  retries: 1\n  max_failures: 100"))
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(spec), "--out", str(run))
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(run / "trials.csv")
    status = trials.groupby("setup")["status"].agg(set)
    assert all(status[mode] == {"failed"} for mode in modes)
    assert status["ok"] == {"ok", "diverged"}  # log2 lr -3 writes NaN: diverged, as in the built-in loop
    message = trials.set_index(["setup", "log2_lr"])["message"]
    assert message[("exit3", -7.0)] == "the command exited with code 3 (after 2 tries): something went wrong"
    assert message[("none", -7.0)].endswith("result.json was not written (after 2 tries)")
    assert "is not JSON" in message[("garbage", -7.0)] and "lacks val_loss" in message[("noloss", -7.0)]
    assert message[("hang", -7.0)] == "timed out after 1 s (after 2 tries)"
    assert all(len((tmp_path / f"run/attempts-{mode}").read_text()) == 2 * 5 for mode in modes)  # 5 points, 2 tries
    pids = [int(p.read_text()) for p in (run / "trials").glob("fake.hang.*/trial-*/pid")]
    assert pids and not any(process_alive(pid) for pid in pids)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["keys"]["optimizer.lr"]["setups"]["ok"]["axes"]["width"]["points"]["32"]["x_star"] == \
        pytest.approx(-5.0, abs=0.05)
    failed = summary["keys"]["optimizer.lr"]["setups"]["exit3"]
    assert failed["axes"]["width"]["points"]["32"]["flags"] == ["all_failed"]
    assert failed["axes"]["width"]["points"]["32"]["failed"] == 5  # the summary counts each point's failures
    assert summary["keys"]["optimizer.lr"]["setups"]["ok"]["axes"]["width"]["points"]["32"]["failed"] == 0
    assert failed["verdict"] == "inconclusive" and "every trial diverged or failed" in failed["reason"]


def test_a_failed_point_is_missing_not_an_infinite_loss_for_the_grid_extension(tmp_path: Path) -> None:
    from mutransfer.sweep.plan.policy import GridPolicy
    from mutransfer.sweep.spec.search import parse_search

    search = parse_search("search", {"log2_min": -7, "log2_max": -5, "step": 1, "noise_seeds": 0})
    policy = GridPolicy(search, 0)
    edge_failed = [(-7.0, 0, math.nan), (-6.0, 0, 2.5), (-5.0, 0, 2.0)]
    assert policy.next_points(edge_failed) == [(-4.0, 0)]  # bracketing goes on past the best point
    failed_past = [*edge_failed, (-4.0, 0, math.nan)]
    assert policy.next_points(failed_past) == []  # the failed extension is not trained again


@pytest.mark.parametrize(("edit", "says"), [
    ({"trainer": {"command": ["{python}", "x.py"]}}, "starts with a placeholder"),
    ({"trainer": {"command": ["no-such-program-xyz"]}}, "'no-such-program-xyz' is not found on PATH"),
    ({"trainer": {"command": ["./fake_trainer.py"]}}, "fake_trainer.py is not executable"),
    ({"trainer": {"command": ["bash", "x.sh", "{lrr}"]}}, "unknown placeholder '{lrr}'"),
    ({"trainer": {"command": ["bash", "x.sh", "{plan}"]}}, "{plan} needs model.factory"),
    ({"trainer": {"command": "bash x.sh"}}, "trainer.command is a string"),
    ({"trainer": {"command": ["bash"], "timeot": 5}}, "unknown key 'trainer.timeot'"),
    ({"trainer": {"command": ["bash", "x.sh"], "args": ["run/nope.sh"]}}, "trainer.args: run/nope.sh is not found"),
    ({"coord_check": True}, "coord_check: true needs the built-in model"),
    ({"batch_trials": 4}, "batch_trials=4 stacks trials"),
    ({"overrides": ["train.compile=off"]}, "train.compile is the built-in loop's"),
    ({"search": {"pruner": "median", "log2_min": -7, "log2_max": -3}}, "search.pruner=median needs intermediate"),
])
def test_what_a_trainer_cannot_do_is_refused_in_one_line(runner: CliRunner, tmp_path: Path, edit: dict,
                                                        says: str) -> None:
    spec = _spec(tmp_path, {"ok": []})
    (tmp_path / "x.sh").touch()  # the script the edits name, so that what each refuses is its own mistake
    data = yaml.safe_load(spec.read_text())
    for key, value in edit.items():
        data[key] = {**data[key], **value} if key == "trainer" and isinstance(value, dict) and "command" not in value \
            else value
    spec.write_text(yaml.safe_dump(data))
    refused_in_one_line(runner, spec, [], says, tmp_path / "out")


def test_the_storage_url_and_its_password_never_reach_a_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://user:s3cret@db.example/optuna"
    monkeypatch.setenv("MUTRANSFER_STORAGE", url)
    monkeypatch.setenv("SOME_TOOL_DSN", url)
    spec = load_spec(str(_spec(tmp_path, {"ok": []})))
    assert spec.trainer is not None
    env = child_environment(spec.trainer, tmp_path, threads=3, devices="2,3", storage=url)
    assert not any("s3cret" in value for value in env.values())
    assert env[TRIAL_DIR_ENV] == str(tmp_path) and env["OMP_NUM_THREADS"] == "3"
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    spec_env = load_spec(str(tmp_path / "fake.yaml"), ["trainer.env={OMP_NUM_THREADS: '7'}"])
    assert spec_env.trainer is not None
    env = child_environment(spec_env.trainer, tmp_path, threads=3, devices=None, storage=None)
    assert env["OMP_NUM_THREADS"] == "7"


def test_fingerprint_covers_the_command_not_how_it_runs(tmp_path: Path) -> None:
    path = str(_spec(tmp_path, {"ok": []}))

    def fingerprint(*words: str) -> str:
        return sweep_record(load_spec(path, list(words)), {})["fingerprint"]

    base = fingerprint()
    assert fingerprint("trainer.timeout=5", "trainer.retries=2", "trainer.env={A: b}", "trainer.max_failures=9") == base
    assert fingerprint("trainer.args=[--mode, slow]") != base
    record = sweep_record(load_spec(path, ["trainer.retries=2"]), {})
    assert record["spec"]["trainer"]["retries"] == 2  # kept in the record: verify runs the same way


def test_a_childs_output_is_kept_bounded(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys\nfor i in range(300000): print(f'line {i}')"],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    log = BoundedLog(proc.stdout, tmp_path / "out.log", limit=64 * 1024)
    proc.wait()
    log.join()
    text = (tmp_path / "out.log").read_text()
    assert len(text) < 64 * 1024 + 100 and text.startswith("line 0\n") and text.rstrip().endswith("line 299999")
    assert "bytes dropped" in text


@pytest.mark.slow
def test_ctrl_c_requeues_the_running_trial_and_a_rerun_finishes_without_duplicates(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"slow": {"overrides": [], "trainer": {"args": ["--mode", "slow", "--sleep", "1"]}}})
    run = tmp_path / "run"
    command = [sys.executable, "-m", "mutransfer", "sweep", str(spec), "--out", str(run), "--workers", "1"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    deadline = time.monotonic() + 120
    while not list((run / "trials").glob("*/trial-1/pid")) and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(next((run / "trials").glob("*/trial-1/pid")).read_text())
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert not process_alive(pid)
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    trials = pd.read_csv(run / "trials.csv")
    assert (trials["status"] == "interrupted").sum() == 1  # the trial Ctrl-C stopped, listed as such
    done = trials[trials["status"] != "interrupted"]
    assert len(done) == 5 and set(done["status"]) <= {"ok", "diverged"} and done["log2_lr"].is_unique


@pytest.mark.slow
def test_a_killed_sweep_leaves_no_trainer_running_and_resumes_without_duplicates(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"blocked": {"overrides": [], "trainer": {"args": ["--mode", "blocked"]}}})
    (tmp_path / "block").touch()
    run = tmp_path / "run"
    command = [sys.executable, "-m", "mutransfer", "sweep", str(spec), "--out", str(run), "--workers", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(list((run / "trials").glob("*/trial-*/pid"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [int(p.read_text()) for p in (run / "trials").glob("*/trial-*/pid")]
    assert len(pids) == 2 and all(process_alive(pid) for pid in pids)  # both workers' trainers run
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while any(process_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(process_alive(pid) for pid in pids)  # each died with its worker, which died with the sweep
    (tmp_path / "block").unlink()
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    done = pd.read_csv(run / "trials.csv").query("status in ['ok', 'diverged']")
    assert len(done) == 5 and done["log2_lr"].is_unique


def test_report_and_trial_follow_the_file_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRIAL_DIR_ENV, raising=False)
    assert report(step=1, val_loss=3.0) is False
    with pytest.raises(UserError, match="no trial"):
        trial()
    write_trial_values(tmp_path, {"lr": 0.01, "log2_lr": math.log2(0.01), "setup": "a", "seed": 1, "width": 64,
                                  "depth": 2, "steps": 10, "batch_size": 8, "tokens": 5120, "plan": "",
                                  "devices": "", "optimizer.weight_decay": 0.1})
    monkeypatch.setenv(TRIAL_DIR_ENV, str(tmp_path))
    values = trial()
    assert values.width == 64 and values.lr == 0.01 and values.plan is None and values["optimizer.weight_decay"] == 0.1
    assert report(step=5, val_loss=3.5, train_loss=3.6) and report(step=10, val_loss=3.2, train_loss=3.3, seconds=2.0)
    result = read_result(tmp_path)
    assert result.val_loss == 3.2 and result.curve == [(5, 3.5), (10, 3.2)] and result.seconds == 2.0
    assert [row["step"] for row in read_progress(tmp_path)] == [5, 10]
    report(step=11, val_loss=math.nan)
    assert read_result(tmp_path).diverged


def test_the_example_trainers_table_on_its_page_is_what_the_kept_run_gives() -> None:
    root = Path(__file__).resolve().parents[2]
    printed = subprocess.run([sys.executable, str(root / "scripts" / "axis_table.py"),
                              str(root / "docs" / "data" / "own_trainer")], capture_output=True, text=True, check=True)
    lines = [line for line in printed.stdout.splitlines() if line.startswith("|")]
    page = (root / "docs" / "your-trainer.md").read_text()
    assert len(lines) == 4 and not missing_lines(lines, page), missing_lines(lines, page)
    assert "| `sp_adamw` |" in printed.stdout and "drifts" in printed.stdout
