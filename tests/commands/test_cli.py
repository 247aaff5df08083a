"""The CLI end to end: show, train, run directory contents, divergence (their bad input: test_bad_input.py)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

import mutransfer
from conftest import invoke


def test_help_does_not_import_heavy_modules() -> None:
    code = ("import sys; from mutransfer.cli import app; from typer.testing import CliRunner; "
            "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output; "
            "heavy = [m for m in ('torch', 'optuna', 'matplotlib', 'hydra', 'pandas') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_works() -> None:
    out = subprocess.run([sys.executable, "-m", "mutransfer", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "train" in out.stdout and "show" in out.stdout


def test_show_lists_every_parameter(runner: CliRunner) -> None:
    result = invoke(runner, "show", "model.width=256", "model.depth=1", "optimizer=muon", "parametrization=mup")
    assert result.exit_code == 0, result.output
    for text in ("embed.weight", "lm_head.weight", "blocks.0.mlp.up.weight", "spectral", "row_norm", "sign",
                 "1024×256", "mup + muon at width 256"):
        assert text in result.output


def test_show_config_prints_yaml(runner: CliRunner) -> None:
    result = invoke(runner, "show", "--config", "model.width=64")
    assert result.exit_code == 0
    assert yaml.safe_load(result.output)["model"]["width"] == 64


def test_train_writes_the_run_directory(runner: CliRunner, tiny: list[str], tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(runner, "train", *tiny, "--out", str(out))
    assert result.exit_code == 0, result.output
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["model"]["width"] == 32 and saved["data"]["kind"] == "text"
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [int(r["step"]) for r in rows] == list(range(1, 7))
    assert set(rows[0]) == {"step", "train_loss", "lr", "tokens", "seconds"}
    assert int(rows[-1]["tokens"]) == 6 * 4 * 32
    res = json.loads((out / "result.json").read_text())
    assert res["status"] == "ok" and res["steps"] == 6 and res["val_loss"] > 0
    assert res["tokens_per_s"] > 0 and 0 < res["optimizer_fraction"] < 1 and res["peak_memory_mb"] > 0
    assert len(res["corpus"]["sha256"]) == 64 and res["corpus"]["size_bytes"] > 100_000
    assert res["environment"]["packages"]["torch"] and res["environment"]["threads"] >= 1
    assert [e["step"] for e in res["evals"]] == [3, 6]
    assert next(iter(res)) == "mutransfer_version" and res["mutransfer_version"] == mutransfer.__version__


def test_train_from_saved_config_reproduces_bit_for_bit(runner: CliRunner, tiny: list[str], tmp_path: Path) -> None:
    first = invoke(runner, "train", *tiny, "--out", str(tmp_path / "a"))
    second = invoke(runner, "train", *tiny, "--out", str(tmp_path / "b"))
    assert first.exit_code == second.exit_code == 0
    a = json.loads((tmp_path / "a" / "result.json").read_text())
    b = json.loads((tmp_path / "b" / "result.json").read_text())
    assert a["val_loss"] == b["val_loss"]


def test_huge_lr_diverges_as_a_result_not_a_crash(runner: CliRunner, tiny: list[str], tmp_path: Path) -> None:
    out = tmp_path / "div"
    result = invoke(runner, "train", *tiny, "optimizer=sgd", "parametrization=sp", "optimizer.lr=1e4",
                    "train.warmup_frac=0", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "diverged" in result.output
    res = json.loads((out / "result.json").read_text())
    assert res["status"] == "diverged" and res["steps"] < 6 and res["val_loss"] is None


def test_the_command_line_shows_the_defaults_the_library_takes() -> None:
    from typer.main import get_command

    from mutransfer.analysis.compare import DEFAULT_TOLERANCE as COMPARE_DEFAULT
    from mutransfer.analysis.optimum import Thresholds
    from mutransfer.cli import app
    from mutransfer.transfer.target import DEFAULT_TOLERANCE as TRANSFER_DEFAULT
    from mutransfer.transfer.verify import DEFAULT_SPAN, DEFAULT_STEP, ERROR_TOLERANCE

    commands = get_command(app).commands  # type: ignore[attr-defined]
    shown = {(name, param.opts[0]): float(param.default) for name, command in commands.items()
             for param in command.params if param.opts and param.opts[0] in ("--tolerance", "--span", "--step",
                                                                             "--batch-tolerance")
             and param.default is not None}  # import's --step has none: the table's own spacing
    assert shown == {("compare", "--tolerance"): COMPARE_DEFAULT, ("transfer", "--tolerance"): TRANSFER_DEFAULT,
                     ("verify", "--tolerance"): ERROR_TOLERANCE, ("verify", "--span"): DEFAULT_SPAN,
                     ("verify", "--step"): DEFAULT_STEP, **{(name, "--batch-tolerance"): Thresholds().batch_tolerance
                                                            for name in ("sweep", "plot", "transfer")}}


def test_version_is_the_package_s_one_version(runner: CliRunner) -> None:
    """``mutransfer --version`` prints ``mutransfer.__version__``, which the installed package's metadata carries
    (pyproject.toml reads it from there: one place)."""
    from importlib.metadata import version

    import mutransfer

    result = invoke(runner, "--version")
    assert result.exit_code == 0 and result.output.strip() == f"mutransfer {mutransfer.__version__}"
    assert version("mutransfer") == mutransfer.__version__
    assert 'dynamic = ["version"]' in (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
