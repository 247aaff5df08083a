"""What training K stacked trials needs beyond one model: per-trial gradient clipping, and dropping
finished trials from the model and its optimizer."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from ..optim.base import per_trial

__all__ = ["clip_grad_norm_per_trial_", "keep_trials"]


@torch.no_grad()
def clip_grad_norm_per_trial_(params: Iterable[Tensor], max_norm: float) -> Tensor:
    """``clip_grad_norm_`` for each trial of stacked parameters (K, ...) separately; returns the K norms."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.flatten(1).float().pow(2).sum(1) for g in grads]).sum(0).sqrt()
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(per_trial(coef, g).to(g.dtype))
    return norms


@torch.no_grad()
def keep_trials(model: torch.nn.Module, optimizer: torch.optim.Optimizer, keep: Tensor) -> None:
    """Keep only the trials ``keep`` (indices along the leading dimension) of every stacked parameter of
    ``model``, with its optimizer state and its group's per-trial LR and weight decay; dropped trials cost
    nothing from now on.

    Parameters are replaced by new ones (autograd caches a leaf's shape, so resizing one in place is unsafe);
    the optimizer's groups and state follow them.
    """
    replaced: dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            new = replaced.setdefault(id(p), torch.nn.Parameter(p.detach()[keep], requires_grad=p.requires_grad))
            setattr(module, name, new)
    for group in optimizer.param_groups:
        for key in ("lr", "weight_decay"):
            if isinstance(group.get(key), Tensor):
                group[key] = group[key][keep]
        for i, p in enumerate(group["params"]):
            new = replaced[id(p)]
            state = optimizer.state.pop(p, {})
            optimizer.state[new] = {name: value[keep] if isinstance(value, Tensor) and value.ndim == p.ndim
                                    and value.shape[0] == p.shape[0] else value for name, value in state.items()}
            group["params"][i] = new
