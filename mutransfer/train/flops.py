"""Training FLOPs of the configured model: 6 × (matrix parameters) × tokens plus the attention scores'
12 × depth × seq_len × width per token (Kaplan et al., "Scaling Laws for Neural Language Models")."""

from __future__ import annotations

from ..model_kinds import model_plan
from ..schema import ROLES, Config
from .budget import tokens_read
from .data import vocab_size

__all__ = ["training_flops"]


def training_flops(cfg: Config, tokens: int | None = None) -> float:
    """FLOPs of training ``cfg``'s model on ``tokens`` (default: the tokens its run reads)."""
    tokens = tokens_read(cfg.train) if tokens is None else tokens
    plan = model_plan(cfg, vocab_size(cfg.data))
    matmul = sum(p.shape[0] * p.shape[1] for p in plan.params if ROLES.named(p.role).matmul and len(p.shape) == 2)
    return 6 * matmul * tokens + 12 * cfg.model.depth * cfg.train.seq_len * cfg.model.width * tokens
