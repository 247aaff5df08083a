"""Hugging Face models (issue 21): built from their config classes at any width, every parameter claimed by a
shipped role map, GPT-2's Conv1D and fused q|k|v stepped exactly as the nn.Linear / separate-matrix model,
tied embeddings refused or one role, the attention-scale check, Trainer's optimizer, sweeps and coord checks."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

import mutransfer
from mutransfer.config import compose
from mutransfer.errors import UserError
from mutransfer.hf.architectures import SIZE_KEYS
from mutransfer.hf import ARCHITECTURES, config_kwargs, hf_model, trainer_optimizer, transposed_parameters
from mutransfer.model.apply import build_optimizer
from mutransfer.model.build import module_plan
from mutransfer.model_kinds import build_model, model_plan

from conftest import invoke

REPO = Path(__file__).resolve().parents[2]
SMALL = ["model=hf", "model.width=64", "model.depth=2", "parametrization.base_width=32"]


def hf_cfg(*overrides: str, architecture: str = "llama"):  # noqa: ANN201 - a Config
    return compose([*SMALL, f"model.hf.architecture={architecture}", *overrides])


@pytest.mark.parametrize("architecture", ["llama", "gpt2"])
def test_sizes_follow_the_width_and_every_parameter_has_a_role(architecture: str) -> None:
    """hidden = width, heads = width / head_dim, intermediate a constant multiple of the width at every width,
    layers = depth, vocabulary from the data, untied; every parameter of the real model is in the plan."""
    ratio = ARCHITECTURES[architecture].mlp_ratio
    keys = ARCHITECTURES[architecture].size_keys
    assert set(keys) == set(SIZE_KEYS)
    for width in (32, 64, 128):
        cfg = hf_cfg(f"model.width={width}", architecture=architecture)
        kwargs = config_kwargs(cfg.model, 256)
        assert kwargs[keys["width"]] == width and kwargs[keys["heads"]] == width // 32
        assert kwargs[keys["intermediate"]] == ratio * width and kwargs[keys["depth"]] == 2
        assert kwargs["vocab_size"] == 256 and kwargs["tie_word_embeddings"] is False
    cfg = hf_cfg(architecture=architecture)
    model, plan = build_model(cfg, 256)
    assert type(model).__name__ == ARCHITECTURES[architecture].model_class
    assert [p.name for p in plan.params] == [name for name, _ in model.named_parameters()]
    roles = {p.name: p.role for p in plan.params}
    assert roles["lm_head.weight"] == "readout" and list(roles.values()).count("embedding") in (1, 2)
    assert sum(p.in_block for p in plan.params) == len([n for n in roles if ".0." in n or ".1." in n])
    weight = dict(model.named_parameters())[next(p.name for p in plan.params if p.role == "hidden")]
    planned = next(p for p in plan.params if p.role == "hidden")
    assert abs(float(weight.detach().std()) - planned.init_std) < 0.1 * planned.init_std


def test_grouped_query_heads_and_ratio() -> None:
    cfg = hf_cfg("model.head_dim=16", "parametrization.base_width=32", "model.hf.heads_per_kv=2",
                 "model.hf.mlp_ratio=2.5")
    model, _ = build_model(cfg, 256)
    attn = model.model.layers[0].self_attn
    assert model.config.num_attention_heads == 4 and model.config.num_key_value_heads == 2
    assert tuple(attn.k_proj.weight.shape) == (32, 64) and model.config.intermediate_size == 160


def test_show_prints_every_parameter_of_a_real_llama(runner) -> None:  # noqa: ANN001
    result = invoke(runner, "show", "model=hf", "model.hf.architecture=llama", "model.width=64",
                    "parametrization.base_width=32")
    assert result.exit_code == 0, result.output
    model = hf_model(hf_cfg().model, 256)
    for name, _ in model.named_parameters():
        assert name[:40] in result.output
    assert "LlamaForCausalLM" in result.output and "untied" in result.output
    assert "warning" not in result.output


def test_a_parameter_no_pattern_claims_is_named() -> None:
    model = hf_model(hf_cfg().model, 256)
    roles = {k: v for k, v in ARCHITECTURES["llama"].roles.items() if k != "*norm.weight"}
    with pytest.raises(UserError, match="model.layers.0.input_layernorm.weight"):
        mutransfer.parametrize(model, roles, width=64, base_width=64)


def test_parametrize_takes_a_shipped_map_by_name() -> None:
    cfg = hf_cfg()
    model = hf_model(cfg.model, 256)
    with torch.device("meta"):
        small = hf_model(hf_cfg("model.width=32").model, 256)
    plan = mutransfer.parametrize(model, roles="llama", width=64, base_width=32, base_model=small)
    assert plan.by_name().keys() == model_plan(cfg, 256).by_name().keys()
    assert [p.init_std for p in plan.params] == [p.init_std for p in model_plan(cfg, 256).params]
    with pytest.raises(UserError, match="roles='bert' is not a shipped role map"):
        mutransfer.parametrize(model, roles="bert", width=64, base_width=64)


def linear_twin(model: nn.Module) -> nn.Module:
    """The same GPT-2 with every Conv1D rewritten as an nn.Linear holding the transposed weight."""
    twin = copy.deepcopy(model)
    for name, module in list(twin.named_modules()):
        if type(module).__name__ == "Conv1D":
            din, dout = module.weight.shape
            linear = nn.Linear(din, dout)
            with torch.no_grad():
                linear.weight.copy_(module.weight.T)
                linear.bias.copy_(module.bias)
            parent, _, child = name.rpartition(".")
            setattr(twin.get_submodule(parent), child, linear)
    return twin


@pytest.mark.parametrize("optimizer", ["muon", "adamw"])
def test_conv1d_steps_as_the_same_model_with_linear_layers(optimizer: str) -> None:
    """Init, shape factor and one optimizer step of GPT-2 (Conv1D, (din, dout)) equal those of the same model
    rewritten with nn.Linear, within fp32 rounding."""
    cfg = hf_cfg(f"optimizer={optimizer}", architecture="gpt2")
    model, plan = build_model(cfg, 256)
    assert {p.name for p in plan.params if p.transposed} == transposed_parameters(model)
    assert len(transposed_parameters(model)) == 8
    twin = linear_twin(model)
    with torch.device("meta"):
        base = linear_twin(hf_model(hf_cfg("model.width=32", architecture="gpt2").model, 256))
    twin_plan = module_plan(twin, base, ARCHITECTURES["gpt2"].roles, 64, cfg.parametrization, cfg.optimizer,
                            blocks=ARCHITECTURES["gpt2"].blocks)
    assert not any(p.transposed for p in twin_plan.params)
    for ours, theirs in zip(plan.params, twin_plan.params):
        assert (ours.init_std, ours.lr_factor, ours.shape_factor, ours.scale_shape) == \
            (theirs.init_std, theirs.lr_factor, theirs.shape_factor, theirs.scale_shape), ours.name
    batch = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    for net, net_plan in ((model, plan), (twin, twin_plan)):
        optimizer_ = build_optimizer(net, net_plan)
        net(batch, labels=batch).loss.backward()
        optimizer_.step()
    twin_params = dict(twin.named_parameters())
    for name, param in model.named_parameters():
        expected = twin_params[name].T if name in transposed_parameters(model) else twin_params[name]
        torch.testing.assert_close(param, expected, rtol=1e-5, atol=1e-6)


class Fused(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, -1)
        return q * k + v


class Separate(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(x) * self.k(x) + self.v(x)


def test_fused_projection_is_orthogonalised_per_block() -> None:
    """A fused q|k|v declared as 3 blocks takes the step of the separate matrices; undeclared, it does not (one
    Newton-Schulz over the fused matrix and shape factor √3)."""
    roles = {"*.weight": "hidden", "*.bias": "bias"}
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(1))

    separate = Separate(32)
    fused, undeclared = Fused(32), Fused(32)
    mutransfer.parametrize(separate, roles, width=32, base_width=32)
    for module in (fused, undeclared):
        with torch.no_grad():
            module.qkv.weight.copy_(torch.cat([separate.q.weight, separate.k.weight, separate.v.weight]))
            module.qkv.bias.copy_(torch.cat([separate.q.bias, separate.k.bias, separate.v.bias]))
    for module, blocks in ((separate, None), (fused, {"qkv.*": 3}), (undeclared, None)):
        plan = mutransfer.parametrize(copy.deepcopy(module), roles, width=32, base_width=32, blocks=blocks)  # a copy:
        # parametrize re-initialises, and each module must step from the weights copied above
        optimizer = build_optimizer(module, plan)
        module(x).square().mean().backward()
        optimizer.step()
    expected = torch.cat([separate.q.weight, separate.k.weight, separate.v.weight])
    torch.testing.assert_close(fused.qkv.weight, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(fused.qkv.bias, torch.cat([separate.q.bias, separate.k.bias, separate.v.bias]))
    assert (undeclared.qkv.weight - expected).abs().max() > 1e-3


def test_tied_embeddings_are_untied_by_default_and_refused_where_the_roles_differ(runner) -> None:  # noqa: ANN001
    model, plan = build_model(hf_cfg(), 256)
    assert model.lm_head.weight is not model.model.embed_tokens.weight
    result = invoke(runner, "show", *SMALL, "model.tie_embeddings=true")
    assert result.exit_code == 2 and "model.tie_embeddings=true is refused" in result.output
    assert len(result.output.strip().splitlines()) == 1
    tied_model, tied_plan = build_model(hf_cfg("model.tie_embeddings=true", "parametrization=sp",
                                               "optimizer=adamw"), 256)
    assert tied_model.lm_head.weight is tied_model.model.embed_tokens.weight
    assert "lm_head.weight" not in tied_plan.by_name() and len(tied_plan.params) == len(plan.params) - 1
    tied_copy = hf_model(hf_cfg("model.tie_embeddings=true", "parametrization=sp", "optimizer=adamw").model, 256)
    with pytest.raises(UserError, match="'model.embed_tokens.weight' and 'lm_head.weight' are tied"):
        mutransfer.parametrize(tied_copy, "llama", width=64, base_width=64)


def test_a_tied_parameters_multiplier_goes_on_both_modules() -> None:
    model = hf_model(hf_cfg("model.tie_embeddings=true", "parametrization=sp", "optimizer=adamw").model, 256)
    batch = torch.randint(0, 256, (1, 8))
    plain = model(batch).logits
    handles = mutransfer.attach_multipliers(model, {"model.embed_tokens.weight": 2.0})
    assert len(handles) == 2
    embedded = model.model.embed_tokens(batch)
    torch.testing.assert_close(embedded, 2.0 * model.model.embed_tokens.weight[batch])
    assert not torch.allclose(model(batch).logits, plain)


def test_attention_scale_warning_when_head_dim_grows(runner) -> None:  # noqa: ANN001
    result = invoke(runner, "show", *SMALL, "model.hf.config.num_attention_heads=1")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "head_dim grows with width (32 at base width 32, 64 at width 64)" in text
    assert "1/head_dim" in text and "self_attn.scaling" in text


def test_bad_hf_input_is_one_line(runner) -> None:  # noqa: ANN001
    for words, says in ((["model.hf.architecture=bert"], "unknown model.hf.architecture 'bert'"),
                        (["model.hf.config.hidden_size=3"], "model.hf.config.hidden_size is set by mutransfer"),
                        (["model.hf.config.hiden=3"], "model.hf.config.hiden is not a LlamaConfig setting"),
                        (["model.hf.heads_per_kv=3"], "not divisible by model.hf.heads_per_kv=3"),
                        (["model.hf.config.num_attention_heads=3"], "does not split into 3 attention heads"),
                        (["model.hf.config.num_key_value_heads=1"], "set model.hf.heads_per_kv instead"),
                        (["model.hf.config.head_dim=0"], "transformers cannot build LlamaForCausalLM"),
                        (["parametrization=ntk", "optimizer=adamw", "model.hf.architecture=gpt2"],
                         "different multipliers"),
                        (["parametrization.depth_alpha=1"], "set parametrization.depth_alpha=0 with model=hf")):
        result = invoke(runner, "train", *SMALL, *words, "train.steps=1")
        assert result.exit_code == 2 and says in result.output, (words, result.output)
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_a_batched_hf_sweep_is_refused_before_anything_is_written(runner, tmp_path: Path,  # noqa: ANN001
                                                                  text_file: Path) -> None:
    out = tmp_path / "run"
    result = invoke(runner, "sweep", str(tiny_hf_spec(tmp_path, text_file)), "batch_trials=2", "--out", str(out))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "batch_trials=2 stacks learning-rate trials of the built-in GPT, not model=hf" in result.output
    assert not out.exists()


def test_without_transformers_model_hf_says_how_to_install(runner, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setitem(sys.modules, "transformers", None)
    result = invoke(runner, "show", "model=hf")
    assert result.exit_code == 2
    assert result.output.strip() == ("error: model=hf needs the transformers package, which is not installed; "
                                     "pip install 'mutransfer[hf]'")


def test_trainer_optimizer_follows_the_plan_and_the_schedule() -> None:
    cfg = hf_cfg()
    model, plan = build_model(cfg, 256)
    optimizer, scheduler = trainer_optimizer(model, plan, 10, warmup_frac=0.2)
    by_name = {group["name"]: group for group in optimizer.param_groups}
    assert by_name["lm_head.weight"]["update"] == "row_norm"
    assert by_name["model.layers.0.mlp.up_proj.weight"]["update"] == "spectral"
    peak = {name: plan.lr_of(name) for name in by_name}
    assert by_name["lm_head.weight"]["lr"] == pytest.approx(peak["lm_head.weight"] * 0.5)  # warm-up step 1 of 2
    lrs = []
    for _ in range(10):
        optimizer.step()
        scheduler.step()
        lrs.append(by_name["model.norm.weight"]["lr"] / peak["model.norm.weight"])
    assert lrs[0] == pytest.approx(1.0) and lrs[-1] == pytest.approx(0.125) and lrs == sorted(lrs, reverse=True)
    constant, _ = trainer_optimizer(model, plan)  # the call: the plan's LRs, no schedule
    assert all(group["lr"] == pytest.approx(plan.lr_of(group["name"])) for group in constant.param_groups)


def tiny_hf_spec(tmp_path: Path, text_file: Path) -> Path:
    spec = {"name": "tinyhf", "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                                       "search": {"log2_min": -6, "log2_max": -2}}},
            "widths": [16, 32], "seeds": [0],
            "search": {"key": "optimizer.lr", "step": 2, "sampler": "grid", "extend": False, "noise_seeds": 0},
            "overrides": ["model=hf", "model.depth=1", "model.head_dim=16", "parametrization.base_width=16",
                          "train.steps=8", "train.batch_size=4", "train.seq_len=32", "train.eval_every=4",
                          "train.eval_batches=2", "data=text", f"data.path={text_file}"]}
    path = tmp_path / "tinyhf.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_sweep_transfer_and_trainer_example(runner, tmp_path: Path, text_file: Path) -> None:  # noqa: ANN001
    """A tiny Llama sweep (widths 16, 32), its transfer to width 64, and the example script training the
    transferred model with transformers' Trainer: the loss falls."""
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(tiny_hf_spec(tmp_path, text_file)), "--out", str(run), "--workers", "1",
                    "--threads", "1")
    assert result.exit_code == 0, result.output
    result = invoke(runner, "transfer", "--from", str(run), "--width", "64")
    assert result.exit_code == 0, result.output
    target = run / "transfer_w64.yaml"
    document = yaml.safe_load(target.read_text())
    assert document["config"]["model"]["hf"]["architecture"] == "llama" and document["width"] == 64
    names = [group["name"] for group in document["param_groups"]]
    assert "model.layers.0.mlp.gate_proj.weight" in names and "lm_head.weight" in names
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "hf_trainer_example.py"), str(target),
                          "--steps", "6"], capture_output=True, text=True, check=True, cwd=tmp_path)
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert line["optimizer"] == "SteepestDescent" and line["width"] == 64 and line["steps"] == 6
    assert line["val_loss_after"] < line["val_loss_before"] - 0.1


