"""Seconds per training step of a config on this machine, measured on random tokens: what the dry run's
time estimate and the ``--workers auto`` layout choice are computed from."""

from __future__ import annotations

import time

import torch

from ..model.apply import build_optimizer
from ..model.build import build_model
from ..schema import Config
from .data import vocab_size
from .device import prepare_device, synchronize
from .loop import loss_of

__all__ = ["measure_step"]


def measure_step(cfg: Config, steps: int = 3, trials: int = 1) -> float:
    """Seconds per training step (of ``trials`` stacked trials when > 1), timed after one warm-up step on
    random tokens on the configured device."""
    device = prepare_device(cfg.train.device, cfg.train.threads)
    vocab = vocab_size(cfg.data)
    stacked = trials if trials > 1 else None
    model, plan = build_model(cfg, vocab, device, trials=stacked)
    optimizer = build_optimizer(model, plan, trial_lrs=[cfg.optimizer.lr] * trials if stacked else None)
    x = torch.randint(0, vocab, (cfg.train.batch_size, cfg.train.seq_len), device=device)
    elapsed = 0.0
    for i in range(steps + 1):
        synchronize(device)
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = loss_of(model, x, x).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        synchronize(device)
        if i:
            elapsed += time.perf_counter() - start
    return elapsed / steps
