"""The simple gradient noise scale B_simple = tr(Σ)/|G|², measured without per-example gradients.

From McCandlish, Kaplan, Amodei and the OpenAI Dota Team, "An Empirical Model of Large-Batch Training"
(2018), Appendix A: the squared norm of a mean gradient over B examples has expectation
E|g_B|² = |G|² + tr(Σ)/B (G the true gradient, Σ the per-example gradient covariance), so norms at two batch
sizes B_small < B_big give unbiased estimates of both terms:

    |G|²  ≈ (B_big·|g_big|² − B_small·|g_small|²) / (B_big − B_small)
    tr(Σ) ≈ (|g_small|² − |g_big|²) / (1/B_small − 1/B_big)

Each is averaged over measurements before their ratio is taken (a ratio of averages: the ratio of two noisy
estimates is biased). Here an example is one sequence of ``train.seq_len`` tokens: ``k`` micro-batches of
``b`` sequences give |g_small|² (the mean of their squared norms, B_small = b) and |g_big|² (the squared norm
of their mean, B_big = k·b). The measurement reads its own batches and leaves the model, its gradients, its
optimizer and the global random state as they were, so training is unchanged.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence, TypeVar

import numpy as np
import torch
from torch import Tensor, nn

from ..schema import TrainConfig
from .data import Batches

__all__ = ["NOISE_MICRO_BATCHES", "NOISE_SEED", "NOISE_FIELDS", "noise_estimates", "noise_scale",
           "noise_batches", "trial_squared_norms", "gradient_norms", "measure_noise", "run_noise_scale"]

NOISE_MICRO_BATCHES = 4
"""k, the micro-batches of one measurement: B_small = ``train.batch_size``, B_big = k × ``train.batch_size``."""
NOISE_SEED = 1_618_033_988
"""Added to ``train.seed`` to seed the measurement's own batch sampler (training and evaluation use others)."""
NOISE_FIELDS = ("noise_g2", "noise_trace", "noise_scale")
"""The keys of one evaluation's measurement: the estimates of |G|² and tr(Σ), and their ratio."""

LossFn = Callable[[nn.Module, Tensor, Tensor], Tensor]
Value = TypeVar("Value", float, np.ndarray)


def noise_estimates(small_sq: Value, big_sq: Value, b_small: float, b_big: float) -> tuple[Value, Value]:
    """The unbiased estimates (|G|², tr(Σ)) from the squared gradient norms at batch sizes ``b_small`` <
    ``b_big`` (floats or arrays of them)."""
    if not 0 < b_small < b_big:
        raise ValueError(f"need 0 < b_small < b_big, got b_small={b_small}, b_big={b_big}")
    g2 = (b_big * big_sq - b_small * small_sq) / (b_big - b_small)
    trace = (small_sq - big_sq) / (1 / b_small - 1 / b_big)
    return g2, trace


def noise_scale(g2_values: Sequence[float], trace_values: Sequence[float]) -> Optional[float]:
    """B_simple as a ratio of averages, mean(tr(Σ)) / mean(|G|²); None when nothing was measured, or when the
    mean |G|² is not positive or either mean is not finite."""
    if len(g2_values) == 0 or len(trace_values) == 0:
        return None
    g2, trace = float(np.mean(g2_values)), float(np.mean(trace_values))
    if not (math.isfinite(g2) and math.isfinite(trace)) or g2 <= 0:
        return None
    return trace / g2


def noise_batches(tokens: Tensor | np.ndarray, train: TrainConfig, device: torch.device) -> Batches:
    """The measurement's own sampler of ``train.batch_size`` training windows, seeded ``NOISE_SEED`` +
    ``train.seed``: the training batch stream is untouched."""
    return Batches(tokens, train.batch_size, train.seq_len, NOISE_SEED + train.seed, device)


def trial_squared_norms(grads: Sequence[Tensor], stacked: bool) -> Tensor:
    """The squared norm over all ``grads`` of each trial, in float64: shape (K,) for stacked parameters (trial
    index in dim 0), (1,) for an ordinary model."""
    if stacked:
        return torch.stack([g.detach().flatten(1).double().pow(2).sum(1) for g in grads]).sum(0)
    return torch.stack([g.detach().double().pow(2).sum() for g in grads]).sum().reshape(1)


def gradient_norms(model: nn.Module, batches: Sequence[tuple[Tensor, Tensor]], loss: LossFn, stacked: bool,
                   autocast: bool) -> tuple[Tensor, Tensor]:
    """Per trial, (|g_small|², |g_big|²): the mean over the micro-batches of each one's squared gradient norm,
    and the squared norm of their mean gradient, both (K,) in float64.

    ``loss(model, x, y)`` is the mean loss of a micro-batch, one per trial for a stacked model. Raw gradients
    of every parameter that requires one come from ``torch.autograd.grad``: no ``.grad`` is written."""
    params = [p for p in model.parameters() if p.requires_grad]
    total: Optional[list[Tensor]] = None
    small = torch.zeros((), dtype=torch.float64)
    for x, y in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            losses = loss(model, x, y).reshape(-1)
        grads = torch.autograd.grad(losses.sum(), params, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
        small = small + trial_squared_norms(grads, stacked).cpu()
        total = grads if total is None else [t + g for t, g in zip(total, grads)]
    if total is None:
        raise ValueError("the noise measurement needs at least one micro-batch")
    big = trial_squared_norms([t / len(batches) for t in total], stacked).cpu()
    return small / len(batches), big


def measure_noise(model: nn.Module, batches: Sequence[tuple[Tensor, Tensor]], loss: LossFn, stacked: bool,
                  autocast: bool) -> list[tuple[float, float]]:
    """One measurement: per trial, the estimates (|G|², tr(Σ)) from ``k`` = len(batches) ≥ 2 micro-batches of
    ``b`` sequences each (B_small = b, B_big = k·b; units: sequences). Leaves the parameters, their ``.grad``,
    any optimizer and the global random state as they were."""
    if len(batches) < 2:
        raise ValueError(f"the noise measurement needs at least 2 micro-batches, got {len(batches)}")
    b = int(batches[0][0].shape[0])
    devices = sorted({p.device.index or 0 for p in model.parameters() if p.device.type == "cuda"})
    with torch.random.fork_rng(devices=devices):
        small, big = gradient_norms(model, batches, loss, stacked, autocast)
    g2, trace = noise_estimates(small.numpy(), big.numpy(), b, len(batches) * b)
    return [(float(a), float(c)) for a, c in zip(g2, trace)]


def run_noise_scale(evals: Sequence[dict[str, float]], steps: int) -> Optional[float]:
    """A run's noise scale: the ratio of averages over its evaluations in the second half of ``steps`` (all of
    them when none is), skipping evaluations without a finite measurement; None when nothing is left."""
    measured = [e for e in evals if math.isfinite(e.get("noise_g2", math.nan))
                and math.isfinite(e.get("noise_trace", math.nan))]
    late = [e for e in measured if e["step"] > steps / 2] or measured
    return noise_scale([e["noise_g2"] for e in late], [e["noise_trace"] for e in late])