@pytest.mark.slow
def test_coord_check_on_llama_passes_for_mup_and_names_a_broken_readout(runner, tmp_path: Path) -> None:  # noqa: ANN001
    """Widths 32–128 (the one test past width 64): at 16–64 the correct table's slopes sit within 0.02 of their
    bands, at 32–128 (3 steps) 0.05 away."""
    words = ["--widths", "32,64,128", "--steps", "3", "--seeds", "2", "--strict"]
    good = invoke(runner, "coord-check", "model=hf", "parametrization.base_width=32", *words,
                  "--out", str(tmp_path / "good"))
    assert good.exit_code == 0, good.output
    table = (tmp_path / "good" / "coord_check.csv").read_text()
    assert "blocks.1.mlp.down_proj.weight" in table and "embed.weight" in table
    bad = invoke(runner, "coord-check", "model=hf", "parametrization.base_width=32",
                 "parametrization.roles.readout.c.muon=0", *words, "--out", str(tmp_path / "bad"))
    assert bad.exit_code == 1 and "lm_head.weight" in bad.output.split("not stable:")[-1], bad.output


def test_the_layout_survives_the_plan_file(tmp_path: Path) -> None:
    _, plan = build_model(hf_cfg(architecture="gpt2"), 256)
    plan.save(tmp_path / "plan.yaml")
    loaded = mutransfer.Plan.load(tmp_path / "plan.yaml")
    assert loaded.params == tuple(replace(p, in_block=False) for p in plan.params)  # in_block: depth rules only
    c_attn = loaded.by_name()["transformer.h.0.attn.c_attn.weight"]
    assert c_attn.transposed and c_attn.blocks == 3 and c_attn.scale_shape == (32, 32)
    assert "transposed" not in (tmp_path / "plan.yaml").read_text().split("lm_head.weight")[-1]
