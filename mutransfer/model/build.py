"""Config → (model, Plan): builds the model at its width and evaluates the abc table for it.

The model is the built-in GPT, or a user's module from ``model.factory`` ("package.module:function",
called with the width) whose parameters get roles from ``model.roles`` (glob pattern → role).
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Callable, Mapping, Optional

import torch
from torch import nn

from ..errors import UserError
from ..schema import Config, OptimizerConfig, ParametrizationConfig
from ..table.plan import Plan, make_plan
from ..table.roles import match_roles
from .apply import attach_multipliers, init_parameters, refuse_tied
from .gpt import GPT

__all__ = ["gpt_plan", "model_plan", "build_model", "load_factory", "module_plan"]


def gpt_plan(cfg: Config, vocab_size: int) -> Plan:
    """The plan of the configured GPT, from shapes alone (meta tensors: nothing is allocated)."""
    model = GPT(cfg.model, vocab_size, device="meta")
    base = GPT(replace(cfg.model, width=cfg.parametrization.base_width), vocab_size, device="meta")
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    base_shapes = {name: tuple(p.shape) for name, p in base.named_parameters()}
    return make_plan(shapes, base_shapes, model.roles, cfg.model.width, cfg.parametrization, cfg.optimizer)


def load_factory(path: str) -> Callable[[int], nn.Module]:
    """``package.module:function`` → the function (it must take the width and return an ``nn.Module``)."""
    module_name, _, attr = path.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"cannot import model.factory '{path}': {exc}",
                        "give package.module:function importable from PYTHONPATH") from None
    if not callable(fn):
        raise UserError(f"model.factory '{path}' is not callable", "give a function width -> nn.Module")
    return fn


def module_plan(model: nn.Module, base_model: nn.Module, roles: Mapping[str, str], width: int,
                preset: ParametrizationConfig, opt: OptimizerConfig) -> Plan:
    """The plan of any module, given the same module at the base width and role patterns."""
    try:
        refuse_tied(model)
        names = [name for name, _ in model.named_parameters()]
        assigned = match_roles(names, roles)
    except ValueError as exc:
        raise UserError(str(exc), "fix model.roles or the model") from None
    base_shapes = {name: tuple(p.shape) for name, p in base_model.named_parameters()}
    missing = sorted(set(names) - set(base_shapes))
    if missing:
        raise UserError(f"the base-width model lacks parameters {missing}", "the factory must give the same names "
                        "at every width")
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    return make_plan(shapes, base_shapes, assigned, width, preset, opt)


def _factory_model(cfg: Config) -> tuple[nn.Module, Plan]:
    assert cfg.model.factory is not None
    fn = load_factory(cfg.model.factory)
    model = fn(cfg.model.width)
    with torch.device("meta"):
        base = fn(cfg.parametrization.base_width)
    return model, module_plan(model, base, cfg.model.roles, cfg.model.width, cfg.parametrization, cfg.optimizer)


def model_plan(cfg: Config, vocab_size: int) -> Plan:
    """The plan of the configured model (the GPT, or the factory's module)."""
    if cfg.model.factory:
        with torch.device("meta"):
            return _factory_model(cfg)[1]
    return gpt_plan(cfg, vocab_size)


def build_model(cfg: Config, vocab_size: int, device: torch.device | str = "cpu",
                trials: Optional[int] = None) -> tuple[nn.Module, Plan]:
    """The model initialised by its plan from ``train.seed`` (same weights whatever the learning rate).

    ``trials=K`` builds K stacked copies of the GPT, each with the same initial weights.
    """
    if cfg.model.factory:
        if trials is not None:
            raise UserError("trial batching needs the built-in GPT, not model.factory", "set batch_trials=1")
        model, plan = _factory_model(cfg)
        init_parameters(model.named_parameters(), plan, torch.Generator().manual_seed(cfg.train.seed))
        attach_multipliers(model, plan.multipliers)
        return model.to(device), plan
    plan = gpt_plan(cfg, vocab_size)
    gpt = GPT(cfg.model, vocab_size, trials=trials)
    init_parameters(gpt.named_parameters(), plan, torch.Generator().manual_seed(cfg.train.seed))
    gpt.set_multipliers(plan.multipliers)
    return gpt.to(device), plan
