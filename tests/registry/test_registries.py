"""Extending the tool through its registries alone: this module registers a throwaway optimizer family (signed
momentum), a throwaway transfer axis (the context length) and a throwaway role (a learned positional table), and
nothing else in the package knows them. ``show``, a dry run, a sweep and ``transfer`` then work with all three, and
a plugin module named in ``MUTRANSFER_PLUGINS`` registers them in a fresh process."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch
import yaml
from torch import nn
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.registry import FAMILIES, ROLES, TRANSFER_AXES, Axis, OptimizerFamily, Role
from mutransfer.registry.plugins import PLUGINS_ENV, load_plugins

SIGNUM = OptimizerFamily("signum", "adam", f"{__name__}:build_signum", update="sign", decay_rules=("independent",),
                         bowl="adamw")
"""Signed momentum (Bernstein et al., "signSGD"): a step whose size ignores the gradient's scale, so it reads the
abc table's Adam column."""
CONTEXT = Axis("context", "train.seq_len", "context", "contexts", "ctx", "", example="[16, 32]")
POSITIONAL = Role("positional", like="embedding", lookup=True, doc="learned positions: context → width")
MAX_CONTEXT = 64


class Signum(torch.optim.Optimizer):
    """p ← p − η·sign(m), m ← β·m + g, with independent decay; an LR per group that may be a tensor of K per-trial
    LRs (parameters stacked along a leading trial dimension)."""

    def __init__(self, groups: list[dict[str, Any]], lr: float, momentum: float) -> None:
        super().__init__(groups, {"lr": lr, "momentum": momentum, "weight_decay": 0.0})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                m = self.state[p].setdefault("m", torch.zeros_like(p))
                m.mul_(group["momentum"]).add_(p.grad)
                lr, decay = group["lr"], group["weight_decay"]
                if torch.is_tensor(lr):
                    lr = lr.view(-1, *[1] * (p.ndim - 1))
                if torch.is_tensor(decay):
                    decay = decay.view(-1, *[1] * (p.ndim - 1))
                p.mul_(1 - decay).sub_(lr * m.sign())


def build_signum(groups: list[dict[str, Any]], opt: Any, lr: float, stacked: bool) -> torch.optim.Optimizer:
    return Signum(groups, lr=lr, momentum=opt.momentum)


