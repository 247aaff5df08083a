"""AdamW and SGD for K trials stacked along a leading dimension, each with its own LR: the update math as
pure in-place functions matching ``torch.optim.AdamW`` / ``torch.optim.SGD`` step for step, and thin
optimizers over them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from .base import PerParameter, decay_, descend_, per_trial

__all__ = ["StackedAdamW", "StackedSGD", "adamw_update_", "sgd_update_"]


def adamw_update_(
    p: Tensor,
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    step: int,
    lr: float | Tensor,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float | Tensor,
) -> None:
    """One AdamW step in place, as ``torch.optim.AdamW`` does it (decoupled decay, bias correction); the decay
    may be a tensor of K per-trial values."""
    beta1, beta2 = betas
    decay_(p, lr, weight_decay)
    exp_avg.lerp_(grad, 1.0 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    denom = (exp_avg_sq.sqrt() / math.sqrt(1.0 - beta2**step)).add_(eps)
    descend_(p, exp_avg / denom, lr, 1.0 / (1.0 - beta1**step))


def sgd_update_(
    p: Tensor,
    grad: Tensor,
    buf: Tensor | None,
    lr: float | Tensor,
    momentum: float,
    nesterov: bool,
    weight_decay: float,
) -> Tensor | None:
    """One SGD step in place, as ``torch.optim.SGD`` does it (coupled decay, no dampening); returns the buffer."""
    d_p = grad.add(p, alpha=weight_decay) if weight_decay else grad
    if momentum:
        buf = d_p.clone() if buf is None else buf.mul_(momentum).add_(d_p)
        d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
    descend_(p, d_p, lr)
    return buf


class StackedAdamW(PerParameter):
    """AdamW whose groups may hold per-trial LR tensors (K,) for parameters stacked as (K, ...)."""

    def __init__(self, params: Iterable[dict[str, Any]], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        if not state:
            state.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
        state["step"] += 1
        adamw_update_(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"], per_trial(group["lr"], p),
                      group["betas"], group["eps"], group["weight_decay"])


class StackedSGD(PerParameter):
    """SGD (momentum, Nesterov) whose groups may hold per-trial LR tensors (K,) for stacked parameters."""

    def __init__(self, params: Iterable[dict[str, Any]], lr: float, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "nesterov": nesterov, "weight_decay": weight_decay})

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        state["momentum_buffer"] = sgd_update_(p, p.grad, state.get("momentum_buffer"), per_trial(group["lr"], p),
                                               group["momentum"], group["nesterov"], group["weight_decay"])
