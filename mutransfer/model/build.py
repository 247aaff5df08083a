"""Config → (model, Plan) for the built-in GPT and a user's module, and the plan of any module.

A user's module comes from ``model.factory`` ("package.module:function", called with the width, its module
looked for in ``model.factory_path`` first); its parameters get roles from ``model.roles`` (glob pattern →
role). ``module_plan`` plans any module (a Hugging Face model too: ``hf.build``); ``mutransfer.model_kinds`` chooses
among the kinds of model.
"""

from __future__ import annotations

import fnmatch
import importlib
import sys
from dataclasses import replace
from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from ..errors import UserError
from ..schema import Config, OptimizerConfig, ParametrizationConfig
from ..table.plan import Plan, make_plan
from ..table.roles import match_roles
from .apply import attach_multipliers, init_parameters, refuse_tied
from .gpt import GPT

__all__ = ["gpt_plan", "gpt_model", "factory_model", "initialized", "load_factory", "module_plan",
           "set_branch_multiplier", "transposed_parameters"]


def gpt_plan(cfg: Config, vocab_size: int) -> Plan:
    """The plan of the configured GPT, from shapes alone (meta tensors: nothing is allocated)."""
    model = GPT(cfg.model, vocab_size, device="meta")
    base = GPT(replace(cfg.model, width=cfg.parametrization.base_width), vocab_size, device="meta")
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    base_shapes = {name: tuple(p.shape) for name, p in base.named_parameters()}
    return make_plan(shapes, base_shapes, model.roles, cfg.model.width, cfg.parametrization, cfg.optimizer,
                     depth=cfg.model.depth, in_block=model.in_block, steps=cfg.train.steps)


def load_factory(path: str, folder: Optional[str] = None) -> Callable[[int], nn.Module]:
    """``package.module:function`` → the function (it must take the width and return an ``nn.Module``); the
    module is looked for in ``folder`` first, then on PYTHONPATH. The folder is on ``sys.path`` only while the
    module is imported."""
    module_name, _, attr = path.partition(":")
    added = folder is not None and folder not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        where = f" (looked in {folder} and on PYTHONPATH)" if folder else " (looked on PYTHONPATH)"
        raise UserError(f"cannot import model.factory '{path}'{where}: {exc}",
                        "set model.factory_path=FOLDER to the folder that holds the module (in a spec: "
                        "model: {factory_path: FOLDER}, relative to the spec), or add that folder to PYTHONPATH"
                        ) from None
    finally:
        if added:
            sys.path.remove(str(folder))
    if not callable(fn):
        raise UserError(f"model.factory '{path}' is not callable", "give a function width -> nn.Module")
    return fn


def _matching(names: Sequence[str], patterns: Sequence[str]) -> frozenset[str]:
    return frozenset(name for name in names if any(fnmatch.fnmatchcase(name, p) for p in patterns))


def module_plan(model: nn.Module, base_model: nn.Module, roles: Mapping[str, str], width: int,
                preset: ParametrizationConfig, opt: OptimizerConfig, depth: Optional[int] = None,
                in_block: Sequence[str] = (), blocks: Optional[Mapping[str, int]] = None,
                tied_as_one: bool = False, steps: Optional[int] = None) -> Plan:
    """The plan of any module, given the same module at the base width, role patterns, the glob patterns of
    the parameters inside residual blocks (``depth``: the module's number of blocks, for the depth rules) and of
    fused weights (pattern → number of equal logical blocks along dout). ``Conv1D`` weights are planned in
    their true (dout, din) orientation. Tied parameters are refused unless ``tied_as_one`` (the caller has
    checked that one role serves both ends). ``steps``, the run's length, is needed by a weight-decay timescale."""
    try:
        if not tied_as_one:
            refuse_tied(model)
        names = [name for name, _ in model.named_parameters()]
        assigned = match_roles(names, roles)
    except ValueError as exc:
        raise UserError(str(exc), "fix model.roles or the model") from None
    if preset.depth_alpha and not in_block:
        raise UserError(f"parametrization.depth_alpha={preset.depth_alpha:g} needs to know which parameters sit "
                        "inside residual blocks", "set model.in_block to their glob patterns (e.g. ['blocks.*'])")
    inside = _matching(names, in_block)
    fused = {name: count for pattern, count in (blocks or {}).items() for name in _matching(names, [pattern])}
    base_shapes = {name: tuple(p.shape) for name, p in base_model.named_parameters()}
    missing = sorted(set(names) - set(base_shapes))
    if missing:
        raise UserError(f"the base-width model lacks parameters {missing}", "the factory must give the same names "
                        "at every width")
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    try:
        return make_plan(shapes, base_shapes, assigned, width, preset, opt, depth=depth, in_block=inside,
                         transposed=transposed_parameters(model), blocks=fused, steps=steps)
    except ValueError as exc:
        raise UserError(str(exc), "fix the fused-weight patterns (blocks) or the model") from None