class PositionalGPT(nn.Module):
    """A one-block model with a learned positional table (the throwaway role)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, width)
        self.pos = nn.Embedding(MAX_CONTEXT, width)
        self.norm = nn.RMSNorm(width)
        self.mix = nn.Linear(width, width, bias=False)
        self.head = nn.Linear(width, 256, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx) + self.pos(torch.arange(idx.shape[-1], device=idx.device))  # (B, T, width)
        return self.head(x + self.mix(self.norm(x)))  # (B, T, vocab)


def make_model(width: int) -> nn.Module:
    return PositionalGPT(width)


MODEL_ROLES = {"pos.weight": "positional", "embed.weight": "embedding", "head.weight": "readout", "norm.weight": "gain",
               "*": "hidden"}


@contextlib.contextmanager
def throwaways() -> Iterator[None]:
    with FAMILIES.registered(SIGNUM), TRANSFER_AXES.registered(CONTEXT), ROLES.registered(POSITIONAL):
        yield


@pytest.fixture()
def registered() -> Iterator[None]:
    with throwaways():
        yield
    assert "signum" not in FAMILIES.names() and "context" not in TRANSFER_AXES.names()


def _spec(folder: Path, text_file: Path, log2_max: int = -2) -> Path:
    spec = {"name": "extended", "widths": [32, 64], "contexts": [16, 32], "seeds": [0],
            "setups": {"mup_signum": {"overrides": ["parametrization=mup", "optimizer=adamw", "optimizer.name=signum",
                                                    "optimizer.momentum=0.9"]}},
            "search": {"key": "optimizer.lr", "log2_min": -14, "log2_max": log2_max, "step": 2, "sampler": "grid",
                       "extend": False, "noise_seeds": 0},
            "model": {"factory": f"{__name__}:make_model", "roles": MODEL_ROLES},
            "overrides": ["parametrization.base_width=32", "train.steps=30", "train.batch_size=4", "train.eval_every=0",
                          "train.eval_batches=1", "data=text", f"data.path={text_file}"]}
    path = folder / "extended.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_show_lists_the_throwaway_role_with_the_throwaway_familys_update(registered: None, runner: CliRunner) -> None:
    from mutransfer.api import parametrize

    plan = parametrize(make_model(64), MODEL_ROLES, preset="mup", optimizer="adamw", width=64, base_width=32,
                       factory=make_model, overrides=["optimizer.name=signum"])
    pos = plan.by_name()["pos.weight"]
    embed = plan.by_name()["embed.weight"]
    assert pos.role == "positional" and pos.update == "sign" and pos.eps is None
    assert (pos.init_std, pos.multiplier, pos.lr_factor) == (embed.init_std, embed.multiplier, embed.lr_factor)
    result = invoke(runner, "show", "optimizer.name=signum")
    assert result.exit_code == 0, result.output
    assert "sign" in result.output and "mup + signum" in result.output


def test_a_role_a_preset_lists_is_its_own_and_an_unknown_role_key_is_named(registered: None) -> None:
    from mutransfer.config import compose
    from mutransfer.errors import UserError

    cfg = compose(["optimizer.init.positional=0.5", "parametrization.roles.positional={b: 1, c: {muon: 0.5}}"])
    assert cfg.optimizer.init["positional"] == "0.5" and cfg.optimizer.init["embedding"] != "0.5"
    assert (cfg.parametrization.roles["positional"].b, cfg.parametrization.roles["positional"].c) == (1, {"muon": 0.5})
    inherited = compose([])
    assert inherited.parametrization.roles["positional"] == inherited.parametrization.roles["embedding"]
    one_field = compose(["parametrization.roles.positional.b=1"]).parametrization.roles  # the rest: embedding's
    assert one_field["positional"] == dataclasses.replace(one_field["embedding"], b=1.0)
    with pytest.raises(UserError, match="unknown config key 'optimizer.init.positionl'.*'optimizer.init.positional'"):
        compose(["optimizer.init.positionl=0.5"])


def test_a_dry_run_a_sweep_and_a_transfer_use_the_family_the_axis_and_the_role(registered: None, runner: CliRunner,
                                                                               tmp_path: Path, text_file: Path) -> None:
    spec = _spec(tmp_path, text_file)
    dry = invoke(runner, "sweep", str(spec), "--dry-run", "--out", str(tmp_path / "dry"))
    assert dry.exit_code == 0, dry.output
    assert "┃ context ┃" in dry.output and "21 trials" in dry.output and not (tmp_path / "dry").exists()
    run = tmp_path / "run"
    swept = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert swept.exit_code == 0, swept.output
    assert "2 contexts" in " ".join(swept.output.split())
    import pandas as pd

    trials = pd.read_csv(run / "trials.csv")
    assert sorted(trials["context"].unique()) == [16, 32] and set(trials["status"]) <= {"ok", "diverged"}
    assert len(trials) == 3 * 7  # widths 32 and 64 at context 16, and context 32 at width 32; seven LRs each
    out = tmp_path / "transfer.yaml"
    moved = invoke(runner, "transfer", "--width", "256", "--at", "context=64", "--from", str(run), "--out", str(out))
    assert moved.exit_code == 0, moved.output
    assert "prediction at width 256, context 64:" in moved.output
    doc = yaml.safe_load(out.read_text())
    assert doc["config"]["train"]["seq_len"] == 64 and doc["config"]["optimizer"]["name"] == "signum"
    law = doc["source"]["law"]
    assert law["axes"] == ["width", "context"] and {p["at"]["context"] for p in law["points"]} == {16, 32}
    assert doc["prediction"]["target"] == {"width": 256, "context": 64}
    base = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--out", str(tmp_path / "base.yaml"))
    at_base = yaml.safe_load((tmp_path / "base.yaml").read_text())
    assert base.exit_code == 0 and at_base["config"]["train"]["seq_len"] == 16  # the swept base point's context
    slope = law["coefficients"]["context"]
    assert doc["prediction"]["log2_lr"] - at_base["prediction"]["log2_lr"] == pytest.approx(slope * 2, abs=0.02)
    groups = {g["name"]: g for g in doc["param_groups"]}
    assert groups["pos.weight"]["role"] == "positional" and groups["pos.weight"]["update"] == "sign"


def test_a_plugin_module_registers_the_throwaways_in_a_fresh_process_and_its_sweep_workers(tmp_path: Path,
                                                                                          text_file: Path) -> None:
    plugin = tmp_path / "my_registries.py"
    plugin.write_text(f"from {__name__} import FAMILIES, ROLES, TRANSFER_AXES, SIGNUM, CONTEXT, POSITIONAL\n"
                      "FAMILIES.register(SIGNUM)\nTRANSFER_AXES.register(CONTEXT)\nROLES.register(POSITIONAL)\n")
    here, tests = Path(__file__).parent, Path(__file__).parents[1]  # this module, and conftest beside the folders
    env = {**os.environ, PLUGINS_ENV: "my_registries",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(here), str(tests), os.environ.get("PYTHONPATH", "")])}
    shown = subprocess.run([sys.executable, "-m", "mutransfer", "show", "optimizer.name=signum"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "mup + signum" in shown.stdout
    spec, run = _spec(tmp_path, text_file, log2_max=-10), tmp_path / "run"
    swept = subprocess.run([sys.executable, "-m", "mutransfer", "sweep", str(spec), "--out", str(run), "--workers", "2",
                            "--threads", "1"], env=env, capture_output=True, text=True, timeout=600)
    assert swept.returncode == 0, swept.stderr[-2000:]
    import pandas as pd

    trials = pd.read_csv(run / "trials.csv")  # each spawned worker registered the throwaways before training
    assert len(trials) == 3 * 3 and sorted(trials["context"].unique()) == [16, 32]
    missing = subprocess.run([sys.executable, "-m", "mutransfer", "show"], env={**env, PLUGINS_ENV: "no_such_plugin"},
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "MUTRANSFER_PLUGINS: cannot import 'no_such_plugin'" in missing.stderr


def test_loading_plugins_twice_imports_each_module_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = tmp_path / "counting_plugin.py"
    plugin.write_text("import builtins\nbuiltins.counted_loads = getattr(builtins, 'counted_loads', 0) + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    environ = {PLUGINS_ENV: " counting_plugin , "}
    assert load_plugins(environ) == ("counting_plugin",) and load_plugins(environ) == ("counting_plugin",)
    import builtins

    assert builtins.counted_loads == 1  # type: ignore[attr-defined]
    del builtins.counted_loads  # type: ignore[attr-defined]
    sys.modules.pop("counting_plugin")


def test_a_name_registered_twice_is_refused_and_the_registry_is_unchanged() -> None:
    before = FAMILIES.names()
    with pytest.raises(ValueError, match="optimizer 'muon' is already registered"):
        FAMILIES.register(OptimizerFamily("muon", "muon", "x:y", update="spectral"))
    assert FAMILIES.names() == before
