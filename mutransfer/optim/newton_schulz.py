"""msign(G) = U Vᵀ by quintic Newton–Schulz (Jordan, "Muon"), and the exact SVD version as a reference.

Every function accepts a batch ``(..., m, n)`` and works on the last two dims, so K trials stacked along a
leading dimension are orthogonalised independently.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..schema import NS_COEFFS

__all__ = ["msign", "msign_exact"]


def _ns_dtype(G: Tensor, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    return torch.bfloat16 if G.is_cuda else torch.promote_types(G.dtype, torch.float32)


def msign(
    G: Tensor,
    steps: int = 5,
    coeffs: tuple[float, float, float] = NS_COEFFS,
    eps: float = 1e-7,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """Approximate ``U Vᵀ`` of each matrix in ``G`` (..., m, n) by quintic Newton–Schulz.

    Runs in ``dtype`` (None: bf16 on CUDA; on CPU fp32, or float64 for float64 input); returns ``G``'s dtype.
    """
    if G.ndim < 2:
        raise ValueError(f"msign needs a matrix (..., m, n), got shape {tuple(G.shape)}")
    a, b, c = coeffs
    tall = G.size(-2) > G.size(-1)
    X = G.to(_ns_dtype(G, dtype))
    if tall:
        X = X.mT
    X = X.reshape(-1, *X.shape[-2:])
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        A = X @ X.mT
        B = torch.baddbmm(A, A, A, beta=b, alpha=c)
        X = torch.baddbmm(X, B, X, beta=a)
    if tall:
        X = X.mT
    return X.reshape(G.shape).to(G.dtype)


def msign_exact(G: Tensor) -> Tensor:
    """Exact ``U Vᵀ`` of each matrix in ``G`` (..., m, n) via SVD (reference only)."""
    work = torch.promote_types(G.dtype, torch.float32)
    U, _, Vh = torch.linalg.svd(G.to(work), full_matrices=False)
    return (U @ Vh).to(G.dtype)