def factory_model(cfg: Config) -> tuple[nn.Module, Plan]:
    """The configured ``model.factory`` module at its width and its plan (the base-width module on the meta
    device), not yet initialised."""
    assert cfg.model.factory is not None
    fn = load_factory(cfg.model.factory, cfg.model.factory_path)
    model = fn(cfg.model.width)
    with torch.device("meta"):
        base = fn(cfg.parametrization.base_width)
    depth = cfg.model.depth if cfg.parametrization.depth_alpha else None
    return model, module_plan(model, base, cfg.model.roles, cfg.model.width, cfg.parametrization, cfg.optimizer,
                              depth=depth, in_block=cfg.model.in_block, blocks=cfg.model.blocks,
                              steps=cfg.train.steps)


def initialized(model: nn.Module, plan: Plan, seed: int) -> nn.Module:
    """A module (a factory's or a Hugging Face model) initialised by its plan from ``seed``, with its forward
    and residual-branch multipliers attached."""
    init_parameters(model.named_parameters(), plan, torch.Generator().manual_seed(seed))
    try:
        attach_multipliers(model, plan)
    except ValueError as exc:
        raise UserError(f"parametrization={plan.preset}: {exc}", "choose a preset whose multipliers are 1 for "
                        "parameters that share a module (e.g. mup or sp), or a model without biases") from None
    set_branch_multiplier(model, plan)
    return model


def gpt_model(cfg: Config, vocab_size: int, trials: Optional[int] = None) -> tuple[GPT, Plan]:
    """The built-in GPT initialised by its plan from ``train.seed``; ``trials=K``: K stacked copies, each with
    the same initial weights."""
    plan = gpt_plan(cfg, vocab_size)
    gpt = GPT(cfg.model, vocab_size, trials=trials)
    init_parameters(gpt.named_parameters(), plan, torch.Generator().manual_seed(cfg.train.seed))
    gpt.set_multipliers(plan.multipliers)
    gpt.set_branch_multiplier(plan.branch_multiplier)
    return gpt, plan


def transposed_parameters(model: nn.Module) -> frozenset[str]:
    """Names of the weights stored (din, dout): those of ``transformers``' ``Conv1D`` (GPT-2's projections)."""
    names = []
    for module_name, module in model.named_modules():
        if type(module).__name__ == "Conv1D" and type(module).__module__.startswith("transformers"):
            names.append(f"{module_name}.weight" if module_name else "weight")
    return frozenset(names)


def set_branch_multiplier(model: nn.Module, plan: Plan) -> None:
    """Give the model its residual-branch multiplier: the GPT applies it; a factory's module must declare a
    ``branch_multiplier`` attribute and multiply each residual branch's output by it."""
    value = plan.branch_multiplier
    if isinstance(model, GPT):
        model.set_branch_multiplier(value)
    elif hasattr(model, "branch_multiplier"):
        model.branch_multiplier = value
    elif value != 1.0:
        raise UserError(f"the model.factory module has no branch_multiplier attribute, but "
                        f"parametrization.depth_alpha={plan.depth_alpha:g} scales its residual branches by {value:g}",
                        "give the module a branch_multiplier attribute and multiply each residual branch by it, "
                        "or set parametrization.depth_alpha=0")
