"""The loop every optimizer here shares: step each parameter that has a gradient on its own, with an LR
that is a float or a tensor of K per-trial LRs for parameters stacked along a leading trial dimension."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["PerParameter", "closure_loss", "per_trial", "descend_", "decay_"]


class PerParameter(torch.optim.Optimizer):
    """An optimizer whose step updates each parameter with a gradient on its own: ``_update(group, p, state)``."""

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """Perform one optimization step."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(group, p, self.state[p])
        return loss


def closure_loss(closure: Any) -> Any:
    """The loss an optimizer step's closure returns, evaluated with gradients on; None without a closure."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def per_trial(lr: float | Tensor, p: Tensor) -> float | Tensor:
    """A float LR as it is; a tensor of K per-trial LRs shaped (K, 1, ...) to broadcast over ``p`` (K, ...)."""
    if isinstance(lr, Tensor):
        return lr.view(-1, *(1,) * (p.ndim - 1))
    return lr


def descend_(p: Tensor, d: Tensor, lr: float | Tensor, scale: float = 1.0) -> None:
    """p ← p − scale · lr · d in place, for a float LR or a per-trial one from ``per_trial``."""
    if isinstance(lr, Tensor):
        p.addcmul_(d, lr, value=-scale)
    else:
        p.add_(d, alpha=-lr * scale)


def decay_(p: Tensor, lr: float | Tensor, weight_decay: float | Tensor) -> None:
    """Decoupled weight decay in place, p ← p · (1 − lr · weight_decay), as ``torch.optim.AdamW`` does it; ``lr``
    from ``per_trial``, ``weight_decay`` a float or a tensor of K per-trial values."""
    if isinstance(weight_decay, Tensor):
        p.mul_(1.0 - lr * per_trial(weight_decay, p))
    elif weight_decay:
        p.mul_(1.0 - lr * weight_decay)
