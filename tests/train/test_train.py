"""Training behaviour: the schedule, the quality bar of the default setup, and the device path."""

from __future__ import annotations

import pytest
import torch

from mutransfer.config import compose
from mutransfer.train.data import load_corpus
from mutransfer.schema import TrainConfig
from mutransfer.train.loop import train_model
from mutransfer.optim.schedule import schedule_factor


def test_schedule_warms_up_then_decays_linearly() -> None:
    cfg = TrainConfig(steps=100, warmup_frac=0.1, schedule="linear", min_lr_frac=0.0)
    factors = [schedule_factor(s, cfg) for s in range(100)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert factors[10] == pytest.approx(1.0) and factors[-1] == pytest.approx(1 / 90)
    assert all(a >= b for a, b in zip(factors[9:], factors[10:]))
    constant = TrainConfig(steps=10, warmup_frac=0.0, schedule="constant")
    assert {schedule_factor(s, constant) for s in range(10)} == {1.0}


@pytest.mark.slow
def test_mup_muon_width_128_learns_the_default_corpus() -> None:
    """Issue acceptance: width 128, depth 2, 16×128 tokens, default LR → val loss < 2.9 nats in 200 steps."""
    cfg = compose(["model.width=128", "model.depth=2", "optimizer=muon", "parametrization=mup", "train.steps=200",
                   "train.batch_size=16", "train.seq_len=128", "train.eval_every=0", "train.device=cpu"])
    result, _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    assert result.status == "ok"
    assert result.val_loss is not None and result.val_loss < 2.9
    assert result.val_loss < result.initial_loss - 2.0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_bf16_training_runs(tiny: list[str]) -> None:
    cfg = compose([*tiny, "train.device=cuda"])
    result, _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    assert result.status == "ok" and result.peak_memory_mb > 0


@pytest.mark.parametrize("extra", [
    ["model.bias=true", "optimizer=muon", "train.grad_clip=1.0"],
    ["model.tie_embeddings=true", "optimizer=adamw", "parametrization=sp"],
    ["optimizer=muon", "optimizer.muon_scale=scheduled"],
    ["optimizer=muon", "optimizer.muon_scale=moonlight", "optimizer.weight_decay=0.1"],
    ["optimizer=sgd", "parametrization=ntk"],
])
def test_model_options_train(tiny: list[str], extra: list[str]) -> None:
    cfg = compose([*tiny, *extra])
    result, plan = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    assert result.status == "ok" and result.val_loss is not None and result.val_loss < result.initial_loss
    roles = {p.role for p in plan.params}
    assert ("bias" in roles) == cfg.model.bias
    assert ("readout" in roles) != cfg.model.tie_embeddings
