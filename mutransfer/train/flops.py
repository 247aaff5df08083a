"""Training FLOPs of the configured model: 6 × (active matrix parameters) × tokens plus the attention scores'
12 × depth × seq_len × width per token (Kaplan et al., "Scaling Laws for Neural Language Models"). A mixture of
experts' stacked (experts, out, in) matrices count the ``top_k`` experts a token passes through."""

from __future__ import annotations

import math

from ..model_kinds import model_plan
from ..schema import ROLES, Config
from .budget import tokens_read
from .data import vocab_size

__all__ = ["training_flops"]


def training_flops(cfg: Config, tokens: int | None = None) -> float:
    """FLOPs of training ``cfg``'s model on ``tokens`` (default: the tokens its run reads)."""
    tokens = tokens_read(cfg.train) if tokens is None else tokens
    plan = model_plan(cfg, vocab_size(cfg.data))
    active = cfg.model.moe.top_k if cfg.model.moe is not None else 1
    matmul = sum(math.prod(p.shape[-2:]) * (active if len(p.shape) == 3 else 1) for p in plan.params
                 if ROLES.named(p.role).matmul and len(p.shape) in (2, 3))
    return 6 * matmul * tokens + 12 * cfg.model.depth * cfg.train.seq_len * cfg.model.width * tokens
