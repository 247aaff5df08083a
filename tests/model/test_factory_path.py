"""A user's model module found next to the spec (or in ``model.factory_path``) without PYTHONPATH, by the sweep
and by every later command that rebuilds the model from the run directory; the spec's fused weights
(``model.blocks``) planned as the Python API plans them, and a bad ``model`` key refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

import pytest
import yaml
from typer.testing import CliRunner

import fused_qkv_model
from conftest import invoke, refused_in_one_line
from mutransfer.api import parametrize
from mutransfer.config import config_from_dict
from mutransfer.model_kinds import model_plan
from mutransfer.sweep.plan.trial import setup_config
from mutransfer.sweep.spec.sweep_spec import load_spec

MODULE = '''
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, width)
        self.head = nn.Linear(width, 256, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(idx))


def make(width: int) -> nn.Module:
    return Tiny(width)
'''
ROLES = {"embed.weight": "embedding", "head.weight": "readout"}


def _spec(folder: Path, text_file: Path, module: str, roles: Mapping[str, str] = ROLES, optimizer: str = "adamw",
          **model: Any) -> Path:
    spec = {"name": "own", "widths": [32, 64], "seeds": [0],
            "setups": {f"mup_{optimizer}": {"overrides": ["parametrization=mup", f"optimizer={optimizer}"]}},
            "search": {"key": "optimizer.lr", "log2_min": -8, "log2_max": -4, "step": 2, "sampler": "grid",
                       "extend": False, "noise_seeds": 0},
            "model": {"factory": f"{module}:make", "roles": dict(roles), **model},
            "overrides": ["parametrization.base_width=32", "train.steps=4", "train.batch_size=4", "train.seq_len=16",
                          "train.eval_every=0", "train.eval_batches=1", "data=text", f"data.path={text_file}"]}
    path = folder / "own.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _forget(module: str) -> None:
    sys.modules.pop(module, None)
    assert all(module not in p for p in sys.path)


def test_module_next_to_the_spec_is_found_by_sweep_and_transfer(tmp_path: Path, text_file: Path,
                                                                  runner: CliRunner,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    module = "own_model_beside_spec"
    project = tmp_path / "project"
    project.mkdir()
    (project / f"{module}.py").write_text(MODULE)
    spec = _spec(project, text_file, module)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = invoke(runner, "sweep", str(spec), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    _forget(module)
    result = invoke(runner, "transfer", "--width", "128", "--from", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert "model.factory own_model_beside_spec:make" in result.output and "depth 2" not in result.output
    _forget(module)


def test_factory_path_is_relative_to_the_spec_and_named_in_the_error(tmp_path: Path, text_file: Path,
                                                                     runner: CliRunner) -> None:
    module = "own_model_in_models_folder"
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / f"{module}.py").write_text(MODULE)
    spec = _spec(tmp_path, text_file, module, factory_path="models")
    result = invoke(runner, "sweep", str(spec), "--dry-run")
    assert result.exit_code == 0, result.output
    _forget(module)
    wrong = _spec(tmp_path, text_file, module, factory_path="nowhere")
    result = invoke(runner, "sweep", str(wrong), "--dry-run")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert f"looked in {tmp_path / 'nowhere'}" in result.output and "model.factory_path=FOLDER" in result.output


FUSED = Path(fused_qkv_model.__file__).parent
"""The folder of the fused q|k|v model's module, the specs' ``model.factory_path``."""


def _fused_spec(folder: Path, text_file: Path, **model: Any) -> Path:
    return _spec(folder, text_file, "fused_qkv_model", fused_qkv_model.ROLES, "muon", factory_path=str(FUSED),
                 **model)


def test_a_specs_fused_weight_is_planned_as_the_api_plans_it(tmp_path: Path, text_file: Path) -> None:
    spec = load_spec(str(_fused_spec(tmp_path, text_file, blocks=fused_qkv_model.BLOCKS)))
    cfg = setup_config(spec, "mup_muon", [*spec.setups[0].overrides, *spec.overrides, "model.width=64"])
    planned = model_plan(cfg, fused_qkv_model.VOCAB)
    api = parametrize(fused_qkv_model.make(64), fused_qkv_model.ROLES, "mup", "muon", width=64, base_width=32,
                      factory=fused_qkv_model.make, blocks=fused_qkv_model.BLOCKS)
    unfused = parametrize(fused_qkv_model.make(64), fused_qkv_model.ROLES, "mup", "muon", width=64, base_width=32,
                          factory=fused_qkv_model.make)
    assert planned.by_name()["qkv.weight"].blocks == 3 and planned.by_name()["qkv.weight"].scale_shape == (32, 32)
    assert planned.params == api.params
    assert planned.by_name()["qkv.weight"] != unfused.by_name()["qkv.weight"]


def test_a_sweep_of_a_specs_fused_weight_trains_and_records_it(tmp_path: Path, text_file: Path,
                                                                 runner: CliRunner) -> None:
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(_fused_spec(tmp_path, text_file, blocks=fused_qkv_model.BLOCKS)),
                    "--out", str(run))
    assert result.exit_code == 0, result.output
    recorded = yaml.safe_load((run / "config.yaml").read_text())
    assert recorded["spec"]["model"]["blocks"] == {"*qkv.weight": 3}
    cfg = config_from_dict(recorded["setups"]["mup_muon"])
    assert model_plan(cfg, fused_qkv_model.VOCAB).by_name()["qkv.weight"].blocks == 3


@pytest.mark.parametrize(("model", "says"), [
    ({"block": {"*qkv.weight": 3}}, "unknown key 'model.block' in sweep spec; did you mean 'blocks'? a model "
     "section holds factory, roles, factory_path, in_block, blocks (see docs/sweeps.md#your-own-model-modelfactory)"),
    ({"blocks": {"*qkv.weight": "three"}}, "model.blocks={'*qkv.weight': 'three'} must map parameter-name patterns "
     "to numbers of blocks"),
    ({"blocks": {"*qkv.weight": 0}}, "model.blocks.*qkv.weight=0 is not a number of blocks"),
    ({"in_block": "layers.*"}, "model.in_block='layers.*' is not a list of parameter-name patterns"),
])
def test_a_bad_model_section_is_refused_in_one_line_naming_its_keys(tmp_path: Path, text_file: Path,
                                                                      runner: CliRunner, model: dict[str, Any],
                                                                      says: str) -> None:
    refused_in_one_line(runner, _fused_spec(tmp_path, text_file, **model), [], says, tmp_path / "run")
