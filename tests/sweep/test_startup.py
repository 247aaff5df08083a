"""Commands that train nothing answer without importing torch: ``--help``, a misspelt key, a rerun of a finished
sweep, ``transfer`` and ``verify`` refusing a bad argument, and ``verify --dry-run`` priced by a finished sweep's
trials (the seconds they take are measured by ``scripts/bench_startup.py``, not here)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke, load_script
from mutransfer.files import CONFIG_FILE, TRIALS_FILE, dump_yaml
from mutransfer.schema import LR_KEY
from mutransfer.sweep.plan.estimate import TRIAL_OVERHEAD_S
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.tables import TRIAL_COLUMNS
from mutransfer.sweep.plan.trial import setup_configs, sweep_record

heavy_imports = load_script("bench_startup").heavy_imports


@pytest.mark.parametrize("words", [["--help"], ["sweep", "--help"], ["train", "model.widht=64"],
                                   ["show", "model.widht=64"], ["coord-check", "model.widht=64"],
                                   ["sweep", "smoke", "model.widht=64"]],
                         ids=["help", "sweep-help", "train", "show", "coord-check", "sweep"])
def test_a_command_that_trains_nothing_imports_no_torch(words: list[str]) -> None:
    output, heavy = heavy_imports(words)
    if "model.widht=64" in words:
        assert "error: unknown config key 'model.widht'" in output and "did you mean 'model.width'?" in output
    else:
        assert "Usage:" in output
    assert not {"torch", "optuna", "matplotlib"} & set(heavy), heavy


def test_a_rerun_of_a_finished_sweep_reads_its_tables_without_torch(runner: CliRunner, spec_file: Path,
                                                                     tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert invoke(runner, "sweep", str(spec_file), "--out", str(run), "--workers", "1", "--threads", "1").exit_code == 0
    before = {path.name: path.stat().st_mtime_ns for path in run.iterdir()}
    output, heavy = heavy_imports(["sweep", str(spec_file), "--out", str(run)])
    assert "trials already done; the tables are up to date" in output and "optimal learning rate per width" in output
    assert not {"torch", "optuna", "matplotlib"} & set(heavy), heavy
    assert {path.name: path.stat().st_mtime_ns for path in run.iterdir()} == before
    changed, _ = heavy_imports(["sweep", str(spec_file), "--out", str(run), "--batch-tolerance", "0.02"])
    assert "rewriting the tables" in changed


@pytest.mark.parametrize("words,says", [
    (["transfer", "--width", "512", "--from", "no-such-run"], "error: --from no-such-run: no such directory"),
    (["verify", "--width", "512", "--from", "no-such-run"], "error: --from no-such-run: no such directory"),
    (["verify", "--width", "abc", "--from", "no-such-run"], "error: --width abc: 'abc' is not a width"),
], ids=["transfer-run-dir", "verify-run-dir", "verify-option"])
def test_transfer_and_verify_refuse_bad_arguments_without_torch(words: list[str], says: str) -> None:
    output, heavy = heavy_imports(words)
    assert says in output and "Traceback" not in output
    assert "torch" not in heavy, heavy


def finished_run(folder: Path, text_file: Path, trainer: bool) -> Path:
    """A finished sweep's run directory as verify reads it (config.yaml, trials.csv), written without training: one
    setup, widths 32–128 whose trials took 0.5, 1 and 2 s, a bowl at log2 LR -5; its trainer's script is empty."""
    (folder / "train.py").write_text("")
    spec_data = {"name": "made", "setups": {"mine": {}}, "widths": [32, 64, 128], "seeds": [0],
                 "search": {"log2_min": -7, "log2_max": -3, "step": 1, "noise_seeds": 0, "extend": False},
                 "overrides": ["model.depth=1", "parametrization.base_width=32", "data=text",
                               f"data.path={text_file}"],
                 **({"trainer": {"command": [sys.executable, "train.py", "--lr", "{lr}"]}} if trainer else {})}
    (folder / "made.yaml").write_text(yaml.safe_dump(spec_data))
    spec = load_spec(str(folder / "made.yaml"))
    run = folder / "run"
    run.mkdir()
    (run / CONFIG_FILE).write_text(dump_yaml(sweep_record(spec, setup_configs(spec))))
    rows = [{"setup": "mine", "width": width, "seed": 0, "search_key": LR_KEY, "log2_lr": x, "lr": 2.0**x,
             "val_loss": 2 + 0.1 * (x + 5) ** 2, "status": "ok", "steps": 10, "seconds": seconds, "batch_trials": 1,
             "study": f"made.w{width}", "trial": x + 7}
            for width, seconds in ((32, 0.5), (64, 1.0), (128, 2.0)) for x in range(-7, -2)]
    with open(run / TRIALS_FILE, "w", newline="") as handle:
        writer = csv.DictWriter(handle, TRIAL_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return run


@pytest.mark.parametrize("trainer", [True, False], ids=["trainer", "built-in"])
def test_verify_dry_run_prices_the_finished_trials_without_torch(tmp_path: Path, text_file: Path,
                                                                 trainer: bool) -> None:
    """Width 512 from trials that took width/64 s: 8 s a trial, from the sweep's 15 finished trials, for a
    trainer's sweep or the built-in GPT's alike."""
    run = finished_run(tmp_path, text_file, trainer)
    output, heavy = heavy_imports(["verify", "--width", "512", "--from", str(run), "--dry-run"])
    text = " ".join(output.split())
    assert "verify at width 512 (time from finished trials)" in text, output
    assert "from 15 finished trials: median 0.50 s at width 32, 1.0 s at 64, 2.0 s at 128" in text
    assert f"{8.0 + TRIAL_OVERHEAD_S:.3g}" in text and "GFLOP" not in text
    assert not {"torch", "matplotlib"} & set(heavy), heavy


def test_a_fresh_trainer_sweep_s_dry_run_has_no_estimate_and_imports_no_torch(tmp_path: Path, text_file: Path) -> None:
    """Before any trial has run, a trainer sweep's dry run prints its plan, its searched range and its command,
    says it has no estimate yet, and loads neither torch nor the built-in GPT's data."""
    run = finished_run(tmp_path, text_file, trainer=True)
    output, heavy = heavy_imports(["sweep", str(tmp_path / "made.yaml"), "--out", str(tmp_path / "fresh"),
                                   "--dry-run"])
    text = " ".join(output.split())
    assert "mine: searched LR 2^-7 … 2^-3" in text and "no time estimate yet" in text, output
    assert "train.py --lr" in text and "GFLOP" not in text and not (tmp_path / "fresh").exists()
    assert not {"torch", "matplotlib"} & set(heavy), heavy
    resumed, _ = heavy_imports(["sweep", str(tmp_path / "made.yaml"), "--out", str(run), "--dry-run"])
    assert "no time estimate yet" not in resumed and "resuming" in resumed, resumed
