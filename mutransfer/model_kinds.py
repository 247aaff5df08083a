"""The configured model, whatever its kind: the built-in GPT, a user's ``model.factory`` module, or a Hugging
Face causal LM (``model=hf``). The one place that chooses among them: training, the coordinate check, ``show``,
``transfer`` and the FLOP count ask it, and need not know the kinds (``model.build`` builds the first two,
``hf.plan`` the third)."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .errors import UserError
from .hf.architectures import ARCHITECTURES, Architecture
from .hf.plan import hf_model_plan
from .model.build import factory_model, gpt_model, gpt_plan, initialized
from .schema import Config
from .table.plan import Plan

__all__ = ["model_plan", "build_model", "architecture_of"]


def model_plan(cfg: Config, vocab_size: int) -> Plan:
    """The plan of the configured model, from shapes alone (meta tensors: nothing is allocated)."""
    if cfg.model.hf is not None:
        with torch.device("meta"):
            return hf_model_plan(cfg, vocab_size)[1]
    if cfg.model.factory:
        with torch.device("meta"):
            return factory_model(cfg)[1]
    return gpt_plan(cfg, vocab_size)


def build_model(cfg: Config, vocab_size: int, device: torch.device | str = "cpu",
                trials: Optional[int] = None) -> tuple[nn.Module, Plan]:
    """The model initialised by its plan from ``train.seed`` (same weights whatever the learning rate).

    ``trials=K`` builds K stacked copies of the GPT, each with the same initial weights.
    """
    if cfg.model.factory or cfg.model.hf is not None:
        if trials is not None:
            what = "model=hf" if cfg.model.hf is not None else "model.factory"
            raise UserError(f"trial batching needs the built-in GPT, not {what}", "set batch_trials=1")
        model, plan = hf_model_plan(cfg, vocab_size) if cfg.model.hf is not None else factory_model(cfg)
        return initialized(model, plan, cfg.train.seed).to(device), plan
    if trials is not None and cfg.model.moe is not None:
        raise UserError("trial batching stacks the dense GPT, not model=moe", "set batch_trials=1")
    gpt, plan = gpt_model(cfg, vocab_size, trials)
    return gpt.to(device), plan


def architecture_of(model: nn.Module) -> Architecture:
    """The shipped architecture of a Hugging Face model (its roles, blocks and module names); ``ValueError`` for
    any other model."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in ARCHITECTURES:
        raise ValueError(f"the coordinate check probes the built-in GPT or a shipped Hugging Face architecture "
                         f"({', '.join(ARCHITECTURES)}), not {type(model).__name__}")
    return ARCHITECTURES[model_type]
