"""Steepest descent per layer type (Su, "Above MuP"; Bernstein & Newhouse, "Old Optimizer, New Norm"):
msign for hidden matrices (Muon), row-normalized SGD for the embedding and LM head, SignSGD for gains,
RMS-normalized SGD for biases — pure direction functions, and one thin ``SteepestDescent`` optimizer.

Weights are in torch layout ``(dout, din)``. Every direction accepts a batch ``(..., m, n)`` and
normalizes over the last dim(s) only, so K trials stacked along a leading dimension are updated
independently. A group's ``lr`` is a float, or a tensor of K per-trial learning rates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from ..schema import NS_COEFFS
from ..table.rules import MUON_SCALES, UPDATE_RULES, muon_scale
from .base import PerParameter, decay_, descend_, per_trial
from .newton_schulz import msign

__all__ = ["SteepestDescent", "direction", "block_direction", "rms_normalize", "row_normalize", "sign_update"]


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


def _validate_group(group: dict[str, Any], index: int) -> None:
    name = f"param group {group.get('name', index)!r}"
    rule = group.get("update")
    if rule not in UPDATE_RULES:
        raise ValueError(
            f"{name} has update={rule!r}; set its 'update' key to one of {', '.join(UPDATE_RULES)}"
        )
    if len({id(p) for p in group["params"]}) != len(group["params"]):
        raise ValueError(f"{name} lists a parameter more than once")
    if rule != "spectral":
        return
    scale_rule = group["scale_rule"]
    if scale_rule not in MUON_SCALES:
        raise ValueError(
            f"{name} has scale_rule={scale_rule!r}; choose one of {', '.join(MUON_SCALES)}"
        )
    shape = group["scale_shape"]
    if shape is not None and len(shape) != 2:
        raise ValueError(f"{name} has scale_shape={shape!r}; give (dout, din)")
    for p in group["params"]:
        if p.ndim < 2:
            raise ValueError(
                f"{name} is spectral but holds a {p.ndim}-D parameter of shape {tuple(p.shape)}; "
                "spectral params must be matrices (..., dout, din): use 'rms' or 'sign' instead"
            )


class SteepestDescent(PerParameter):
    """Momentum + per-group steepest descent; groups need ``update`` in UPDATE_RULES.

    Spectral groups take ``scale_rule`` (MUON_SCALES, default ``mup``) and ``scale_shape``
    ``(dout, din)`` for the shape factor (default: the param's last two dims).
    """

    def __init__(
        self,
        params: Iterable[dict[str, Any]],
        lr: float,
        momentum: float = 0.95,
        nesterov: bool = True,
        weight_decay: float = 0.0,
        ns_steps: int = 5,
        ns_coeffs: tuple[float, float, float] = NS_COEFFS,
        ns_dtype: torch.dtype | None = None,
        eps: float = 1e-8,
    ) -> None:
        if lr < 0.0 or weight_decay < 0.0 or not 0.0 <= momentum < 1.0:
            raise ValueError(
                f"need lr >= 0, weight_decay >= 0 and 0 <= momentum < 1; "
                f"got lr={lr}, weight_decay={weight_decay}, momentum={momentum}"
            )
        defaults: dict[str, Any] = {
            "lr": lr,
            "momentum": momentum,
            "nesterov": nesterov,
            "weight_decay": weight_decay,
            "ns_steps": ns_steps,
            "ns_coeffs": tuple(ns_coeffs),
            "ns_dtype": ns_dtype,
            "eps": eps,
            "scale_rule": "mup",
            "scale_shape": None,
            "tau": 1.0,
        }
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group after checking its update rule, scale rule and parameter shapes."""
        super().add_param_group(param_group)
        try:
            _validate_group(self.param_groups[-1], len(self.param_groups) - 1)
        except ValueError:
            self.param_groups.pop()
            raise

    def set_progress(self, frac: float) -> None:
        """Set training progress in [0, 1]; the ``scheduled`` scale uses tau = 1 - frac."""
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"progress must lie in [0, 1], got {frac}")
        for group in self.param_groups:
            group["tau"] = 1.0 - frac

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        grad, beta = p.grad, group["momentum"]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(grad)
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1.0 - beta)
        update = grad.lerp(buf, beta) if group["nesterov"] else buf
        d = block_direction(group["update"], update, transposed=group.get("transposed", False),
                            blocks=group.get("blocks", 1), ns_steps=group["ns_steps"], ns_coeffs=group["ns_coeffs"],
                            ns_dtype=group["ns_dtype"], eps=group["eps"])
        lr = per_trial(group["lr"], p)
        decay_(p, lr, group["weight_decay"])
        descend_(p, d, lr, self._alpha(group, p))

    @staticmethod
    def _alpha(group: dict[str, Any], p: Tensor) -> float:
        if group["update"] != "spectral":
            return 1.0
        dout, din = group["scale_shape"] or p.shape[-2:]
        return muon_scale(group["scale_rule"], int(dout), int(din), group["tau"])
