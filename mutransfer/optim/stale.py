"""The first step's check that an optimizer built from a model steps that model's parameters. FSDP2's
``fully_shard`` replaces every parameter with a DTensor: an optimizer built before it holds tensors that never
get a gradient, skips them (a parameter without a gradient is skipped by design) and trains nothing, silently."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from ..errors import UserError

__all__ = ["refuse_stale_parameters"]


def refuse_stale_parameters(optimizer: torch.optim.Optimizer, model: nn.Module) -> RemovableHandle:
    """Before ``optimizer``'s first step, refuse it (a ``UserError`` naming ``fully_shard`` and the order to use)
    when none of its parameters has a gradient or is among ``model``'s parameters. The check runs until a step
    passes it, then removes itself (and its reference to ``model``); returns its handle."""

    def check(opt: torch.optim.Optimizer, _args: Any, _kwargs: Any) -> None:
        params = [p for group in opt.param_groups for p in group["params"]]
        # A gradient on any of them means the step trains: FSDP2 may still hold unsharded parameters on the
        # model here (set_reshard_after_backward(False)) while its sharded ones, the optimizer's, hold the grads.
        if not any(p.grad is not None for p in params):
            current = {id(p) for p in model.parameters()}
            if not any(id(p) in current for p in params):
                raise UserError("the optimizer steps none of the model's parameters: they were replaced after "
                                "build_optimizer (fully_shard turns them into DTensors), so it would train nothing",
                                "call fully_shard on the model first, then mutransfer.build_optimizer(model, plan)")
        handle.remove()

    handle = optimizer.register_step_pre_hook(check)
    return handle
