"""Hugging Face mixtures of experts by name (mixtral, qwen2_moe, qwen3_moe, olmoe): every parameter claimed, the
fused (experts, 2·f, d) gate|up and (experts, d, f) down planned per expert and per block, experts initialised by
the hidden rule and the router by the readout rule, Muon orthogonalising each expert on its own, a short training
run through the CLI, and an unmapped architecture, a derived size or an unhookable multiplier refused in one
line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from mutransfer.config import compose
from mutransfer.hf import ARCHITECTURES, config_kwargs, transposed_parameters
from mutransfer.model_kinds import build_model, model_plan
from mutransfer.optim.directions import block_direction, direction
from mutransfer.table.plan import ParamPlan, make_plan
from mutransfer.table.rules import matrix_dims
from mutransfer.train.coordcheck import probe_modules

from conftest import invoke

MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe")
EXPERTS = 4
VOCAB = 64
SMALL = ["model=hf", "model.width=64", "model.depth=1", "parametrization.base_width=32"]


def moe_cfg(architecture: str, *overrides: str):  # noqa: ANN201 - a Config
    return compose([*SMALL, f"model.hf.architecture={architecture}", *overrides])


def expert_size(architecture: str, width: int) -> int:
    """Each expert's hidden size f at ``width`` (the architecture's default ratio)."""
    return round(ARCHITECTURES[architecture].mlp_ratio * width)


@pytest.mark.parametrize("architecture", MOE)
def test_every_parameter_has_a_role_and_experts_are_planned_one_by_one(architecture: str) -> None:
    """4 top-2 experts by default; experts' tensors → expert, gates → router, the rest as Llama; the fused
    (E, 2f, d) gate|up is 2 blocks of (f, d) per expert, down (d, f) per expert, as stored (not transposed)."""
    arch = ARCHITECTURES[architecture]
    cfg = moe_cfg(architecture)
    kwargs = config_kwargs(cfg.model, VOCAB)
    f, d = expert_size(architecture, 64), 64
    assert kwargs[arch.size_keys["intermediate"] or ""] == f
    assert all(kwargs[keyword] == f for keyword in arch.other_intermediate)
    model, plan = build_model(cfg, VOCAB)
    assert type(model).__name__ == arch.model_class and model.config.model_type == architecture
    assert model.config.num_experts_per_tok == 2
    assert [p.name for p in plan.params] == [name for name, _ in model.named_parameters()]
    assert not transposed_parameters(model) and not any(p.transposed for p in plan.params)
    params = dict(model.named_parameters())
    for entry in plan.params:
        if ".experts." in entry.name:
            assert entry.role == "expert", entry.name
        elif entry.name.endswith(("mlp.gate.weight", "shared_expert_gate.weight")):
            assert entry.role == "router", entry.name
        else:
            assert entry.role not in ("expert", "router"), entry.name
    gate_up = plan.by_name()["model.layers.0.mlp.experts.gate_up_proj"]
    down = plan.by_name()["model.layers.0.mlp.experts.down_proj"]
    router = plan.by_name()["model.layers.0.mlp.gate.weight"]
    assert gate_up.shape == (EXPERTS, 2 * f, d) and down.shape == (EXPERTS, d, f) and router.shape == (EXPERTS, d)
    assert gate_up.blocks == 2 and down.blocks == 1
    assert matrix_dims("expert", gate_up.shape, blocks=2) == (f, d) and matrix_dims("expert", down.shape) == (d, f)
    base_f = expert_size(architecture, 32)
    assert gate_up.scale_shape == (base_f, 32) and down.scale_shape == (32, base_f)
    for entry in (gate_up, down):
        for expert in params[entry.name].detach():
            assert abs(float(expert.std()) - entry.init_std) < 0.15 * entry.init_std, entry.name
    moe_block = probe_modules(model)["block0.mlp"]
    assert moe_block is model.model.layers[0].mlp and type(moe_block).__name__.endswith("SparseMoeBlock")


def _twin(entry: ParamPlan, role: str, width: int) -> ParamPlan:
    """The plan of a lone ``role`` matrix with one logical block's shape of ``entry`` (at ``width``)."""
    dout, din = matrix_dims(entry.role, entry.shape, blocks=entry.blocks)
    base_dout, base_din = matrix_dims(entry.role, entry.base_shape, blocks=entry.blocks)
    cfg = moe_cfg("mixtral", f"model.width={width}")
    return make_plan({"w": (dout, din)}, {"w": (base_dout, base_din)}, {"w": role}, width, cfg.parametrization,
                     cfg.optimizer).params[0]


