"""Config → (GPT, Plan): builds the model at its width and evaluates the abc table for it."""

from __future__ import annotations

from dataclasses import replace

import torch

from .model import GPT
from .parametrization import Plan, init_parameters, make_plan
from .schema import Config

__all__ = ["gpt_plan", "build_model"]


def gpt_plan(cfg: Config, vocab_size: int) -> Plan:
    """The plan of the configured GPT, from shapes alone (meta tensors: nothing is allocated)."""
    model = GPT(cfg.model, vocab_size, device="meta")
    base = GPT(replace(cfg.model, width=cfg.parametrization.base_width), vocab_size, device="meta")
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    base_shapes = {name: tuple(p.shape) for name, p in base.named_parameters()}
    return make_plan(shapes, base_shapes, model.roles, cfg.model.width, cfg.parametrization, cfg.optimizer)


def build_model(cfg: Config, vocab_size: int, device: torch.device | str = "cpu") -> tuple[GPT, Plan]:
    """The GPT initialised by its plan from ``train.seed`` (same weights whatever the learning rate)."""
    plan = gpt_plan(cfg, vocab_size)
    model = GPT(cfg.model, vocab_size)
    init_parameters(model.named_parameters(), plan, torch.Generator().manual_seed(cfg.train.seed))
    model.set_multipliers(plan.multipliers)
    return model.to(device), plan
