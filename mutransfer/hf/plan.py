"""The configured Hugging Face model and its plan: the shipped architecture's roles, residual blocks and fused
weights applied to the model built at the width and at the base width (``model.build.module_plan``), and the
forward multipliers a mixture of experts cannot take."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from ..errors import UserError
from ..model.build import module_plan
from ..schema import Config
from ..table.plan import Plan
from .architectures import ARCHITECTURES
from .build import hf_model

__all__ = ["hf_model_plan", "refuse_unhookable_multipliers"]

UNHOOKABLE_ROLES = ("expert", "router")
"""Roles whose forward multiplier an output hook cannot apply: a ``transformers`` router returns its logits with
the top-k weights and indices, and an experts module holds two matrices with an activation between them."""


def hf_model_plan(cfg: Config, vocab_size: int) -> tuple[nn.Module, Plan]:
    """The configured Hugging Face model and its plan (the base-width model on the meta device; no depth rules:
    ``validate`` refuses them for ``model=hf``), not yet initialised."""
    assert cfg.model.hf is not None
    arch = ARCHITECTURES[cfg.model.hf.architecture]
    model = hf_model(cfg.model, vocab_size)
    with torch.device("meta"):
        base = hf_model(replace(cfg.model, width=cfg.parametrization.base_width), vocab_size)
    plan = module_plan(model, base, arch.roles, cfg.model.width, cfg.parametrization, cfg.optimizer,
                       in_block=arch.in_block, blocks=arch.blocks, tied_as_one=cfg.model.tie_embeddings,
                       steps=cfg.train.steps)
    refuse_unhookable_multipliers(plan)
    return model, plan


def refuse_unhookable_multipliers(plan: Plan) -> None:
    """A one-line UserError when an expert or router parameter has a forward multiplier other than 1."""
    for entry in plan.params:
        if entry.role in UNHOOKABLE_ROLES and entry.multiplier != 1.0:
            raise UserError(f"parametrization={plan.preset}: '{entry.name}' ({entry.role}) has forward multiplier "
                            f"{entry.multiplier:g}, which a hook on a mixture of experts' router or experts cannot "
                            "apply", "choose a preset whose expert and router multipliers are 1 (e.g. mup or sp), "
                            f"and leave optimizer.multiplier.{entry.role} at 1")
