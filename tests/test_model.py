import io

import pytest
import torch

from mutransfer.model.gpt import GPT, check_roles
from mutransfer.schema import ROLES, ModelConfig


@pytest.mark.parametrize("bias", [False, True])
def test_every_parameter_has_exactly_one_role(bias: bool) -> None:
    model = GPT(ModelConfig(width=64, depth=2, bias=bias), vocab_size=256)
    names = [name for name, _ in model.named_parameters()]
    assert sorted(names) == sorted(model.roles)
    assert set(model.roles.values()) == set(ROLES) if bias else set(ROLES) - {"bias"}
    assert model.roles["embed.weight"] == "embedding"
    assert model.roles["lm_head.weight"] == "readout"
    assert model.roles["blocks.1.mlp.down.weight"] == "hidden"
    assert model.roles["final_norm.weight"] == "gain"


def test_role_check_catches_missing_and_extra() -> None:
    model = GPT(ModelConfig(width=32, depth=1), vocab_size=16)
    roles = dict(model.roles)
    roles.pop("embed.weight")
    with pytest.raises(ValueError, match="embed.weight"):
        check_roles(model, roles)
    with pytest.raises(ValueError, match="ghost"):
        check_roles(model, {**model.roles, "ghost.weight": "hidden"})


def test_roles_survive_state_dict_round_trip() -> None:
    model = GPT(ModelConfig(width=32, depth=1), vocab_size=16)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    other = GPT(ModelConfig(width=32, depth=1), vocab_size=16)
    other.load_state_dict(torch.load(buffer))
    assert set(other.state_dict()) == set(model.roles)


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
