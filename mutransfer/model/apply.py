"""A plan applied to a torch module: initialise its parameters, attach forward multipliers, build the
optimizer with every parameter's LR, eps and update rule. The one place where plans touch tensors."""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import torch
from torch import nn

from ..optim.stale import refuse_stale_parameters
from ..registry.families import OptimizerFamily
from ..schema import FAMILIES, OptimizerConfig
from ..table.decay import decay_problem, group_weight_decay
from ..table.plan import ParamPlan, Plan

__all__ = ["initialize", "init_parameters", "attach_multipliers", "refuse_tied", "tied_aliases", "build_optimizer",
           "plan_entry", "family_builder", "WRAPPER_PREFIXES"]
NamedParams = Iterable[tuple[str, nn.Parameter]]


def initialize(model: nn.Module, plan: Plan, seed: int = 0) -> None:
    """Re-initialise ``model`` by the plan from one seeded generator (in parameter order)."""
    init_parameters(model.named_parameters(), plan, torch.Generator().manual_seed(seed))


WRAPPER_PREFIXES = ("_orig_mod.", "module.")
"""What wrappers prefix to parameter names: ``torch.compile``'s module, ``DistributedDataParallel``."""


def plan_entry(table: Mapping[str, ParamPlan], name: str) -> ParamPlan:
    """The plan's entry for a parameter name, through any wrapper prefixes (a compiled or DDP-wrapped model
    names ``embed.weight`` ``_orig_mod.embed.weight``)."""
    plain = name
    while plain not in table and plain.startswith(WRAPPER_PREFIXES):
        plain = plain.split(".", 1)[1]
    if plain not in table:
        raise ValueError(f"parameter '{name}' is not in the plan; build the plan from this model (or the model it wraps)")
    return table[plain]


@torch.no_grad()
def init_parameters(named_params: NamedParams, plan: Plan, generator: torch.Generator) -> None:
    """Initialise in model order from one seeded generator (on CPU, so every device gets the same weights).

    A parameter stacked along leading trial dimensions gets the planned draw in every trial slice.
    """
    table = plan.by_name()
    for name, param in named_params:
        entry = plan_entry(table, name)
        if tuple(param.shape[param.ndim - len(entry.shape):]) != entry.shape:
            raise ValueError(f"parameter '{name}' has shape {tuple(param.shape)} but the plan says {entry.shape}")
        values = torch.randn(entry.shape, generator=generator) * entry.init_std + entry.init_mean
        param.copy_(values.to(param.dtype))


def attach_multipliers(model: nn.Module, multipliers: Plan | Mapping[str, float]) -> list[Any]:
    """Forward hooks that multiply a module's output by its weight's multiplier (for weights that enter
    linearly: Linear/Embedding without bias, norm gains). Takes a plan or ``{parameter name: multiplier}``;
    a tied parameter's multiplier goes on every module that uses it. Returns the hook handles."""
    values_by_name = dict(multipliers.multipliers if isinstance(multipliers, Plan) else multipliers)
    for name, aliases in tied_aliases(model).items():
        values_by_name.update({alias: values_by_name[name] for alias in aliases if name in values_by_name})
    modules = dict(model.named_modules())
    grouped: dict[str, dict[str, float]] = {}
    for name, value in values_by_name.items():
        module_name, _, param_name = name.rpartition(".")
        grouped.setdefault(module_name, {})[param_name] = value
    handles = []
    for module_name, values in grouped.items():
        factors = set(values.values())
        if factors == {1.0}:
            continue
        if len(factors) > 1:
            raise ValueError(f"module '{module_name}' has parameters with different multipliers {values}; "
                             "apply them inside its forward instead of with a hook")
        factor = factors.pop()
        handles.append(modules[module_name].register_forward_hook(lambda _m, _i, out, f=factor: out * f))
    return handles


