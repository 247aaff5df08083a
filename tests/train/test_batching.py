"""Trial batching: K learning rates trained as one stacked model give the trials' one-by-one results."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from conftest import SAME_RUN_TOL, assert_same_run, invoke
from mutransfer.config import compose
from mutransfer.train.data import load_corpus
from mutransfer.model.gpt import GPT
from mutransfer.optim.stacked import StackedAdamW, StackedSGD
from mutransfer.optim.steepest import SteepestDescent
from mutransfer.train.stacking import clip_grad_norm_per_trial_, keep_trials
from mutransfer.schema import ModelConfig
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.sweep.plan.trial import auto_trials, trials_per_batch
from mutransfer.train.loop import train_model, train_trials



def test_stacked_gpt_is_k_independent_models() -> None:
    """Logits, per-trial losses and gradients of each slice are those of the ordinary model with its weights."""
    cfg = ModelConfig(width=32, depth=2, head_dim=16, bias=True)
    torch.manual_seed(0)
    singles = [GPT(cfg, 40) for _ in range(3)]
    for model in singles:
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.2)
    stacked = GPT(cfg, 40, trials=3)
    with torch.no_grad():
        for name, p in stacked.named_parameters():
            p.copy_(torch.stack([dict(m.named_parameters())[name] for m in singles]))
    idx = torch.randint(0, 40, (2, 8))
    logits, losses = stacked(idx, idx)
    assert logits.shape == (3, 2, 8, 40) and losses.shape == (3,)
    losses.sum().backward()
    for k, model in enumerate(singles):
        single_logits, loss = model(idx, idx)
        loss.backward()
        torch.testing.assert_close(logits[k], single_logits, atol=1e-5, rtol=1e-5)
        assert float(losses[k].detach()) == pytest.approx(float(loss.detach()), abs=1e-5)
        for name, p in model.named_parameters():
            torch.testing.assert_close(dict(stacked.named_parameters())[name].grad[k], p.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("extra", [
    ["optimizer=adamw", "parametrization=sp"],
    ["optimizer=muon", "parametrization=mup"],
    ["optimizer=sgd", "parametrization=ntk"],
    ["optimizer=muon", "model.bias=true", "train.grad_clip=0.5", "optimizer.weight_decay=0.1"],
    ["optimizer=adamw", "parametrization=mup", "train.grad_clip=0.5", "optimizer.weight_decay=0.1"],
], ids=["adamw", "muon", "sgd", "muon-bias-clip-wd", "adamw-clip-wd"])
def test_batched_trials_match_one_by_one(tiny: list[str], extra: list[str]) -> None:
    cfg = compose([*tiny, "model.depth=2", "train.steps=10", *extra])
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    lrs = [cfg.optimizer.lr * f for f in (0.25, 1.0, 4.0)]
    batched, plan = train_trials(cfg, corpus, lrs)
    assert plan.width == 32 and len(batched) == 3
    for lr, result in zip(lrs, batched):
        alone, _ = train_model(compose([*tiny, "model.depth=2", "train.steps=10", *extra, f"optimizer.lr={lr!r}"]),
                               corpus)
        assert_same_run(result, alone)
    assert len({r.val_loss for r in batched}) == 3  # the LRs made a difference


def test_a_diverged_trial_leaves_the_batch_and_the_others_go_on(tiny: list[str]) -> None:
    overrides = [*tiny, "optimizer=adamw", "parametrization=sp", "train.steps=12"]
    cfg = compose(overrides)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    lrs = [cfg.optimizer.lr, 2.0**6]
    active: list[list[int]] = []
    results, _ = train_trials(cfg, corpus, lrs, on_step=lambda step, losses: active.append(sorted(losses)))
    good, bad = results
    assert bad.status == "diverged" and bad.steps < 12 and bad.val_loss is None
    assert good.status == "ok" and good.steps == 12
    assert active[0] == [0, 1] and active[-1] == [0] and len(active) == 12
    assert_same_run(good, train_model(compose([*overrides, f"optimizer.lr={lrs[0]!r}"]), corpus)[0])
    assert_same_run(bad, train_model(compose([*overrides, f"optimizer.lr={lrs[1]!r}"]), corpus)[0])


def test_a_trial_stopped_at_an_evaluation_leaves_the_batch(tiny: list[str]) -> None:
    cfg = compose([*tiny, "optimizer=muon"])
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    seen: list[tuple[int, int]] = []

    def on_eval(trial: int, step: int, val: float) -> bool:
        seen.append((trial, step))
        return trial == 2

    results, _ = train_trials(cfg, corpus, [cfg.optimizer.lr * f for f in (0.5, 1.0, 2.0)], on_eval=on_eval)
    assert [r.status for r in results] == ["ok", "ok", "stopped"]
    assert [r.steps for r in results] == [6, 6, 3]
    assert seen == [(0, 3), (1, 3), (2, 3), (0, 6), (1, 6)]
    assert all(math.isfinite(r.val_loss) for r in results[:2])


def test_train_trials_refuses_no_learning_rates(tiny: list[str]) -> None:
    cfg = compose(tiny)
    with pytest.raises(ValueError, match="at least one learning rate"):
        train_trials(cfg, load_corpus(cfg.data, cfg.train.seq_len), [])


def _stacked_params(k: int) -> list[torch.nn.Parameter]:
    torch.manual_seed(1)
    return [torch.nn.Parameter(torch.randn(k, 6, 4)), torch.nn.Parameter(torch.randn(k, 5))]


@pytest.mark.parametrize("kind", ["adamw", "sgd", "muon"])
def test_per_trial_lrs_equal_one_optimizer_per_trial(kind: str) -> None:
    """Each slice of a stacked parameter steps as if it had its own optimizer at its own LR."""
    lrs = [0.01, 0.1, 0.3]
    stacked = _stacked_params(3)
    singles = [[torch.nn.Parameter(p.detach()[k].clone()) for p in stacked] for k in range(3)]

    def make(params: list[torch.nn.Parameter], lr: float | torch.Tensor, stacked_opt: bool) -> torch.optim.Optimizer:
        matrix = 3 if stacked_opt else 2
        groups = [{"params": [p], "lr": lr, "update": "spectral" if p.ndim == matrix else "rms"} for p in params]
        if kind == "adamw":
            return (StackedAdamW if stacked_opt else torch.optim.AdamW)(groups, lr=0.1, weight_decay=0.1)
        if kind == "sgd":
            return (StackedSGD if stacked_opt else torch.optim.SGD)(groups, lr=0.1, momentum=0.9, nesterov=True,
                                                                    weight_decay=0.01)
        for g in groups:
            g["scale_shape"] = (6, 4) if g["update"] == "spectral" else None
        return SteepestDescent(groups, lr=0.1, weight_decay=0.1)

    batched = make(stacked, torch.tensor(lrs), True)
    separate = [make(params, lr, False) for params, lr in zip(singles, lrs)]
    for step in range(4):
        torch.manual_seed(10 + step)
        grads = [torch.randn_like(p) for p in stacked]
        for p, g in zip(stacked, grads):
            p.grad = g.clone()
        batched.step()
        for k, (params, opt) in enumerate(zip(singles, separate)):
            for p, g in zip(params, grads):
                p.grad = g[k].clone()
            opt.step()
    for k, params in enumerate(singles):
        for p_stacked, p in zip(stacked, params):
            torch.testing.assert_close(p_stacked.detach()[k], p.detach(), atol=1e-5, rtol=1e-5)


def test_per_trial_clipping_equals_clipping_each_trial() -> None:
    stacked = _stacked_params(3)
    for p in stacked:
        p.grad = torch.randn_like(p) * torch.tensor([0.01, 1.0, 10.0]).view(-1, *(1,) * (p.ndim - 1))
    expected = []
    for k in range(3):
        single = [torch.nn.Parameter(p.detach()[k].clone()) for p in stacked]
        for s, p in zip(single, stacked):
            s.grad = p.grad[k].clone()
        norm = torch.nn.utils.clip_grad_norm_(single, 1.0)
        expected.append((float(norm), [s.grad for s in single]))
    norms = clip_grad_norm_per_trial_(stacked, 1.0)
    for k, (norm, grads) in enumerate(expected):
        assert float(norms[k]) == pytest.approx(norm, rel=1e-5)
        for p, g in zip(stacked, grads):
            torch.testing.assert_close(p.grad[k], g)


def test_keep_trials_slices_parameters_state_lrs_and_decay() -> None:
    model = torch.nn.Module()
    model.a, model.b = _stacked_params(3)
    decay = torch.tensor([1.0, 2.0, 3.0])
    opt = StackedAdamW([{"params": [p], "lr": torch.tensor([0.1, 0.2, 0.3]), "weight_decay": decay}
                        for p in model.parameters()], lr=0.1)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    before = [p.detach().clone() for p in model.parameters()]
    avg = [opt.state[p]["exp_avg"].clone() for p in model.parameters()]
    keep_trials(model, opt, torch.tensor([0, 2]))
    assert [p for g in opt.param_groups for p in g["params"]] == list(model.parameters())
    assert len(opt.state) == 2
    for p, old, a in zip(model.parameters(), before, avg):
        assert p.shape[0] == 2 and p.grad is None
        torch.testing.assert_close(p.detach(), old[[0, 2]])
        torch.testing.assert_close(opt.state[p]["exp_avg"], a[[0, 2]])
        assert opt.state[p]["step"] == 1
    assert [g["lr"].tolist() for g in opt.param_groups] == [pytest.approx([0.1, 0.3])] * 2
    assert [g["weight_decay"].tolist() for g in opt.param_groups] == [[1.0, 3.0]] * 2
    (model.a.sum() + model.b.sum()).backward()
    opt.step()
    assert model.a.grad.shape == (2, 6, 4)


@pytest.mark.slow
def test_a_batched_sweep_finds_what_a_one_by_one_sweep_finds(runner: CliRunner, spec_file: Path,
                                                              tmp_path: Path) -> None:
    """Four LRs per study: one batch of three and a single trial, against every trial one by one."""
    ranges = ["setups.sp_adamw.search.log2_max=-3", "setups.mup_muon.search.log2_max=0"]
    one = invoke(runner, "sweep", str(spec_file), "--out", str(tmp_path / "one"), "batch_trials=1", *ranges)
    assert one.exit_code == 0, one.output
    three = invoke(runner, "sweep", str(spec_file), "--out", str(tmp_path / "three"), "batch_trials=3", *ranges)
    assert three.exit_code == 0, three.output
    columns = ["setup", "width", "log2_lr"]
    a = pd.read_csv(tmp_path / "one" / "trials.csv").sort_values(columns).reset_index(drop=True)
    b = pd.read_csv(tmp_path / "three" / "trials.csv").sort_values(columns).reset_index(drop=True)
    assert len(a) == len(b) == 16
    assert (a[columns] == b[columns]).all().all() and (a["status"] == b["status"]).all()
    finite = a["val_loss"].notna()
    assert (a.loc[finite, "val_loss"] - b.loc[finite, "val_loss"]).abs().max() < SAME_RUN_TOL
    assert set(b["batch_trials"]) == {1, 3} and set(a["batch_trials"]) == {1}
    again = invoke(runner, "sweep", str(spec_file), "--out", str(tmp_path / "three"), "batch_trials=2", *ranges)
    assert again.exit_code == 0, again.output  # the batch size is how a sweep runs, not what it computes


def test_auto_batches_only_lr_searches_and_only_on_a_gpu() -> None:
    assert [auto_trials("cuda", w) for w in (64, 256, 512, 1024, 2048, 4096)] == [8, 8, 4, 2, 1, 1]
    assert {auto_trials("cpu", w) for w in (32, 256)} == {1}
    key = SweepPlan.of(load_spec("default")).studies[0]
    cpu = compose(["train.device=cpu", "model.width=64"])
    assert trials_per_batch("auto", key, cpu) == 1 and trials_per_batch(4, key, cpu) == 4
    other = replace(key, search=replace(key.search, key="optimizer.weight_decay"))
    assert trials_per_batch("auto", other, compose(["train.device=auto", "model.width=64"])) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_batched_trials_on_cuda_match_one_by_one_within_bf16(tiny: list[str]) -> None:
    overrides = [*tiny, "optimizer=muon", "train.device=cuda"]
    cfg = compose(overrides)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    lrs = [cfg.optimizer.lr * f for f in (0.5, 1.0, 2.0)]
    batched, _ = train_trials(cfg, corpus, lrs)
    for lr, result in zip(lrs, batched):
        alone, _ = train_model(compose([*overrides, f"optimizer.lr={lr!r}"]), corpus)
        assert result.status == alone.status == "ok"
        assert result.val_loss == pytest.approx(alone.val_loss, abs=0.05)
