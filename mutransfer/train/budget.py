"""The token budget: a run's tokens are ``batch_size × steps × seq_len``; with ``train.tokens`` set, the steps follow
from it. Pure arithmetic, no torch."""

from __future__ import annotations

from typing import Optional

from ..schema import TrainConfig

__all__ = ["tokens_per_step", "tokens_read", "budget_steps", "budget_problem"]


def tokens_per_step(batch_size: int, seq_len: int) -> int:
    """Training tokens one optimizer step reads: ``batch_size`` windows of ``seq_len`` inputs."""
    return batch_size * seq_len


def tokens_read(train: TrainConfig) -> int:
    """Training tokens one run reads: ``steps`` batches of ``batch_size`` windows of ``seq_len`` inputs (stacked
    learning-rate trials share them)."""
    return train.steps * tokens_per_step(train.batch_size, train.seq_len)


def budget_problem(tokens: int, batch_size: int, seq_len: int,
                   where: str = "train.tokens") -> Optional[tuple[str, str]]:
    """Why a budget of ``tokens`` cannot be trained in whole steps of ``batch_size`` × ``seq_len`` (message, fix), or
    None when it can."""
    step = tokens_per_step(batch_size, seq_len)
    given = f"{where} {tokens}" if where.startswith("--") else f"{where}={tokens}"
    if tokens < step:
        return (f"{given} is smaller than one batch (batch size {batch_size} × train.seq_len={seq_len} = "
                f"{step} tokens)", f"raise the budget to a multiple of {step}, or lower the batch size")
    if tokens % step:
        lower = tokens // step * step
        return (f"{given} is not a whole number of batches of {batch_size} × train.seq_len={seq_len} = "
                f"{step} tokens", f"choose a multiple of {step} (e.g. {lower} or {lower + step})")
    return None


def budget_steps(tokens: int, batch_size: int, seq_len: int) -> int:
    """The steps that train ``tokens`` at ``batch_size`` × ``seq_len`` (``budget_problem`` must be None)."""
    return tokens // tokens_per_step(batch_size, seq_len)
