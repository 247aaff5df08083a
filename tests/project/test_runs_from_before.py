"""Run directories written before the sweep's plan existed (``tests/baselines/before_plan/``, made by commit 1be432a
with ``mutransfer sweep smoke train.steps=4 train.eval_every=2 --workers 1 --threads 1``; the interrupted one
stopped by SIGTERM after 10 of its 40 trials) and the kept import (``docs/data/import/example``, written by an
earlier version): today's code reads them, resumes them and transfers from them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import yaml
from typer.testing import CliRunner

from conftest import differences, invoke
from mutransfer.files import SUMMARY_FILE

ROOT = Path(__file__).resolve().parents[2]
BEFORE = Path(__file__).parents[1] / "baselines" / "before_plan"
WORDS = ["smoke", "train.steps=4", "train.eval_every=2", "--workers", "1", "--threads", "1"]
POINT = ["setup", "width", "seed", "log2_lr"]


def copied(name: str, tmp_path: Path) -> Path:
    run = tmp_path / name
    shutil.copytree(BEFORE / name, run)
    return run


def resumed(runner: CliRunner, run: Path) -> str:
    """The sweep run again on ``run`` from its storage (its summary removed, so the tables are recomputed)."""
    (run / SUMMARY_FILE).unlink()
    result = invoke(runner, "sweep", *WORDS, "--out", str(run))
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def transfers(runner: CliRunner, run: Path) -> dict:
    result = invoke(runner, "transfer", "--width", "128", "--from", str(run))
    assert result.exit_code == 0, result.output
    return yaml.safe_load((run / "transfer_w128.yaml").read_text(encoding="utf-8"))


def test_a_finished_sweep_from_before_reads_the_same_tables_from_its_storage_and_transfers(runner: CliRunner,
                                                                                           tmp_path: Path) -> None:
    run = copied("finished", tmp_path)
    kept_trials = pd.read_csv(BEFORE / "finished" / "trials.csv")
    output = resumed(runner, run)
    assert f"{len(kept_trials)}/{len(kept_trials)} trials already done" in output
    assert pd.read_csv(run / "trials.csv").equals(kept_trials)
    now = json.loads((run / SUMMARY_FILE).read_text(encoding="utf-8"))
    kept = json.loads((BEFORE / "finished" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert now["status"]["complete"]
    assert differences(*({k: v for k, v in doc.items() if k != "status"} for doc in (now, kept))) == []
    assert transfers(runner, run)["width"] == 128


def test_an_interrupted_sweep_from_before_resumes_to_the_finished_design_and_keeps_what_it_trained(
        runner: CliRunner, tmp_path: Path) -> None:
    run = copied("interrupted", tmp_path)
    before = pd.read_csv(run / "trials.csv")
    assert len(before) == 10
    output = resumed(runner, run)
    assert "resuming: 10 trials were already done" in output
    after = pd.read_csv(run / "trials.csv")
    finished = pd.read_csv(BEFORE / "finished" / "trials.csv")
    assert sorted(map(tuple, after[POINT].values.tolist())) == sorted(map(tuple, finished[POINT].values.tolist()))
    kept = after.merge(before, on=["study", "trial"], suffixes=("", "_before"))
    assert len(kept) == 10 and kept["val_loss"].equals(kept["val_loss_before"].rename("val_loss"))
    assert json.loads((run / SUMMARY_FILE).read_text(encoding="utf-8"))["status"]["complete"]
    assert transfers(runner, run)["width"] == 128


def test_the_kept_import_transfers_at_a_target_on_its_axes(runner: CliRunner, tmp_path: Path) -> None:
    run = tmp_path / "example"
    shutil.copytree(ROOT / "docs" / "data" / "import" / "example", run)
    result = invoke(runner, "transfer", "--from", str(run), "--at", "params=7e9", "--at", "tokens=2e11", "--at",
                    "batch=1024")
    assert result.exit_code == 0, result.output
    document = yaml.safe_load((run / "transfer_params7e+09_tokens2e+11_batch1024.yaml").read_text(encoding="utf-8"))
    low, high = document["prediction"]["interval"]
    assert low < document["log2_lr"] < high
