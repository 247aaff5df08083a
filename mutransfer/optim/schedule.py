"""The learning-rate schedule: the factor each step's LR is multiplied by, and the training progress the
``scheduled`` Muon scale follows."""

from __future__ import annotations

import math

from ..schema import TrainConfig

__all__ = ["schedule_factor", "warmup_steps", "cooldown_start", "progress"]


def warmup_steps(cfg: TrainConfig) -> int:
    """The warm-up's length: ``warmup_steps`` when set, else ``warmup_frac`` of the steps."""
    return cfg.warmup_steps if cfg.warmup_steps is not None else int(round(cfg.warmup_frac * cfg.steps))


def cooldown_start(cfg: TrainConfig) -> int:
    """``schedule: wsd``: the steps before the final decay (warm-up and the constant phase); the decay takes the
    last ``cooldown_frac`` of the steps, at least one step when the fraction is positive."""
    cooldown = int(round(cfg.cooldown_frac * cfg.steps))
    return cfg.steps - (max(1, cooldown) if cfg.cooldown_frac > 0 else 0)


def schedule_factor(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up, then linear/cosine/constant decay to ``min_lr_frac`` over the rest of the steps; ``wsd``
    (warm-up, stable, decay: Hägele et al., "Scaling Laws and Compute-Optimal Training Beyond Fixed Training
    Durations", 2024) holds the peak until ``cooldown_start`` and decays linearly to ``min_lr_frac`` after it, so
    every horizon shares the steps before its decay. ``step`` counts from 0."""
    warmup = warmup_steps(cfg)
    if step < warmup:
        return (step + 1) / warmup
    if cfg.schedule == "constant" or cfg.steps <= warmup:
        return 1.0
    if cfg.schedule == "wsd":
        warmup = max(cooldown_start(cfg), warmup)  # the decay is linear from here, as ``linear``'s from the warm-up
        if step < warmup:
            return 1.0
    progress = (step - warmup) / max(1, cfg.steps - warmup)
    shape = 1.0 - progress if cfg.schedule in ("linear", "wsd") else 0.5 * (1.0 + math.cos(math.pi * progress))
    return cfg.min_lr_frac + (1.0 - cfg.min_lr_frac) * shape


def progress(step: int, cfg: TrainConfig) -> float:
    """Training progress in [0, 1) before step ``step`` (from 0), for the ``scheduled`` Muon scale: the fraction of
    the steps done, or under ``wsd`` the fraction of the decay done (0 through the warm-up and the constant phase,
    so a trunk shared by several horizons is the same for each)."""
    if cfg.schedule != "wsd":
        return step / cfg.steps
    start = max(cooldown_start(cfg), warmup_steps(cfg))
    return max(0, step - start) / max(1, cfg.steps - start)
