"""Commands that train nothing answer without importing torch: ``--help``, a misspelt key, a rerun of a finished
sweep (the seconds they take are measured by ``scripts/bench_startup.py``, not here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import invoke, load_script

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
