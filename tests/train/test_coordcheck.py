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


@pytest.mark.parametrize("optimizer", ["muon", pytest.param("adamw", marks=pytest.mark.slow)])
def test_mup_is_stable_everywhere(runner: CliRunner, tmp_path: Path, optimizer: str) -> None:
    code, output, report = run(runner, tmp_path, "parametrization=mup", f"optimizer={optimizer}")
    unstable = {m: e for m, e in report["modules"].items() if e["verdict"] != "stable"}
    assert code == 0 and report["stable"], unstable
    assert "all modules stable" in output
    table = pd.read_csv(tmp_path / "cc" / "coord_check.csv")
    assert list(table.columns) == ["width", "step", "module", "quantity", "value", "seed"]
    assert set(table["quantity"]) == {"forward", "update", "dependency", "weight_update"}
    assert {"embed.weight", "lm_head.weight", "blocks.0.attn.q.weight"} <= set(
        table[table["quantity"] == "weight_update"]["module"])
    assert {"block0.attn", "block0.mlp", "block0.resid"} <= set(table[table["quantity"] == "dependency"]["module"])
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


@pytest.mark.long
@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_broken_readout_is_caught_at_the_logits(runner: CliRunner, tmp_path: Path, optimizer: str) -> None:
    """A readout whose LR exponent is zeroed shows at the logits.

    Covered in CI by `tests/train/test_coordcheck.py::test_a_broken_table_fails_strict_naming_what_moved` (Muon's
    broken readout caught by name)."""
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


MUP_C = {"muon": {"readout": 1, "hidden": 0}, "adam": {"readout": 1, "hidden": 1}, "sgd": {"readout": 1, "hidden": 0}}
"""μP's LR exponents (configs/parametrization/mup.yaml) that the broken tables move by ±½."""


def broken(optimizer: str, mistake: str) -> list[str]:
    family = {"adamw": "adam"}.get(optimizer, optimizer)
    key = "parametrization.roles"
    role, sign = {"readout+": ("readout", 0.5), "readout-": ("readout", -0.5), "hidden+": ("hidden", 0.5),
                  "hidden-": ("hidden", -0.5)}.get(mistake, (None, 0.0))
    if role is not None:
        return [f"{key}.{role}.c.{family}={MUP_C[family][role] + sign}"]
    return {"embedding_init": [f"{key}.embedding.b=0.5"], "sp": ["parametrization=sp"]}[mistake]


EXPECTED = {"readout+": "lm_head.weight", "readout-": "lm_head.weight", "hidden+": "blocks.1.mlp.up.weight",
            "hidden-": "blocks.1.mlp.up.weight", "embedding_init": "embed.weight", "sp": None}
"""The module a broken table must be named by (None: any), as scripts/coord_check_bands.py measured."""
QUICK = [("muon", "readout+")]
"""The lazy readout that the logits alone missed; the rest of the matrix runs with ``-m long``."""


def _broken_cases(quick: bool) -> list:  # noqa: ANN401 - pytest params
    cases = []
    for optimizer in ("muon", "adamw", "sgd"):
        for mistake in EXPECTED:
            if ((optimizer, mistake) in QUICK) == quick:
                cases.append(pytest.param(optimizer, mistake, marks=() if quick else pytest.mark.long,
                                          id=f"{optimizer}-{mistake}"))
    return cases


def _caught(runner: CliRunner, tmp_path: Path, optimizer: str, mistake: str) -> None:
    code, output, report = run(runner, tmp_path, "parametrization=mup", f"optimizer={optimizer}",
                               *broken(optimizer, mistake))
    flagged = {m: e for m, e in report["modules"].items() if e["verdict"] != "stable"}
    assert code == 1 and flagged, output
    module = EXPECTED[mistake]
    if module is not None and not (optimizer == "sgd" and mistake == "readout-"):
        assert module in flagged and flagged[module]["worst"]["quantity"] == "weight_update", flagged
        assert module in output


@pytest.mark.parametrize("optimizer, mistake", _broken_cases(quick=True))
def test_a_broken_table_fails_strict_naming_what_moved(runner: CliRunner, tmp_path: Path, optimizer: str,
                                                       mistake: str) -> None:
    _caught(runner, tmp_path, optimizer, mistake)


@pytest.mark.parametrize("optimizer, mistake", _broken_cases(quick=False))
def test_every_broken_table_fails_strict(runner: CliRunner, tmp_path: Path, optimizer: str, mistake: str) -> None:
    """The rest of the matrix (17 coord checks): ``python -m pytest -m long``.

    Covered in CI by `tests/train/test_coordcheck.py::test_a_broken_table_fails_strict_naming_what_moved` (the
    lazy readout the logits alone missed) and `tests/train/test_coordcheck.py::test_sp_adamw_updates_grow_and_strict_fails`."""
    _caught(runner, tmp_path, optimizer, mistake)


@pytest.mark.slow
def test_mup_sgd_is_stable_and_every_matrix_and_branch_is_measured(runner: CliRunner, tmp_path: Path) -> None:
    code, output, report = run(runner, tmp_path, "parametrization=mup", "optimizer=sgd")
    assert code == 0 and report["stable"], {m: e for m, e in report["modules"].items() if e["verdict"] != "stable"}
    table = pd.read_csv(tmp_path / "cc" / "coord_check.csv")
    updated = set(table[table["quantity"] == "weight_update"]["module"])
    assert {"embed.weight", "lm_head.weight", "blocks.0.attn.q.weight"} <= updated
    dependent = set(table[table["quantity"] == "dependency"]["module"])
    assert {"block0.attn", "block0.mlp", "block0.resid", "block1.attn", "block1.mlp"} <= dependent


def test_a_dead_branch_shows_in_its_own_dependency_not_the_blocks() -> None:
    """Zeroing the MLP's output matrix kills the branch: its dependency is 0 while the block's (the skip
    connection's) stays near 1."""
    import torch

    from mutransfer.config import compose
    from mutransfer.model_kinds import build_model
    from mutransfer.train.coordcheck import _measure

    cfg = compose(["model.width=64", "model.depth=2"])
    model, _ = build_model(cfg, 256, torch.device("cpu"))
    with torch.no_grad():
        model.blocks[1].mlp.down.weight.zero_()
    gen = torch.Generator().manual_seed(0)
    probes = [torch.randint(0, 256, (4, 32), generator=gen) for _ in range(2)]
    rows, _ = _measure(model, probes, None, {}, ("width", 64), 0, 0)
    dependency = {r["module"]: r["value"] for r in rows if r["quantity"] == "dependency"}
    assert dependency["block1.mlp"] == 0.0 and dependency["block0.mlp"] > 0.05
    assert dependency["block1.resid"] > 0.5
