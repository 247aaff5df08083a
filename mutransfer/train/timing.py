"""Seconds a trial of a config costs on this machine, measured on random tokens: building it, each training
step, one evaluation. The dry run's time estimate and the ``--workers auto`` layout choice are computed from it."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

from ..model.apply import build_optimizer
from ..model_kinds import build_model
from ..schema import Config
from .data import eval_batch_size, vocab_size
from .device import prepare_device, synchronize
from .loop import evaluate, loss_of
from .stacking import clip_grad_norm_per_trial_

__all__ = ["TrialCost", "measure_trial", "measure_step", "evaluations"]


@dataclass(frozen=True)
class TrialCost:
    """One trial's (or one stack of ``trials`` trials') measured seconds on this machine.

    ``setup`` is everything a trial pays once: building the model and optimizer and the first step's extra
    cost over a steady one; ``step`` the median steady step, ``step_low``/``step_high`` its quartiles over the
    timed steps; ``evaluation`` one validation pass of ``train.eval_batches`` batches."""

    setup: float
    step: float
    step_low: float
    step_high: float
    evaluation: float

    def seconds(self, steps: int, evals: int, quantile: str = "median") -> float:
        """A whole trial of ``steps`` steps and ``evals`` evaluations at the median step time, or at the
        quartile named ``low`` or ``high``."""
        per_step = {"median": self.step, "low": self.step_low, "high": self.step_high}[quantile]
        return self.setup + steps * per_step + evals * self.evaluation


def evaluations(steps: int, eval_every: int) -> int:
    """How many validation passes a run of ``steps`` steps makes: every ``eval_every`` steps and at the end."""
    if eval_every <= 0:
        return 1
    return steps // eval_every + (1 if steps % eval_every else 0)


def _timed(action: Callable[[], object], device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    action()
    synchronize(device)
    return time.perf_counter() - start


def measure_trial(cfg: Config, trials: int = 1, min_steps: int = 5, max_steps: int = 30,
                  budget_seconds: float = 1.5) -> TrialCost:
    """Time a trial's parts on the configured device: ``min_steps`` steady steps at least, then more until
    ``budget_seconds`` of stepping or ``max_steps`` (noisy machines get a steadier median from more steps)."""
    device = prepare_device(cfg.train.device, cfg.train.threads)
    vocab = vocab_size(cfg.data)
    stacked = trials if trials > 1 else None
    start = time.perf_counter()
    model, plan = build_model(cfg, vocab, device, trials=stacked)
    optimizer = build_optimizer(model, plan, trial_lrs=[cfg.optimizer.lr] * trials if stacked else None)
    x = torch.randint(0, vocab, (cfg.train.batch_size, cfg.train.seq_len), device=device)
    build = time.perf_counter() - start
    autocast = device.type == "cuda"
    clip = clip_grad_norm_per_trial_ if stacked else torch.nn.utils.clip_grad_norm_

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_of(model, x, x).sum()
        loss.backward()
        if cfg.train.grad_clip > 0:
            clip(model.parameters(), cfg.train.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    first = _timed(step, device)
    times: list[float] = []
    while len(times) < min_steps or (sum(times) < budget_seconds and len(times) < max_steps):
        times.append(_timed(step, device))
    held_out = torch.randint(0, vocab, (eval_batch_size(cfg.train), cfg.train.seq_len), device=device)
    batches = [(held_out, held_out)] * cfg.train.eval_batches
    evaluation = _timed(lambda: evaluate(model, batches, autocast), device)
    low, median, high = statistics.quantiles(times, n=4, method="inclusive")
    return TrialCost(setup=build + max(0.0, first - median), step=median, step_low=low, step_high=high,
                     evaluation=evaluation)


def measure_step(cfg: Config, steps: int = 3, trials: int = 1) -> float:
    """Seconds per steady training step (of ``trials`` stacked trials when > 1): the median of ``steps``."""
    return measure_trial(cfg, trials, min_steps=steps, max_steps=steps, budget_seconds=0.0).step
