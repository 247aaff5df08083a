"""``--nproc``: a run on several ranks from the command line equals one process, only rank 0 writes, bad input
is one line and exit 2, a killed rank or Ctrl-C ends every rank, and a sweep's trials run on several ranks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from typer.testing import CliRunner

from conftest import process_alive, wait_for
from mutransfer.cli import app
from mutransfer.words import TrialStatus

RUN = ["model.width=32", "model.depth=1", "parametrization.base_width=32", "train.steps=8", "train.batch_size=4",
       "train.seq_len=32", "train.eval_batches=2", "train.eval_every=4", "train.threads=1", "train.compile=off",
       "data=text"]


def mutransfer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mutransfer", *args], capture_output=True, text=True, timeout=300)


def result_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())


@pytest.mark.parametrize(("parallel", "model"), [pytest.param("ddp", "model=gpt", marks=pytest.mark.slow),
                                               ("fsdp", "model=gpt"), ("ddp", "model=moe")])
def test_train_on_two_ranks_equals_one_process(tmp_path: Path, text_file: Path, parallel: str, model: str) -> None:
    """A mixture of experts under DDP too: each rank routes its own rows (the balancing bias is rank 0's)."""
    data = f"data.path={text_file}"
    one = CliRunner().invoke(app, ["train", model, *RUN, data, "--out", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    two = mutransfer("train", model, *RUN, data, f"train.parallel={parallel}", "--nproc", "2", "--out",
                     str(tmp_path / "two"))
    assert two.returncode == 0, two.stderr
    single, ranked = result_of(tmp_path / "one"), result_of(tmp_path / "two")
    assert ranked["environment"]["ranks"] == {"world": 2, "parallel": parallel, "backend": "gloo"}
    assert ranked["val_loss"] == pytest.approx(single["val_loss"], rel=1e-3)
    assert two.stdout.count("run directory:") == 1, "only rank 0 prints"
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["config.yaml", "metrics.csv", "result.json"]


@pytest.mark.parametrize(("args", "named"), [
    (["--nproc", "0"], "--nproc 0"),
    (["--nproc", "two"], "--nproc two"),
    (["--nproc", "3"], "train.batch_size=4"),
    (["--nproc", "2", "train.parallel=zero3"], "train.parallel"),
    (["--nproc", "2", "train.device=cuda"], "train.device=cuda"),
    (["--nproc", "2", "train.noise_scale=true"], "train.noise_scale"),
    (["--nproc", "2", "model=moe", "train.parallel=fsdp"], "train.parallel=fsdp is not supported with model.moe"),
])
def test_bad_distributed_input_is_one_line(tmp_path: Path, text_file: Path, args: list[str], named: str) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", *RUN, f"data.path={text_file}", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert named in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()


def _ranks_of(launcher: subprocess.Popen[bytes], count: int) -> list[psutil.Process]:
    children: list[psutil.Process] = []

    def started() -> bool:
        children[:] = psutil.Process(launcher.pid).children()
        return len(children) == count
    wait_for(started, 60, f"{count} ranks")
    return children


@pytest.mark.slow
def test_a_killed_rank_ends_the_run_and_every_rank(tmp_path: Path, text_file: Path) -> None:
    launcher = subprocess.Popen([sys.executable, "-m", "mutransfer", "train", *RUN, f"data.path={text_file}",
                                 "train.steps=100000", "train.dist_timeout=5", "--nproc", "2", "--out",
                                 str(tmp_path / "run")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ranks = _ranks_of(launcher, 2)
    wait_for(lambda: (tmp_path / "run" / "config.yaml").exists(), 60, "rank 0 to start training")
    time.sleep(3)
    ranks[1].kill()
    start = time.monotonic()
    code = launcher.wait(120)
    assert code != 0
    assert time.monotonic() - start < 5 + 30 + 15, "the other rank outlived the collective timeout and the grace"
    assert not any(process_alive(rank.pid) for rank in ranks)
    assert not (tmp_path / "run" / "result.json").exists()


@pytest.mark.slow
def test_ctrl_c_stops_every_rank(tmp_path: Path, text_file: Path) -> None:
    launcher = subprocess.Popen([sys.executable, "-m", "mutransfer", "train", *RUN, f"data.path={text_file}",
                                 "train.steps=100000", "--nproc", "2", "--out", str(tmp_path / "run")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ranks = _ranks_of(launcher, 2)
    wait_for(lambda: (tmp_path / "run" / "config.yaml").exists(), 60, "rank 0 to start training")
    os.kill(launcher.pid, signal.SIGINT)
    assert launcher.wait(60) == 130
    wait_for(lambda: not any(process_alive(rank.pid) for rank in ranks), 15, "every rank to stop")


def _ranked_spec(tmp_path: Path, text_file: Path, ranks: int, **extra: object) -> Path:
    spec = {"name": "ranked", "widths": [32, 64], "seeds": [0], "devices_per_trial": ranks,
            "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                    "search": {"log2_min": -6, "log2_max": -2}}},
            "search": {"step": 2, "extend": False, "noise_seeds": 0},
            "overrides": [*RUN, f"data.path={text_file}", "train.parallel=fsdp"], **extra}
    path = tmp_path / f"ranked{ranks}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(("extra", "args", "named"), [
    ({"batch_trials": 2}, [], "batch_trials=2"),
    ({"devices_per_trial": 0}, [], "devices_per_trial=0"),
    ({}, ["--workers", "2", "--threads", "1"], "2 worker(s) × 2 ranks per trial"),
])
def test_bad_ranked_sweeps_are_one_line(tmp_path: Path, text_file: Path, extra: dict, args: list[str],
                                        named: str) -> None:
    result = CliRunner().invoke(app, ["sweep", str(_ranked_spec(tmp_path, text_file, 2, **extra)), *args,
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert named in result.output and len(result.output.strip().splitlines()) == 1, result.output


@pytest.mark.slow
def test_a_sweep_on_two_ranks_per_trial_equals_one_rank_and_verify_runs_on_two(tmp_path: Path, text_file: Path) -> None:
    losses = {}
    for ranks in (1, 2):
        run = mutransfer("sweep", str(_ranked_spec(tmp_path, text_file, ranks)), "--workers", "1", "--out",
                         str(tmp_path / f"run{ranks}"))
        assert run.returncode == 0, run.stderr
        table = pd.read_csv(tmp_path / f"run{ranks}" / "trials.csv").sort_values(["width", "log2_lr"])
        assert (table["status"] == TrialStatus.OK).all()
        losses[ranks] = table["val_loss"].to_numpy()
    assert losses[2] == pytest.approx(losses[1], rel=1e-3)
    check = mutransfer("verify", "--width", "128", "--setup", "mup_muon", "--from", str(tmp_path / "run1"),
                       "--factors", "0.5,1,2", "--nproc", "2", "--workers", "1")
    assert check.returncode in (0, 1), check.stderr
    trained = pd.read_csv(tmp_path / "run1" / "verify.csv")
    assert len(trained) >= 3 and (trained["status"] == TrialStatus.OK).all(), trained


def _helper_ranks() -> list[psutil.Process]:
    return [process for process in psutil.process_iter(["cmdline"])
            if "mutransfer.sweep.run.rank_trial" in (process.info["cmdline"] or [])]


@pytest.mark.slow
def test_a_killed_helper_rank_fails_its_trial_and_the_sweep_goes_on(tmp_path: Path, text_file: Path) -> None:
    spec = _ranked_spec(tmp_path, text_file, 2)
    data = yaml.safe_load(spec.read_text())
    data["overrides"] += ["train.steps=60", "train.dist_timeout=5"]
    spec.write_text(yaml.safe_dump(data))
    sweep = subprocess.Popen([sys.executable, "-m", "mutransfer", "sweep", str(spec), "--workers", "1", "--out",
                              str(tmp_path / "run")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    helpers: list[psutil.Process] = []

    def helper_running() -> bool:
        helpers[:] = _helper_ranks()
        return bool(helpers)
    wait_for(helper_running, 120, "a trial's helper rank")
    time.sleep(2)
    helpers[0].kill()
    assert sweep.wait(300) in (0, 1)
    table = pd.read_csv(tmp_path / "run" / "trials.csv")
    assert (table["status"] == TrialStatus.FAILED).sum() == 1, table[["width", "log2_lr", "status"]]
    assert "ranks failed" in table.loc[table["status"] == TrialStatus.FAILED, "message"].iloc[0]
    assert (table["status"] == TrialStatus.OK).sum() == len(table) - 1
    assert not _helper_ranks()


def test_each_rank_gets_its_gpu_and_its_share_of_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from mutransfer.dist.launch import rank_environment
    from mutransfer.sweep.run.layout import rank_gpu_groups

    env = rank_environment(1, 2, 29500, base={"PATH": "/bin"}, local_rank=3, threads=4)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["OMP_NUM_THREADS"]) == ("1", "2", "3", "4")
    assert rank_environment(0, 2, 29500, base={"OMP_NUM_THREADS": "7"}, threads=1)["OMP_NUM_THREADS"] == "7"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 5)
    assert rank_gpu_groups(2) == [(0, 1), (2, 3)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert rank_gpu_groups(2) == []
