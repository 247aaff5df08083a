"""The mixture-of-experts GPT (``model=moe``): dropless dispatch against every expert on every token, one batched
matmul per projection, aux-loss-free balancing, the expert and router roles in the abc table, Muon per expert, the
coordinate check's router verdict and the refusals."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.analysis.stability import judge
from mutransfer.config import compose
from mutransfer.errors import UserError
from mutransfer.model.apply import build_optimizer
from mutransfer.model.build import gpt_plan
from mutransfer.model.moe import MoE
from mutransfer.model_kinds import build_model
from mutransfer.optim.newton_schulz import msign
from mutransfer.train.coordcheck import coord_check
from mutransfer.train.data import load_corpus
from mutransfer.train.flops import training_flops
from mutransfer.train.loop import loss_of

VOCAB = 256


def moe_model(*overrides: str) -> tuple[torch.nn.Module, Any]:
    return build_model(compose(["model=moe", "model.width=64", *overrides]), VOCAB)


def first_moe(model: torch.nn.Module) -> MoE:
    return next(m for m in model.modules() if isinstance(m, MoE))


@pytest.mark.parametrize("overrides", [[], ["model.moe.shared_experts=2", "model.bias=true"],
                                       ["model.moe.top_k=1", "model.moe.experts=3"]])
def test_dispatch_equals_every_expert_on_every_token(overrides: list[str]) -> None:
    model, _ = moe_model(*overrides)
    model.eval()
    moe = first_moe(model)
    x = torch.randn(3, 10, 64, generator=torch.Generator().manual_seed(0))
    y = moe(x).reshape(-1, 64)
    tokens = x.reshape(-1, 64)
    chosen, gates = moe.route(tokens)
    e = moe.experts
    up = torch.einsum("nd,efd->enf", tokens, e.up) + (e.up_bias[:, None] if e.up_bias is not None else 0)
    every = torch.einsum("enf,edf->end", F.gelu(up), e.down) + (e.down_bias[:, None] if e.down_bias is not None else 0)
    rows = torch.arange(tokens.size(0))
    reference = sum(every[chosen[:, j], rows] * gates[:, j:j + 1] for j in range(moe.top_k))
    if moe.shared is not None:
        reference = reference + moe.shared(tokens)
    torch.testing.assert_close(y, reference, rtol=1e-5, atol=1e-5)
    assert gates.sum(-1).sub(1).abs().max() < 1e-6
    assert moe.padding == pytest.approx(e.up.size(0) * int(moe.load.max()) / (tokens.size(0) * moe.top_k))
    assert int(moe.load.sum()) == tokens.size(0) * moe.top_k


class _CountMatmuls(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[int, ...]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in (torch.ops.aten.bmm.default, torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
            self.shapes.append(tuple(args[0].shape))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("experts", [4, 16])
def test_the_experts_run_as_two_batched_matmuls_whatever_their_number(experts: int) -> None:
    model, _ = moe_model(f"model.moe.experts={experts}")
    moe = first_moe(model)
    with _CountMatmuls() as counted:
        moe(torch.randn(2, 16, 64))
    batched = [s for s in counted.shapes if len(s) == 3]
    assert len(batched) == 2 and all(s[0] == experts for s in batched)
    assert len(counted.shapes) == 3  # and the router's one matmul


def test_the_balancing_bias_evens_the_load_in_training_and_never_moves_in_evaluation() -> None:
    model, _ = moe_model("model.moe.balance_rate=0.01", "model.depth=1")
    moe = first_moe(model)
    with torch.no_grad():
        moe.router.weight[0] += 0.05  # every token prefers expert 0
    x = torch.randn(4, 16, 64, generator=torch.Generator().manual_seed(1)).abs()
    model.eval()
    moe(x)
    skewed = moe.load.max().item() / moe.load.float().mean().item()
    with torch.no_grad():
        moe(x)
    assert torch.count_nonzero(moe.balance_bias) == 0
    model.train()
    with torch.enable_grad():
        for _ in range(200):
            moe(x)
    balanced = moe.load.max().item() / moe.load.float().mean().item()
    assert skewed > 2.0 and balanced < 1.3


def test_the_validation_loss_is_the_language_model_loss_alone() -> None:
    model, _ = moe_model()
    x = torch.randint(0, VOCAB, (2, 32), generator=torch.Generator().manual_seed(2))
    model.eval()
    with torch.no_grad():
        logits, loss = model(x, x)
    assert loss.item() == pytest.approx(F.cross_entropy(logits.reshape(-1, VOCAB), x.reshape(-1)).item(), rel=1e-6)


def _rows(width: int, *overrides: str) -> dict[str, dict[str, Any]]:
    plan = gpt_plan(compose(["model=moe", f"model.width={width}", "optimizer.lr=0.01", *overrides]), VOCAB)
    rows = {row["name"]: row for row in plan.rows()}
    return {"hidden": rows["blocks.0.attn.q.weight"], "readout": rows["lm_head.weight"],
            "expert": rows["blocks.0.mlp.experts.up"], "router": rows["blocks.0.mlp.router.weight"]}


@pytest.mark.parametrize("overrides", [["parametrization=mup", "optimizer=adamw"], ["parametrization=mup", "optimizer=sgd"],
                                       ["parametrization=mup", "optimizer=muon"], ["parametrization=sp", "optimizer=adamw"],
                                       ["parametrization=ntk", "optimizer=adamw"], ["parametrization=sp_fanin",
                                                                                   "optimizer=sgd"]])
def test_an_expert_scales_as_a_hidden_matrix_and_the_router_as_the_readout(overrides: list[str]) -> None:
    small, large = _rows(64, *overrides), _rows(512, *overrides)
    for role, like in (("expert", "hidden"), ("router", "readout")):
        for key in ("init_std", "multiplier", "lr"):
            assert large[role][key] / small[role][key] == pytest.approx(large[like][key] / small[like][key]), (role, key)
        assert large[role]["update"] == large[like]["update"]
        if large[role].get("eps") is not None:
            assert large[role]["eps"] / small[role]["eps"] == pytest.approx(large[like]["eps"] / small[like]["eps"])


def test_each_expert_is_planned_by_its_own_fan_in_and_fan_out() -> None:
    rows = _rows(256, "parametrization=mup", "optimizer=muon", "model.moe.expert_ratio=0.5")
    up = rows["expert"]
    assert up["shape"] == [8, 512, 256] and up["scale_shape"] == [256, 128]  # one expert's (f, d) at the base width
    f, d = 512, 256
    assert up["init_std"] == pytest.approx(math.sqrt(f / d) / (math.sqrt(d) + math.sqrt(f)))
    assert up["shape_factor"] == pytest.approx(math.sqrt(f / d))


def _per_expert_error(step: torch.Tensor, grad: torch.Tensor, lr: float) -> float:
    """How far a step is from −lr · msign(G_e) for every expert e (relative, worst expert)."""
    reference = torch.stack([-lr * msign(g) for g in grad])
    return max(((s - r).norm() / r.norm()).item() for s, r in zip(step, reference))


def test_muon_orthogonalizes_each_expert_on_its_own_never_the_stacked_tensor() -> None:
    model, plan = moe_model("model.depth=1", "optimizer.momentum=0.0", "optimizer.muon_scale=naive")
    x = torch.randint(0, VOCAB, (4, 32), generator=torch.Generator().manual_seed(3))
    loss_of(model, x, x).backward()
    param = dict(model.named_parameters())["blocks.0.mlp.experts.up"]
    before, grad = param.detach().clone(), param.grad.detach().clone()
    lr = plan.by_name()["blocks.0.mlp.experts.up"].lr_factor * plan.lr
    build_optimizer(model, plan).step()
    assert _per_expert_error(param.detach() - before, grad, lr) < 1e-4
    flattened = (-lr * msign(grad.reshape(-1, grad.size(-1)))).view_as(grad)
    assert _per_expert_error(flattened, grad, lr) > 0.1  # the mistake this test exists to catch


def test_the_expert_and_router_roles_keep_the_abc_symmetry_under_adam(tiny: list[str]) -> None:
    from mutransfer.train.loop import train_model

    def losses(*overrides: str) -> list[float]:
        cfg = compose([*tiny, "model=moe", "model.width=64", "parametrization=mup", "train.eval_every=0",
                       "optimizer=adamw", "optimizer.lr=0.01", "optimizer.eps=1e-6", *overrides])
        result, _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
        return [row["train_loss"] for row in result.curve]

    preset = compose(["model=moe", "parametrization=mup"]).parametrization
    roles = {"expert": preset.roles["hidden"], "router": preset.roles["readout"]}

    def shifted(theta: float, only: str) -> list[str]:
        out = []
        for role, row in roles.items():
            out += [f"parametrization.roles.{role}.a={row.a + theta}", f"parametrization.roles.{role}.b={row.b - theta}"]
            if "c" in only:
                out += [f"parametrization.roles.{role}.c.adam={row.c['adam'] - theta}",
                        f"parametrization.roles.{role}.eps={row.eps + theta}"]
        return out

    reference = losses()
    assert losses(*shifted(1.0, "abc")) == pytest.approx(reference, rel=1e-4, abs=1e-5)
    assert max(abs(x - y) for x, y in zip(losses(*shifted(1.0, "ab")), reference)) > 1e-3


def test_the_flop_count_takes_the_active_experts() -> None:
    dense = compose(["model.width=64"])
    sparse = compose(["model=moe", "model.width=64", "model.moe.experts=8", "model.moe.top_k=2",
                      "model.moe.expert_ratio=0.5"])
    router = 2 * 8 * 64  # the two routers' matrices
    assert training_flops(sparse, 1) - training_flops(dense, 1) == pytest.approx(6 * router)


def test_a_hidden_like_router_is_caught_by_the_coordinate_check() -> None:
    cfg = compose(["model=moe", "model.depth=1", "optimizer=muon", "train.batch_size=8", "train.seq_len=64"])
    corpus = load_corpus(cfg.data, 10_000)
    p = cfg.parametrization
    hidden_like = dataclasses.replace(cfg, parametrization=dataclasses.replace(p, roles={**p.roles,
                                                                                          "router": p.roles["hidden"]}))
    verdicts = {name: judge(coord_check(c, corpus, [32, 64, 128], 3, c.optimizer.lr, [0]))["modules"]
                for name, c in (("readout", cfg), ("hidden", hidden_like))}
    assert verdicts["readout"]["block0.router"]["verdict"] == "stable"
    assert verdicts["readout"]["blocks.0.mlp.router.weight"]["verdict"] == "stable"
    assert verdicts["hidden"]["block0.router"]["verdict"] == "grows"
    assert {"block0.router", "block0.experts", "block0.mlp"} <= set(verdicts["readout"])


@pytest.mark.parametrize(("override", "says"), [
    ("model.moe.top_k=9", "model.moe.top_k=9"), ("model.moe.top_k=0", "model.moe.top_k=0"),
    ("model.moe.experts=0", "model.moe.experts=0"), ("model.moe.shared_experts=-1", "model.moe.shared_experts=-1"),
    ("model.moe.expert_ratio=0.3", "model.moe.expert_ratio=0.3"), ("model.moe.expert_ratio=0.001", "expert hidden"),
    ("model.moe.every=3", "model.moe.every=3"), ("train.parallel=fsdp", "train.parallel=fsdp")])
def test_bad_moe_settings_are_refused_in_one_line(runner: CliRunner, override: str, says: str) -> None:
    result = invoke(runner, "show", "model=moe", override)
    assert result.exit_code == 2, result.output
    assert says in result.output and len(result.output.strip().splitlines()) == 1


def test_stacked_trials_of_a_mixture_of_experts_are_refused(runner: CliRunner, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="model=moe"):
        build_model(compose(["model=moe"]), VOCAB, trials=2)
    spec = tmp_path / "moe.yaml"
    spec.write_text("name: moe\nsetups: {a: {overrides: [model=moe]}}\nwidths: [32, 64]\nbatch_trials: 2\n")
    out = tmp_path / "run"
    result = invoke(runner, "sweep", str(spec), "--dry-run", "--out", str(out))
    assert result.exit_code == 2 and "model=moe" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


def test_the_kept_study_transfers_to_any_width_and_expert_count(runner: CliRunner, tmp_path: Path) -> None:
    """The law of the kept MoE study spans width and the expert count: ``transfer --width 4096 --at experts=64``
    writes the plan of a 4096-wide model with 64 experts."""
    import yaml

    out = tmp_path / "moe_4096.yaml"
    kept = Path(__file__).resolve().parents[2] / "docs" / "data" / "moe"
    result = invoke(runner, "transfer", "--from", str(kept), "--width", "4096", "--at", "experts=64", "--setup", "mup_muon",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(out.read_text())
    groups = {g["name"]: g for g in written["param_groups"]}
    assert groups["blocks.0.mlp.experts.up"]["shape"] == [64, 4096, 4096]
    assert groups["blocks.0.mlp.router.weight"]["shape"] == [64, 4096]
    assert written["width"] == 4096


def test_an_expert_count_target_for_a_dense_sweep_is_refused_in_one_line(runner: CliRunner, tmp_path: Path) -> None:
    dense = Path(__file__).resolve().parents[1] / "baselines" / "smoke"
    out = tmp_path / "t.yaml"
    result = invoke(runner, "transfer", "--from", str(dense), "--width", "1024", "--at", "experts=64", "--out", str(out))
    assert result.exit_code == 2 and "--at experts=64" in result.output and "model.moe" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


def test_show_lists_the_expert_and_router_parameters(runner: CliRunner) -> None:
    result = invoke(runner, "show", "model=moe", "model.width=256")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "blocks.0.mlp" in line]
    assert any("experts.up" in line and "expert" in line and "8×256×256" in line for line in rows), rows
    assert any("router.weight" in line and "router" in line and "row_norm" in line for line in rows), rows
