"""Steepest descent per layer type (Su, "Above MuP"): momentum, then the direction of each parameter's rule
(``directions``), in one thin ``SteepestDescent`` optimizer. A group's ``lr`` is a float, or a tensor of K
per-trial learning rates. Parameters spread over ranks (FSDP2's DTensor shards, DDP's replicas) take the same
steps through ``sharded``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

import torch
from torch import Tensor

from ..schema import NS_COEFFS
from ..table.rules import MUON_SCALES, UPDATE_RULES, muon_scale
from .base import closure_loss, decay_, descend_, per_trial
from .directions import block_direction, direction, rms_normalize, row_normalize, sign_update
from .sharded import ShardStats, SpectralItem, place, sharded_direction, spectral_directions, timed_direction

__all__ = ["SteepestDescent", "direction", "block_direction", "rms_normalize", "row_normalize", "sign_update"]


def _ns_options(group: dict[str, Any]) -> dict[str, Any]:
    return {"ns_steps": group["ns_steps"], "ns_coeffs": group["ns_coeffs"], "ns_dtype": group["ns_dtype"],
            "eps": group["eps"]}


def _options(group: dict[str, Any]) -> dict[str, Any]:
    return {"transposed": group.get("transposed", False), "blocks": group.get("blocks", 1), **_ns_options(group)}


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


class SteepestDescent(torch.optim.Optimizer):
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
        self.replicas: Optional[Any] = None
        self.shard_stats = ShardStats()

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

    def replicated_over(self, group: Optional[Any]) -> None:
        """Plain parameters are replicated over ``group`` (DDP): each spectral matrix is then orthogonalized once,
        by its owner rank, and sent to the others (``sharded``). DTensor parameters (FSDP2) carry their own group."""
        self.replicas = group

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """Perform one optimization step; spectral parameters spread over ranks are exchanged together."""
        loss = closure_loss(closure)
        spread: list[tuple[dict[str, Any], SpectralItem]] = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                placed = place(p, self.replicas)
                target, grad = (p, p.grad) if placed is None else (placed.local, placed.grad)
                update = self._momentum(group, grad, self.state[p])
                shape = tuple(p.shape)
                if placed is None:
                    self._descend(group, target, shape, block_direction(group["update"], update, **_options(group)))
                elif group["update"] == "spectral" and placed.world > 1:
                    spread.append((group, SpectralItem(update, placed, group.get("transposed", False),
                                                       group.get("blocks", 1))))
                elif group["update"] == "spectral":
                    self._descend(group, target, shape, timed_direction(update, self.shard_stats, **_options(group)))
                else:
                    direction_rows = sharded_direction(group["update"], update, placed, self.shard_stats,
                                                       transposed=group.get("transposed", False),
                                                       blocks=group.get("blocks", 1), eps=group["eps"])
                    self._descend(group, target, shape, direction_rows)
        for dtype in dict.fromkeys(item.M.dtype for _, item in spread):
            batch = [(group, item) for group, item in spread if item.M.dtype == dtype]
            groups = [group for group, _ in batch]
            rows = spectral_directions([item for _, item in batch], self.shard_stats, **_ns_options(groups[0]))
            for group, (_, item), d in zip(groups, batch, rows):
                self._descend(group, item.placed.local, item.placed.layout.shape, d)
        return loss

    @staticmethod
    def _momentum(group: dict[str, Any], grad: Tensor, state: dict[str, Any]) -> Tensor:
        beta = group["momentum"]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(grad)
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1.0 - beta)
        return grad.lerp(buf, beta) if group["nesterov"] else buf

    def _descend(self, group: dict[str, Any], p: Tensor, shape: tuple[int, ...], d: Tensor) -> None:
        lr = per_trial(group["lr"], p)
        decay_(p, lr, group["weight_decay"])
        descend_(p, d, lr, self._alpha(group, shape))

    @staticmethod
    def _alpha(group: dict[str, Any], shape: tuple[int, ...]) -> float:
        """Muon's shape factor from the whole parameter's (dout, din), never a shard's."""
        if group["update"] != "spectral":
            return 1.0
        dout, din = group["scale_shape"] or shape[-2:]
        return muon_scale(group["scale_rule"], int(dout), int(din), group["tau"])
