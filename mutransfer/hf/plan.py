"""The configured Hugging Face model and its plan: the shipped architecture's roles, residual blocks and fused
weights applied to the model built at the width and at the base width (``model.build.module_plan``)."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from ..model.build import module_plan
from ..schema import Config
from ..table.plan import Plan
from .architectures import ARCHITECTURES
from .build import hf_model

__all__ = ["hf_model_plan"]


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
    return model, plan
