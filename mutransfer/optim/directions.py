"""Steepest-descent directions per layer type (Su, "Above MuP"; Bernstein & Newhouse, "Old Optimizer, New Norm"):
msign for hidden matrices (Muon), row-normalized SGD for the embedding and LM head, SignSGD for gains,
RMS-normalized SGD for biases. Pure functions of a tensor.

Weights are in torch layout ``(dout, din)``. Every direction accepts a batch ``(..., m, n)`` and normalizes over
the last dim(s) only, so K trials stacked along a leading dimension get independent directions.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ..schema import NS_COEFFS
from ..table.rules import UPDATE_RULES
from .newton_schulz import msign

__all__ = ["direction", "block_direction", "rms_normalize", "row_normalize", "sign_update", "MATRIX_RULES"]


def row_normalize(G: Tensor, eps: float = 1e-8) -> Tensor:
    """Divide each row (last dim) by its RMS; all-zero rows stay exactly zero."""
    rms = G.norm(dim=-1, keepdim=True) / math.sqrt(G.size(-1))
    return G / (rms + eps)


def rms_normalize(g: Tensor, eps: float = 1e-8) -> Tensor:
    """Divide a vector by its RMS; for a batch (..., n) each slice along the last dim."""
    return row_normalize(g, eps)


def sign_update(g: Tensor) -> Tensor:
    """Elementwise sign (SignSGD direction)."""
    return torch.sign(g)


def direction(
    rule: str,
    M: Tensor,
    *,
    ns_steps: int = 5,
    ns_coeffs: tuple[float, float, float] = NS_COEFFS,
    ns_dtype: torch.dtype | None = None,
    eps: float = 1e-8,
) -> Tensor:
    """Unit-scale steepest-descent direction of ``M`` under ``rule`` (one of UPDATE_RULES)."""
    if rule == "spectral":
        return msign(M, ns_steps, ns_coeffs, eps, ns_dtype)
    if rule == "row_norm":
        return row_normalize(M, eps)
    if rule == "sign":
        return sign_update(M)
    if rule == "rms":
        return rms_normalize(M, eps)
    raise ValueError(f"unknown update rule {rule!r}; choose one of {', '.join(UPDATE_RULES)}")


MATRIX_RULES = ("spectral", "row_norm")
"""The rules that act on a whole matrix (or its rows); the others act on a vector or elementwise."""


def block_direction(rule: str, M: Tensor, *, transposed: bool = False, blocks: int = 1, **kwargs: Any) -> Tensor:
    """``direction`` of a parameter stored (din, dout) (``transposed``, GPT-2's ``Conv1D``) and/or holding
    ``blocks`` equal logical blocks stacked along dout (a fused q|k|v): each block gets its own direction in the
    (dout, din) orientation, exactly as the same weights stored as separate ``nn.Linear`` matrices would."""
    if not transposed and blocks == 1:
        return direction(rule, M, **kwargs)
    matrix = rule in MATRIX_RULES
    oriented = M.mT if transposed and matrix else M
    axis = -2 if matrix else -1
    split = oriented.unflatten(axis, (blocks, oriented.size(axis) // blocks))
    d = direction(rule, split, **kwargs).flatten(axis - 1 if matrix else -2, axis)
    return d.mT if transposed and matrix else d
