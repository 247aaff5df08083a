"""A plan's optimizer for Hugging Face's ``Trainer``: ``Trainer(optimizers=trainer_optimizer(model, plan, steps))``
trains a transferred model with every parameter's LR, eps and update rule from the plan, on the same schedule
as ``mutransfer train``."""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

from ..model.apply import build_optimizer
from ..schema import TrainConfig
from ..table.plan import Plan
from ..optim.schedule import schedule_factor

__all__ = ["trainer_optimizer"]


def trainer_optimizer(model: nn.Module, plan: Plan, steps: Optional[int] = None, *, warmup_frac: float = 0.1,
                      schedule: str = "linear", min_lr_frac: float = 0.0,
                      **overrides: Any) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """The (optimizer, scheduler) pair that ``transformers.Trainer(optimizers=...)`` takes: the plan's optimizer
    (one group per parameter: its LR, Adam eps, update rule and weight decay; ``overrides`` replace optimizer
    settings, e.g. ``weight_decay=0.1``; a weight-decay timescale is a fraction of ``steps``) and a ``LambdaLR`` with ``mutransfer train``'s schedule over ``steps`` optimizer steps
    (warm-up, then linear / cosine / constant decay; Muon's ``scheduled`` shape factor follows the progress).
    Without ``steps`` the LRs stay the plan's throughout (a constant schedule).

    The model must already carry the plan: initialised by it, and with its forward multipliers attached
    (``mutransfer.attach_multipliers``, a no-op under μP, whose multipliers are all 1)."""
    if steps is not None and steps < 1:
        raise ValueError(f"steps={steps} must be the positive number of optimizer steps the Trainer will take")
    optimizer = build_optimizer(model, plan, steps=steps, **overrides)
    if steps is None:
        return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    timing = TrainConfig(steps=steps, warmup_frac=warmup_frac, schedule=schedule, min_lr_frac=min_lr_frac)
    set_progress = getattr(optimizer, "set_progress", None)

    def factor(step: int) -> float:
        if set_progress is not None:
            set_progress(min(step, steps) / steps)
        return schedule_factor(min(step, steps - 1), timing)

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
