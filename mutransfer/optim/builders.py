"""The builders the optimizer families name (``registry.families``): parameter groups and the optimizer's config
in, a torch optimizer out; ``stacked`` chooses the variant that steps K stacked trials, each with its own LR."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .stacked import StackedAdamW, StackedSGD
from .steepest import SteepestDescent

if TYPE_CHECKING:
    from ..schema import OptimizerConfig

__all__ = ["adamw", "sgd", "steepest_descent", "NS_DTYPES"]

NS_DTYPES: dict[str, torch.dtype | None] = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16}
"""``optimizer.ns_dtype``: the dtype Newton–Schulz iterates in (auto: bfloat16 on CUDA, float32 on CPU)."""


def adamw(groups: list[dict[str, Any]], opt: "OptimizerConfig", lr: float, stacked: bool) -> torch.optim.Optimizer:
    cls = StackedAdamW if stacked else torch.optim.AdamW
    return cls(groups, lr=lr, betas=(opt.beta1, opt.beta2), eps=opt.eps, weight_decay=0.0)


def sgd(groups: list[dict[str, Any]], opt: "OptimizerConfig", lr: float, stacked: bool) -> torch.optim.Optimizer:
    cls = StackedSGD if stacked else torch.optim.SGD
    return cls(groups, lr=lr, momentum=opt.momentum, nesterov=opt.nesterov and opt.momentum > 0, weight_decay=0.0)


def steepest_descent(groups: list[dict[str, Any]], opt: "OptimizerConfig", lr: float,
                     stacked: bool) -> torch.optim.Optimizer:
    """Muon's steepest descent per role; one class for one trial and for K stacked (per-group LR tensors)."""
    return SteepestDescent(groups, lr=lr, momentum=opt.momentum, nesterov=opt.nesterov, weight_decay=0.0,
                           ns_steps=opt.ns_steps, ns_coeffs=tuple(opt.ns_coeffs), ns_dtype=NS_DTYPES[opt.ns_dtype])
