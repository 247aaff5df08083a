"""A user's model module found next to the spec (or in ``model.factory_path``) without PYTHONPATH, by the sweep
and by every later command that rebuilds the model from the run directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke

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


def _spec(folder: Path, text_file: Path, module: str, **model: str) -> Path:
    spec = {"name": "own", "widths": [32, 64], "seeds": [0],
            "setups": {"mup_adamw": {"overrides": ["parametrization=mup", "optimizer=adamw"]}},
            "search": {"key": "optimizer.lr", "log2_min": -8, "log2_max": -4, "step": 2, "sampler": "grid",
                       "extend": False, "noise_seeds": 0},
            "model": {"factory": f"{module}:make", "roles": ROLES, **model},
            "overrides": ["parametrization.base_width=32", "train.steps=4", "train.batch_size=4", "train.seq_len=16",
                          "train.eval_every=0", "train.eval_batches=1", "data=text", f"data.path={text_file}"]}
    path = folder / "own.yaml"
    path.write_text(yaml.safe_dump(spec))
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
