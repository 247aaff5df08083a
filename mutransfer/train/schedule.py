"""The learning-rate schedule: the factor each step's LR is multiplied by."""

from __future__ import annotations

import math

from ..schema import TrainConfig

__all__ = ["schedule_factor"]


def schedule_factor(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup_frac`` of the steps, then linear/cosine/constant decay to ``min_lr_frac``."""
    warmup = int(round(cfg.warmup_frac * cfg.steps))
    if step < warmup:
        return (step + 1) / warmup
    if cfg.schedule == "constant" or cfg.steps <= warmup:
        return 1.0
    progress = (step - warmup) / max(1, cfg.steps - warmup)
    shape = 1.0 - progress if cfg.schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
    return cfg.min_lr_frac + (1.0 - cfg.min_lr_frac) * shape
