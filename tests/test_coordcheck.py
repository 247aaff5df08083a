"""coord-check: μP is stable per module; SP grows where the theory says; a broken preset is caught."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.analysis.stability import fit_slopes, requirement, verdicts

WIDTHS = "32,64,128,256"


def run(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[int, str, dict]:
    out = tmp_path / "cc"
    result = invoke(runner, "coord-check", *args, "--widths", WIDTHS, "--strict", "--out", str(out))
    report = json.loads((out / "coord_check.json").read_text()) if (out / "coord_check.json").exists() else {}
    return result.exit_code, result.output, report


@pytest.mark.parametrize("optimizer", ["muon", "adamw"])
def test_mup_is_stable_everywhere(runner: CliRunner, tmp_path: Path, optimizer: str) -> None:
    code, output, report = run(runner, tmp_path, "parametrization=mup", f"optimizer={optimizer}")
    unstable = {m: e for m, e in report["modules"].items() if e["verdict"] != "stable"}
    assert code == 0 and report["stable"], unstable
    assert "all modules stable" in output
    table = pd.read_csv(tmp_path / "cc" / "coord_check.csv")
    assert list(table.columns) == ["width", "step", "module", "quantity", "value", "seed"]
    assert set(table["quantity"]) == {"forward", "update", "dependency", "weight_update"}
    assert sorted(table["width"].unique()) == [32, 64, 128, 256] and table["step"].max() == 5
    assert table[(table["quantity"] == "update")]["step"].min() == 1
    assert (tmp_path / "cc" / "coord_check.png").is_file()


def test_sp_adamw_updates_grow_and_strict_fails(runner: CliRunner, tmp_path: Path) -> None:
    code, output, report = run(runner, tmp_path, "parametrization=sp", "optimizer=adamw")
    assert code == 1 and not report["stable"]
    slopes = pd.DataFrame(report["slopes"])
    hidden_updates = slopes[(slopes["quantity"] == "update") & slopes["module"].str.contains(r"\.(?:attn|mlp)$")]
    assert (hidden_updates["slope"] > 0.5).all()
    logit_update = slopes[(slopes["quantity"] == "update") & (slopes["module"] == "logits")]
    assert (logit_update["slope"] > 0.5).all()
    for module in ("block0.attn", "block0.mlp", "logits"):
        assert report["modules"][module]["verdict"] == "grows"
        assert module in output


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_broken_readout_is_caught_at_the_logits(runner: CliRunner, tmp_path: Path, optimizer: str) -> None:
    family = "adam" if optimizer == "adamw" else "muon"
    code, _, report = run(runner, tmp_path, "parametrization=mup", f"optimizer={optimizer}",
                          f"parametrization.roles.readout.c.{family}=0", "--steps", "10")
    assert code == 1
    assert report["modules"]["logits"]["verdict"] == "grows"


def test_requirements_and_verdicts_on_synthetic_slopes() -> None:
    widths = np.array([32, 64, 128, 256])
    rows = []
    for seed in (0, 1):
        for w in widths:
            rows += [{"width": w, "step": 1, "module": "flat", "quantity": "update", "value": 1.0 + 0.01 * seed,
                      "seed": seed},
                     {"width": w, "step": 1, "module": "grow", "quantity": "update", "value": float(w), "seed": seed},
                     {"width": w, "step": 0, "module": "logits", "quantity": "forward", "value": w**-0.5,
                      "seed": seed}]
    slopes = fit_slopes(pd.DataFrame(rows))
    result = verdicts(slopes)
    assert result["modules"]["flat"]["verdict"] == "stable"
    assert result["modules"]["grow"]["verdict"] == "grows"
    assert result["modules"]["grow"]["worst"]["slope"] == pytest.approx(1.0)
    assert result["modules"]["logits"]["verdict"] == "stable"
    assert requirement("update", "logits", 3).low == -0.5


@pytest.mark.parametrize("args, needle", [
    (["--widths", "32"], "at least two widths"),
    (["--widths", "32,48"], "width 48"),
    (["--widths", "a,b"], "comma-separated integers"),
    (["--steps", "0"], "--steps 0"),
    (["--lr", "-1"], "--lr -1"),
    (["model.widht=3"], "model.widht"),
])
def test_bad_coord_check_input(runner: CliRunner, tmp_path: Path, args: list[str], needle: str) -> None:
    result = invoke(runner, "coord-check", *args, "--out", str(tmp_path / "cc"))
    assert result.exit_code == 2 and needle in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "cc").exists()