@pytest.mark.parametrize("architecture", MOE)
def test_mup_gives_experts_the_hidden_rule_and_the_router_the_readout_rule(architecture: str) -> None:
    """Under μP with Muon, at widths 32 and 64 (base 32), an expert's entry is a hidden matrix's of its
    per-expert, per-block shape and the router's the readout's; so the init std halves with the width for the
    router and the LM head and goes × 1/√2 for the experts and the attention."""
    plans = {width: model_plan(moe_cfg(architecture, f"model.width={width}"), VOCAB).by_name() for width in (32, 64)}
    pairs = (("model.layers.0.mlp.experts.gate_up_proj", "hidden"), ("model.layers.0.mlp.experts.down_proj", "hidden"),
             ("model.layers.0.mlp.gate.weight", "readout"))
    for width, plan in plans.items():
        for name, role in pairs:
            twin = _twin(plan[name], role, width)
            assert (plan[name].init_std, plan[name].lr_factor, plan[name].shape_factor, plan[name].update) == \
                pytest.approx((twin.init_std, twin.lr_factor, twin.shape_factor, twin.update)), (width, name)

    def ratio(name: str) -> float:
        return plans[64][name].init_std / plans[32][name].init_std

    for name in ("model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"):
        assert ratio(name) == pytest.approx(ratio("model.layers.0.self_attn.q_proj.weight")) == \
            pytest.approx(1 / math.sqrt(2))
    assert ratio("model.layers.0.mlp.gate.weight") == pytest.approx(ratio("lm_head.weight")) == pytest.approx(0.5)


def test_muon_orthogonalises_each_expert_and_block_on_its_own() -> None:
    """The direction of a fused (E, 2f, d) gate|up gradient is Newton–Schulz of each expert's gate and up apart."""
    model, plan = build_model(moe_cfg("mixtral"), VOCAB)
    batch = torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(0))
    model(batch, labels=batch).loss.backward()
    entry = plan.by_name()["model.layers.0.mlp.experts.gate_up_proj"]
    grad = model.get_parameter(entry.name).grad
    assert grad is not None
    fused = block_direction(entry.update, grad, blocks=entry.blocks)
    f = grad.shape[1] // 2
    apart = torch.stack([torch.cat([direction("spectral", g[:f]), direction("spectral", g[f:])]) for g in grad])
    torch.testing.assert_close(fused, apart, rtol=1e-5, atol=1e-6)
    assert (fused - direction("spectral", grad)).abs().max() > 1e-3  # one Newton–Schulz per expert is not the same


@pytest.mark.parametrize("architecture", MOE)
def test_a_short_training_run_ends_with_a_finite_loss(architecture: str, runner, tmp_path: Path,  # noqa: ANN001
                                                      text_file: Path) -> None:
    out = tmp_path / "run"
    result = invoke(runner, "train", *SMALL, f"model.hf.architecture={architecture}", "train.steps=3",
                    "train.batch_size=2", "train.seq_len=16", "train.eval_every=3", "train.eval_batches=1",
                    "train.threads=1", "data=text", f"data.path={text_file}", "--out", str(out))
    assert result.exit_code == 0, result.output
    done = json.loads((out / "result.json").read_text())
    assert done["status"] == "ok" and done["steps"] == 3 and math.isfinite(done["val_loss"])


def test_an_unmapped_architecture_a_derived_size_or_a_hooked_router_is_one_line(runner) -> None:  # noqa: ANN001
    """An architecture not shipped names the shipped ones; a size mutransfer derives names its key; NTK's router
    multiplier (a hook cannot scale a router that returns its top-k) names the router."""
    result = invoke(runner, "train", *SMALL, "model.hf.architecture=deepseek_v3", "train.steps=1")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "unknown model.hf.architecture 'deepseek_v3'" in result.output
    assert all(name in result.output for name in ARCHITECTURES)
    result = invoke(runner, "show", *SMALL, "model.hf.architecture=qwen2_moe",
                    "model.hf.config.shared_expert_intermediate_size=8")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "shared_expert_intermediate_size is set by mutransfer; set model.hf.mlp_ratio instead" in result.output
    result = invoke(runner, "train", *SMALL, "model.hf.architecture=mixtral", "parametrization=ntk",
                    "optimizer=adamw", "train.steps=1")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "'model.layers.0.mlp.gate.weight' (router) has forward multiplier" in result.output