def tied_aliases(model: nn.Module) -> dict[str, list[str]]:
    """``{name: [other names of the same tensor]}`` for every tied parameter, under its first name."""
    first: dict[int, str] = {}
    aliases: dict[str, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in first:
            aliases.setdefault(first[id(param)], []).append(name)
        else:
            first[id(param)] = name
    return aliases


def refuse_tied(model: nn.Module) -> None:
    """Tied parameters (one tensor under two names) would take two roles that scale differently."""
    for name, others in tied_aliases(model).items():
        raise ValueError(f"parameters '{name}' and '{others[0]}' are tied (one tensor): their roles scale "
                         "differently under width scaling; untie them")


def _groups(named_params: NamedParams, plan: Plan, opt: OptimizerConfig, family: OptimizerFamily,
            trial_lrs: Optional[Sequence[float]]) -> list[dict[str, Any]]:
    """One parameter group per parameter with its LR (a tensor of K per-trial LRs when stacked), eps and weight
    decay (per trial when it depends on the LR), and its update rule where the family reads it."""
    table = plan.by_name()
    groups: list[dict[str, Any]] = []
    for name, param in named_params:
        entry = plan_entry(table, name)
        lr: float | torch.Tensor = plan.lr * entry.lr_factor
        if trial_lrs is not None:
            lr = torch.tensor(list(trial_lrs), dtype=torch.float32, device=param.device) * entry.lr_factor
        decay = group_weight_decay(opt, entry.decay_factor, lr, plan.steps)
        group: dict[str, Any] = {"params": [param], "lr": lr, "name": name, "weight_decay": decay}
        if entry.eps is not None:
            group["eps"] = entry.eps
        if family.rules_in_groups:
            group["update"] = entry.update
            if entry.update == "spectral":
                group["scale_rule"], group["scale_shape"] = entry.scale_rule, entry.scale_shape
            if entry.transposed or entry.blocks > 1:
                group["transposed"], group["blocks"] = entry.transposed, entry.blocks
        groups.append(group)
    if len(groups) != len(table):
        raise ValueError(f"the optimizer got {len(groups)} parameters but the plan has {len(table)}")
    return groups


def build_optimizer(
    model: nn.Module | NamedParams,
    plan: Plan,
    lr: Optional[float] = None,
    trial_lrs: Optional[Sequence[float]] = None,
    steps: Optional[int] = None,
    **overrides: Any,
) -> torch.optim.Optimizer:
    """The plan's optimizer over ``model`` (a module or its named parameters), one group per parameter.

    η is ``lr`` or the plan's; ``overrides`` replace optimizer settings (e.g. ``weight_decay=0.1``,
    ``weight_decay_rule="independent"``); each parameter's weight decay follows the plan's roles and width
    (``table.decay``), and a ``weight_decay_timescale`` needs the run's length: ``steps`` or the plan's. With
    ``trial_lrs`` (one η per trial) the parameters are stacked along a leading trial dimension and each
    group's LR is a tensor of K per-trial LRs: the optimizer is then the stacked AdamW/SGD or SteepestDescent.

    Build it after anything that replaces the model's parameters (FSDP2's ``fully_shard``): built from a module,
    its first step refuses it when it steps none of the module's parameters.
    """
    plan = plan.with_lr(lr) if lr is not None else plan
    opt: OptimizerConfig = replace(plan.optimizer_config, **overrides) if overrides else plan.optimizer_config
    problem = decay_problem(opt)
    if problem is not None:
        raise ValueError("; ".join(problem))
    if steps is not None:
        plan = replace(plan, steps=steps)
    named = model.named_parameters() if isinstance(model, nn.Module) else model
    family = FAMILIES.named(opt.name, "optimizer")
    groups = _groups(named, plan, opt, family, trial_lrs)
    optimizer = family_builder(family)(groups, opt, plan.lr, trial_lrs is not None)
    if isinstance(model, nn.Module):
        refuse_stale_parameters(optimizer, model)
    return optimizer


def family_builder(family: OptimizerFamily) -> Callable[..., torch.optim.Optimizer]:
    """The function ``family.builder`` names (``module:function``)."""
    module, _, name = family.builder.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"optimizer '{family.name}': its builder '{family.builder}' cannot be imported ({exc}); "
                         "register the family with a builder 'module:function' on the import path") from None
