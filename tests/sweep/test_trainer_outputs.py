"""What `transfer` and `verify` say of a sweep whose trials ran the user's own command, the precision the transfer
files write their numbers at, and the one-line messages of issue 64 (a missing run directory, `trial()` outside a
sweep, an uncalibrated import's verdict)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.config import load_config_file
from mutransfer.files import TRIAL_DIR_ENV
from mutransfer.precision import lr_digits, octaves, written
from mutransfer.sweep.spec.setup_labels import setup_names
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.transfer.derived import check_derived_sections
from mutransfer.analysis.transfer_layout import SWEEP, undeclared

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke"
DRIFTING_TRAINER = '''
import json, math, os, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
x, width = math.log2(float(args["--lr"])), int(args["--width"])
loss = 2.0 + 0.1 * (x + 4.0 + math.log2(width / 32)) ** 2
with open(os.path.join(args["--out"], "result.json"), "w") as f:
    json.dump({"val_loss": loss}, f)
'''
"""A trainer whose optimum falls an octave per width doubling (log2 η* = -4 at width 32): a setup that drifts."""
BUILT_IN = ("embed.weight", "lm_head", "depth 2", "mup", "muon", "param_groups", "init std")


@pytest.fixture(scope="module")
def drifting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished sweep of the drifting trainer: widths 32 and 64, one seed, a 1-octave grid."""
    root = tmp_path_factory.mktemp("drifting")
    (root / "drift.py").write_text(DRIFTING_TRAINER)
    spec = {"name": "drifting", "trainer": {"command": [sys.executable, "drift.py", "--lr", "{lr}", "--width",
                                                        "{width}", "--out", "{trial_dir}"], "timeout": 60},
            "setups": {"mine": []}, "widths": [32, 64], "seeds": [0],
            "search": {"log2_min": -6, "log2_max": -3, "step": 1, "noise_seeds": 0, "extend": False}}
    (root / "drifting.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = invoke(CliRunner(), "sweep", str(root / "drifting.yaml"), "--out", str(root / "run"), "--workers", "1")
    assert result.exit_code == 0, result.output
    return root / "run"


def test_a_trainer_sweeps_transfer_speaks_of_the_trainer(runner: CliRunner, drifting: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    result = invoke(runner, "transfer", "--width", "1024", "--from", str(drifting), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert not [word for word in BUILT_IN if word in result.output], result.output
    doc = yaml.safe_load(out.read_text())
    assert not {"param_groups", "preset", "base_width", "model", "optimizer"} & set(doc) and doc["config"] is None
    assert "swept_depth" not in doc["source"] and not [word for word in BUILT_IN if word in out.read_text()]
    trainer = doc["trainer"]
    assert trainer["setup"] == doc["source"]["setup"] == "mine" and trainer["widths"] == [32, 64]
    assert trainer["command"][1:] == ["drift.py", "--lr", "{lr}", "--width", "{width}", "--out", "{trial_dir}"]
    assert trainer["at_target"][1:] == ["drift.py", "--lr", repr(doc["lr"]), "--width", "1024", "--out", "{trial_dir}"]
    assert doc["lr"] == lr_digits(2.0 ** doc["log2_lr"]) and doc["log2_lr"] == doc["prediction"]["log2_lr"]
    assert f"command at the target: {' '.join(trainer['at_target'])}" in " ".join(result.output.split())
    trials = pd.read_csv(drifting / "trials.csv")
    assert set(trials["setup"]) == {"mine"}, "the setup as the spec labels it"
    assert trials["parametrization"].isna().all() and trials["optimizer"].isna().all(), "no built-in preset named"


def test_verify_advice_on_a_drift_comes_from_the_measured_error(runner: CliRunner, drifting: Path) -> None:
    result = invoke(runner, "verify", "--width", "256", "--from", str(drifting), "--correct-drift", "--span", "1",
                    "--step", "1")
    assert result.exit_code == 0, result.output
    target = json.loads((drifting / "verify.json").read_text())["targets"][0]
    assert abs(target["error"]) < 0.25, "the corrected line predicts the drifting optimum"
    advice = next(w for w in target["warnings"] if w.startswith("setup 'mine' drifts"))
    assert "off by about" not in " ".join(result.output.split()) and "off by about" not in advice
    assert f"the drift-corrected η* is off by {target['error']:+.2f} octaves" in advice
    assert advice in " ".join(result.output.split())


def _decimals(value: float) -> int:
    text = f"{value:.15g}"
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def _digits(value: float) -> int:
    return len(f"{abs(value):.15e}".split("e")[0].replace(".", "").rstrip("0"))


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_a_transfer_file_writes_each_number_at_the_precision_it_carries(runner: CliRunner, tmp_path: Path,
                                                                       fmt: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "trials.csv", "curves.csv"):
        (run / name).write_bytes((BASELINE / name).read_bytes())
    out = tmp_path / f"t.{fmt}"
    result = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--out", str(out), "--format", fmt)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text()) if fmt == "json" else yaml.safe_load(out.read_text())
    assert undeclared(doc) == [] and doc["source"]["kind"] == SWEEP, "a built-in sweep's file holds the layout's"
    prediction = doc["prediction"]
    for value in (doc["log2_lr"], prediction["log2_lr"], *prediction["interval"], prediction["half_width"],
                  prediction["extrapolated_doublings"], doc["implied_error_octaves"], doc["source"]["slope"]):
        assert _decimals(value) <= 3, value
    assert _digits(doc["lr"]) <= 5 and doc["config"]["optimizer"]["lr"] == doc["lr"]
    assert doc["log2_lr"] == octaves(math.log2(doc["lr"])), "lr and log2_lr carry one another"
    assert all(_digits(group["init_std"]) <= 12 for group in doc["param_groups"])
    check_derived_sections(doc, load_config_file(out), out)  # train --config takes it as written


def test_precision_rules() -> None:
    assert octaves(-2.389999999999943) == -2.39 and lr_digits(0.19078240112007744) == 0.19078
    assert str(octaves(-1.469e-14)) == "0.0" and math.isnan(octaves(math.nan))
    assert written({"lr": 0.19078240112007744, "interval": [-4.2500000001, -0.63], "x": 0.30000000000000004,
                    "n": 3}) == {"lr": 0.19078, "interval": [-4.25, -0.63], "x": 0.3, "n": 3}


@pytest.mark.parametrize("command", [["transfer", "--width", "1024"], ["verify", "--width", "128"]])
def test_a_missing_run_directory_is_said_to_be_missing(runner: CliRunner, tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "runs" / "nonexistent"
    result = invoke(runner, *command, "--from", str(missing))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert f"{missing}: no such directory" in result.output and "not a sweep run directory" not in result.output


def test_trial_outside_a_sweep_ends_a_script_in_one_line(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != TRIAL_DIR_ENV}
    script = tmp_path / "train.py"
    script.write_text("import mutransfer\n\nvalues = mutransfer.trial()\n")
    ended = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert ended.returncode == 1 and "Traceback" not in ended.stderr, ended.stderr
    assert ended.stderr.strip().startswith("error: no trial:") and len(ended.stderr.strip().splitlines()) == 1
    caught = subprocess.run([sys.executable, "-c", "import mutransfer\ntry:\n    mutransfer.trial()\n"
                             "except mutransfer.UserError as exc:\n    print('caught', exc)\n"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert caught.returncode == 0 and caught.stdout.startswith("caught no trial:"), caught.stderr


@pytest.mark.parametrize("tokens", [(1e6,), (1e6, 4e6)], ids=["line", "law"])
def test_an_uncalibrated_imports_verdict_line_says_why(runner: CliRunner, tmp_path: Path,
                                                       tokens: tuple[float, ...]) -> None:
    rows = [{"width": width, "tokens": budget, "lr": 2.0**k,
             "loss": 3 + 0.1 * (k + 2 + 0.75 * math.log2(width) + 0.3 * math.log2(budget / 1e6)) ** 2 + 2 / width}
            for width in (64, 128, 256, 512) for budget in tokens for k in range(-14, -2)]
    pd.DataFrame(rows).to_csv(tmp_path / "runs.csv", index=False)
    axes = ["--axis", "width"] + (["--axis", "tokens"] if len(tokens) > 1 else [])
    result = invoke(runner, "import", str(tmp_path / "runs.csv"), "--lr", "lr", "--loss", "loss", *axes,
                    "--out", str(tmp_path / "imported"))
    assert result.exit_code == 0, result.output
    verdict = "imported: width slope -0.75" if len(tokens) == 1 else "imported: law log2 η*"
    line = next(line for line in result.output.splitlines() if line.startswith(verdict))
    dof = 2 if len(tokens) == 1 else 8 - 3
    assert "UNCALIBRATED" in line and f"σ_b rests on {dof} residual degrees of freedom" in line, line
    assert "import a table with a seed column" in line
    assert ("inconclusive — UNCALIBRATED" if len(tokens) == 1 else "inconclusive (UNCALIBRATED)") in line


def test_trials_csv_names_only_the_presets_a_trainer_spec_chooses(tmp_path: Path) -> None:
    (tmp_path / "drift.py").write_text(DRIFTING_TRAINER)
    spec = {"name": "labels", "trainer": {"command": [sys.executable, "drift.py", "--lr", "{lr}"]},
            "setups": {"chosen": ["parametrization=sp", "optimizer=adamw"], "plain": []}, "widths": [32]}
    (tmp_path / "labels.yaml").write_text(yaml.safe_dump(spec))
    loaded = load_spec(str(tmp_path / "labels.yaml"))
    cfg: Any = SimpleNamespace(parametrization=SimpleNamespace(name="sp"), optimizer=SimpleNamespace(name="adamw"))
    assert dict(setup_names(loaded, "chosen", cfg)) == {"parametrization": "sp", "optimizer": "adamw"}
    assert dict(setup_names(loaded, "plain", cfg)) == {"parametrization": None, "optimizer": None}
    assert dict(setup_names(replace(loaded, trainer=None), "plain", cfg)) == {"parametrization": "sp",
                                                                             "optimizer": "adamw"}


def test_train_refuses_a_trainer_transfer_and_names_the_command(runner: CliRunner, drifting: Path,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    assert invoke(runner, "transfer", "--width", "512", "--from", str(drifting), "--out", str(out)).exit_code == 0
    before = out.read_bytes()
    result = invoke(runner, "train", "--config", str(out), "--out", str(tmp_path / "train"))
    at_target = " ".join(yaml.safe_load(before)["trainer"]["at_target"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "ran your own trainer" in result.output and at_target in " ".join(result.output.split())
    assert out.read_bytes() == before and not (tmp_path / "train").exists()


def test_verify_from_a_relative_run_directory_runs_the_trainer_in_its_own_folder(
        runner: CliRunner, drifting: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    work = tmp_path / "work"
    shutil.copytree(drifting, work / "run")
    monkeypatch.chdir(work)
    result = invoke(runner, "verify", "--width", "128", "--from", "run", "--span", "1", "--step", "1")
    assert result.exit_code == 0, result.output
    target = json.loads((work / "run" / "verify.json").read_text())["targets"][0]
    assert target["width"] == 128 and target["measured"]["x_star"] is not None
    assert list((work / "run" / "trials").glob("verify-*/trial-*/result.json")), "the trainer wrote where it was told"
