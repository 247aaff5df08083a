"""Bring your own model: the abc table and the built-in optimizer applied to any ``nn.Module``.

    plan = mutransfer.parametrize(model, {"embed.weight": "embedding", "head.weight": "readout",
                                          "*norm*": "gain", "*": "hidden"},
                                  preset="mup", optimizer="muon", width=1024, base_width=128,
                                  factory=lambda w: MyModel(width=w))   # re-initialises model
    mutransfer.attach_multipliers(model, plan)          # forward multipliers (all 1 under muP with a = 0)
    opt = mutransfer.build_optimizer(model, plan, lr=2**-5)   # per-parameter LRs and update rules

A Hugging Face model takes a shipped role map by name (``roles="llama"``, ``"gpt2"``, or a mixture of experts:
``"mixtral"``, ``"qwen2_moe"``, ``"qwen3_moe"``, ``"olmoe"``), which also names its
residual blocks and fused weights: ``parametrize(model, roles="llama", width=1024, base_width=128,
base_model=small_model)``.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from .config import compose_parametrization
from .errors import UserError
from .hf.architectures import ARCHITECTURES
from .hf.plan import refuse_unhookable_multipliers
from .model.apply import initialize
from .model.build import module_plan
from .table.plan import Plan

__all__ = ["parametrize"]


def parametrize(
    model: nn.Module,
    roles: Mapping[str, str] | str,
    preset: str = "mup",
    optimizer: str = "muon",
    *,
    width: int,
    base_width: int,
    base_model: Optional[nn.Module] = None,
    factory: Optional[Callable[[int], nn.Module]] = None,
    lr: Optional[float] = None,
    seed: int = 0,
    overrides: Sequence[str] = (),
    depth: Optional[int] = None,
    in_block: Sequence[str] = (),
    blocks: Optional[Mapping[str, int]] = None,
    steps: Optional[int] = None,
) -> Plan:
    """Re-initialise ``model`` by the preset's table at ``width`` and return its plan.

    ``roles`` maps parameter-name glob patterns to roles, tried in order (first match wins), or names a shipped
    Hugging Face architecture (``"llama"``, ``"gpt2"``, ``"mixtral"``, …: ``hf.architectures.ARCHITECTURES``), whose map also gives ``in_block`` and ``blocks`` (fused
    weights: pattern → equal logical blocks along dout, each orthogonalised on its own). ``transformers``'
    ``Conv1D`` weights, stored (din, dout), are recognised and planned in their true orientation. The base-width
    shapes come from ``base_model``, or from ``factory(base_width)`` built on the meta device (no memory),
    or — only when ``width == base_width`` — from ``model`` itself. ``overrides`` are config overrides
    (``optimizer.weight_decay=0.1``, ``parametrization.roles.readout.c.adam=0.5``).

    Depth: with ``parametrization.depth_alpha=α`` (and ``parametrization.base_depth``) among the overrides,
    ``depth`` (the model's number of residual blocks) and ``in_block`` (glob patterns of the parameters inside
    them) add the depth factors; multiply each residual branch's output by ``plan.branch_multiplier``.

    Weight decay: ``optimizer.weight_decay`` (λ), ``optimizer.weight_decay_rule`` and ``optimizer.decayed.<role>``
    among the overrides; a ``optimizer.weight_decay_timescale`` needs the run's length: ``steps``, or a
    ``train.steps=N`` override.
    """
    if isinstance(roles, str):
        if roles not in ARCHITECTURES:
            raise UserError(f"roles='{roles}' is not a shipped role map", f"use one of: {', '.join(ARCHITECTURES)}, "
                            "or a mapping of parameter-name patterns to roles")
        arch = ARCHITECTURES[roles]
        roles, in_block, blocks = arch.roles, in_block or arch.in_block, arch.blocks if blocks is None else blocks
    if width <= 0 or base_width <= 0:
        raise UserError(f"width={width} and base_width={base_width} must be positive", "give the model's widths")
    if base_model is None and factory is not None:
        with torch.device("meta"):
            base_model = factory(base_width)
    if base_model is None:
        if width != base_width:
            raise UserError(f"width={width} differs from base_width={base_width} but no base_model or factory was "
                            "given", "pass factory=lambda w: MyModel(w) (or base_model=) to get the base shapes")
        base_model = model
    extra = [*overrides, *([f"optimizer.lr={lr!r}"] if lr is not None else [])]
    cfg = compose_parametrization(preset, optimizer, base_width, extra)
    plan = module_plan(model, base_model, roles, width, cfg.parametrization, cfg.optimizer, depth=depth,
                       in_block=in_block, blocks=blocks, steps=_run_steps(steps, overrides, cfg.train.steps))
    refuse_unhookable_multipliers(plan)
    initialize(model, plan, seed)
    return plan


def _run_steps(steps: Optional[int], overrides: Sequence[str], composed: int) -> Optional[int]:
    """The run's length: ``steps``, else a ``train.steps`` override's (composed and validated), else unknown; the
    two must agree when both are given."""
    named = any(o.split("=", 1)[0].lstrip("+~") == "train.steps" for o in overrides)
    if steps is not None and named and steps != composed:
        raise UserError(f"steps={steps} and the override train.steps={composed} disagree on the run's length",
                        "give one of them")
    return steps if steps is not None else composed if named else None
