from __future__ import annotations

from pathlib import Path

import pytest
import torch

from mutransfer.config import compose
from mutransfer.model.apply import build_optimizer, initialize
from mutransfer.model.build import gpt_plan
from mutransfer.model.gpt import GPT, check_roles
from mutransfer.schema import ROLES, ModelConfig, MoEConfig


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("moe", [None, MoEConfig(every=2)])
def test_every_parameter_has_exactly_one_role(bias: bool, moe: MoEConfig | None) -> None:
    model = GPT(ModelConfig(width=64, depth=2, bias=bias, moe=moe), vocab_size=256)
    names = [name for name, _ in model.named_parameters()]
    assert sorted(names) == sorted(model.roles)
    expected = set(ROLES.names()) - ({"bias"} if not bias else set()) - ({"expert", "router"} if moe is None else set())
    assert set(model.roles.values()) == expected
    assert model.roles["embed.weight"] == "embedding"
    assert model.roles["lm_head.weight"] == "readout"
    assert model.roles["blocks.0.mlp.down.weight"] == "hidden"
    assert model.roles["final_norm.weight"] == "gain"


def test_role_check_catches_missing_and_extra() -> None:
    model = GPT(ModelConfig(width=32, depth=1), vocab_size=16)
    roles = dict(model.roles)
    roles.pop("embed.weight")
    with pytest.raises(ValueError, match="embed.weight"):
        check_roles(model, roles)
    with pytest.raises(ValueError, match="ghost"):
        check_roles(model, {**model.roles, "ghost.weight": "hidden"})


def test_roles_survive_state_dict_round_trip(tmp_path: Path) -> None:
    """A trained state saved to disk loads into a fresh model and into a torch.compile-wrapped one (keys
    prefixed ``_orig_mod.``): the same outputs, every tensor under its role, and the plan's optimizer built on
    the wrapped model gives each parameter its own role's LR."""
    config = ModelConfig(width=32, depth=1)
    plan = gpt_plan(compose(["model.width=32", "model.depth=1", "optimizer=adamw"]), 16)
    model = GPT(config, vocab_size=16)
    initialize(model, plan, seed=0)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    idx = torch.randint(0, 16, (2, 8))
    want = model(idx)[0]

    fresh = GPT(config, vocab_size=16)
    initialize(fresh, plan, seed=1)
    assert torch.isfinite(want).all() and not torch.allclose(fresh(idx)[0], want)
    fresh.load_state_dict(torch.load(path))
    assert torch.equal(fresh(idx)[0], want)
    assert fresh.roles == model.roles and sorted(fresh.roles) == sorted(n for n, _ in fresh.named_parameters())

    wrapped = torch.compile(GPT(config, vocab_size=16))
    state = torch.load(path)
    assert set(wrapped.state_dict()) == {f"_orig_mod.{k}" for k in state}
    wrapped.load_state_dict({f"_orig_mod.{k}": v for k, v in state.items()})
    assert torch.equal(wrapped._orig_mod(idx)[0], want) and wrapped._orig_mod.roles == model.roles

    plain_lrs = {g["name"]: g["lr"] for g in build_optimizer(fresh, plan).param_groups}
    wrapped_lrs = {g["name"].removeprefix("_orig_mod."): g["lr"] for g in build_optimizer(wrapped, plan).param_groups}
    assert wrapped_lrs == plain_lrs and len(set(plain_lrs.values())) > 1


def test_sizes_derive_from_width_and_head_dim() -> None:
    model = GPT(ModelConfig(width=96, depth=3, head_dim=32, mlp_ratio=4), vocab_size=256)
    assert len(model.blocks) == 3
    assert model.blocks[0].attn.n_head == 3
    assert tuple(model.blocks[0].mlp.up.weight.shape) == (384, 96)
    assert tuple(model.lm_head.weight.shape) == (256, 96)


def test_causal_and_multipliers_apply() -> None:
    torch.manual_seed(0)
    model = GPT(ModelConfig(width=32, depth=1), vocab_size=16)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    idx = torch.randint(0, 16, (2, 20))
    logits, _ = model(idx)
    changed = idx.clone()
    changed[:, 12:] = (changed[:, 12:] + 1) % 16
    logits2, _ = model(changed)
    assert torch.equal(logits[:, :12], logits2[:, :12])
    assert not torch.allclose(logits[:, 12:], logits2[:, 12:])
    model.set_multipliers({"lm_head.weight": 0.5})
    halved, _ = model(idx)
    torch.testing.assert_close(halved, 0.5 * logits)
