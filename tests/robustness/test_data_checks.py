"""Own data is never silently ignored, a corpus is checked against what a run reads, and verify warns when it
trains at another horizon, batch, depth or data than its sweep (issue 29)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke, refused_in_one_line
from mutransfer.commands.sweep_checks import validate_trials
from mutransfer.config import compose, to_yaml
from mutransfer.sweep.spec.sweep_spec import load_spec

TINY = ["model.width=32", "model.depth=1", "parametrization.base_width=32", "train.batch_size=4",
        "train.seq_len=32", "train.eval_every=0", "train.eval_batches=1"]
"""A tiny run without data: each test names its own corpus."""


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> Path:
    """2,000 bytes of text: 1,800 training and 200 validation tokens."""
    path = tmp_path_factory.mktemp("small") / "small.txt"
    path.write_bytes(text_file.read_bytes()[:2000])
    return path


def _spec(path: Path, data: list[str], steps: list[int] | None = None, extra: list[str] = ()) -> Path:
    document = {"name": "checks", "setups": {"mup_muon": {"overrides": ["optimizer=muon"],
                                                          "search": {"log2_min": -5, "log2_max": -3}}},
                "widths": [32, 64], "search": {"step": 1, "noise_seeds": 0, "extend": False},
                "overrides": [*TINY, *data, *extra]}
    if steps:
        document["steps"] = steps
    else:
        document["overrides"].append("train.steps=4")
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_sweep_with_data_path_alone_is_refused(runner: CliRunner, tmp_path: Path, text_file: Path) -> None:
    spec = _spec(tmp_path / "spec.yaml", [])
    refused_in_one_line(runner, spec, [f"data.path={text_file}"], "data=stdlib ignores it", tmp_path / "a")
    spec = _spec(tmp_path / "spec.yaml", [f"data.path={text_file}"])
    refused_in_one_line(runner, spec, [], "add data=text (a file read as bytes) or data=tokens", tmp_path / "b")


def test_train_names_its_corpus_and_warns_past_one_epoch(runner: CliRunner, tmp_path: Path, small_file: Path) -> None:
    result = invoke(runner, "train", *TINY, "train.steps=20", "data=text", f"data.path={small_file}",
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert f"corpus {small_file.resolve()} · 2,000 bytes · sha256 " in result.stdout
    assert result.stdout.index("corpus ") < result.stdout.index("status ok")
    warning = (f"warning: train.steps=20 × train.batch_size=4 × train.seq_len=32 reads 2,560 tokens, 1.4 epochs of "
               f"the training split (1,800 tokens) of {small_file.resolve()}; ")
    assert result.stderr.count("warning:") == 1 and result.stderr.startswith(warning), result.stderr


def test_a_validation_split_smaller_than_one_evaluation_is_refused(runner: CliRunner, tmp_path: Path,
                                                                   small_file: Path) -> None:
    result = invoke(runner, "train", *TINY, "train.steps=2", "train.eval_batches=2", "data=text",
                    f"data.path={small_file}", "--out", str(tmp_path / "run"))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert ("holds 200 tokens (data.val_fraction=0.1 of 2,000) but one evaluation reads 264 (train.eval_batches=2 "
            "× train.batch_size=4 × (train.seq_len=32 + 1)); raise data.val_fraction to 0.14, lower "
            "train.eval_batches, or give a larger corpus") in result.output
    spec = _spec(tmp_path / "spec.yaml", ["data=text", f"data.path={small_file}"], extra=["train.eval_batches=2"])
    refused_in_one_line(runner, spec, [], "data.val_fraction=0.1", tmp_path / "sweep")


def test_a_sweep_warns_once_per_corpus_and_horizon(tmp_path: Path, small_file: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path / "spec.yaml", ["data=text", f"data.path={small_file}"], steps=[20, 40, 4])
    validate_trials(load_spec(str(spec)))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert "train.steps=20 × " in lines[0] and "1.4 epochs" in lines[0]
    assert "train.steps=40 × " in lines[1] and "2.8 epochs" in lines[1]


def test_train_config_warns_about_depth_and_data(runner: CliRunner, tmp_path: Path, text_file: Path,
                                                 small_file: Path) -> None:
    saved = tmp_path / "config.yaml"
    saved.write_text(to_yaml(compose([*TINY, "train.steps=2", "data=text", f"data.path={text_file}"])))
    result = invoke(runner, "train", "--config", str(saved), "model.depth=2", f"data.path={small_file}",
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"warning: model.depth: 1 → 2, data.path: {text_file} → {small_file} against "
                                    f"{saved}; learning rates are not known to transfer across training horizon, "
                                    "batch size, depth or data"), result.stderr


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> Path:
    """A finished tiny sweep trained for 4 steps."""
    root = tmp_path_factory.mktemp("verify")
    spec = _spec(root / "spec.yaml", ["data=text", f"data.path={text_file}"])
    run = root / "run"
    result = invoke(CliRunner(), "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    return run


def test_verify_warns_about_another_horizon_and_names_its_files_first(runner: CliRunner, sweep_run: Path) -> None:
    result = invoke(runner, "verify", "--width", "64", "--from", str(sweep_run), "train.steps=2", "--workers", "1",
                    "--threads", "1")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"warning: train.steps: 4 → 2 against the sweep in {sweep_run}; learning rates "
                                    "are not known to transfer"), result.stderr
    assert "verify --steps N, --tokens D, --batch-size B or --depth L" in " ".join(result.stderr.split())
    line = f"verify writes verify.json, verify.csv and verify.png into {sweep_run}, its trials as studies verify-"
    assert line in result.stdout and (sweep_run / "verify.json").is_file()
    assert result.stdout.index(line) < result.stdout.index("measured at the target")


def test_verify_at_the_sweeps_own_setting_does_not_warn(runner: CliRunner, sweep_run: Path) -> None:
    result = invoke(runner, "verify", "--width", "64", "--from", str(sweep_run), "--dry-run", "--workers", "1",
                    "--threads", "1")
    assert result.exit_code == 0, result.output
    assert "against the sweep" not in result.stderr
    assert f"verify would write verify.json, verify.csv and verify.png into {sweep_run}" in result.stdout
