"""A user's model with a fused q|k|v projection (one ``nn.Linear`` of 3 × width outputs), for the sweep specs that
name it as ``model.factory: fused_qkv_model:make`` with ``model.factory_path`` this folder
(``test_factory_path.py``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

__all__ = ["FusedQKV", "make", "ROLES", "BLOCKS"]

VOCAB = 256
ROLES = {"embed.weight": "embedding", "head.weight": "readout", "*norm.weight": "gain", "*": "hidden"}
BLOCKS = {"*qkv.weight": 3}
"""The fused weight: q, k and v stacked along the output dimension."""


class FusedQKV(nn.Module):
    """One single-head causal attention block between a byte embedding and an LM head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.norm = nn.RMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.head = nn.Linear(width, VOCAB, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)  # (B, T, width)
        q, k, v = (t.unsqueeze(1) for t in self.qkv(self.norm(x)).chunk(3, dim=-1))  # (B, 1, T, width) each
        y = functional.scaled_dot_product_attention(q, k, v, is_causal=True).squeeze(1)  # (B, T, width)
        return self.head(x + self.proj(y))  # (B, T, VOCAB)


def make(width: int) -> nn.Module:
    return FusedQKV(width)
