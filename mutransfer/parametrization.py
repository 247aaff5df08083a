"""The abc table in action: (preset, optimizer, width) → per-parameter init, multiplier, LR and update rule.

This is the one place where widths turn into numbers. With m = width / base_width and a role's row
(a, b, c, eps) from the preset, and base values (σ, multiplier, LR multiplier) from the optimizer config
evaluated at the *base-width* shapes:

    multiplier = mult_role · m^-a        init std = σ_role · m^-b        lr = η · lr_mult_role · m^-c
    adam eps   = eps · m^-eps

Gains are initialised to the constant σ·m^-b (std 0); every other parameter is drawn from N(0, std²).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

import torch
from torch import nn

from .schema import (
    INIT_RULES,
    UPDATE_BY_FAMILY,
    OptimizerConfig,
    ParametrizationConfig,
    family_of,
)

__all__ = ["ParamPlan", "Plan", "make_plan", "matrix_dims", "base_value", "init_parameters", "build_optimizer"]

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ParamPlan:
    """Everything the table says about one parameter at the planned width."""

    name: str
    role: str
    shape: Shape
    base_shape: Shape
    init_mean: float
    init_std: float
    multiplier: float
    lr_factor: float
    update: str
    eps: Optional[float] = None
    scale_rule: Optional[str] = None
    scale_shape: Optional[tuple[int, int]] = None


@dataclass(frozen=True)
class Plan:
    """A parametrization evaluated for one model: a ``ParamPlan`` per parameter, in model order."""

    preset: str
    optimizer: str
    width: int
    base_width: int
    lr: float
    params: tuple[ParamPlan, ...] = field(default_factory=tuple)

    @property
    def ratio(self) -> float:
        return self.width / self.base_width

    def by_name(self) -> dict[str, ParamPlan]:
        return {p.name: p for p in self.params}

    @property
    def multipliers(self) -> dict[str, float]:
        return {p.name: p.multiplier for p in self.params}

    def lr_of(self, name: str) -> float:
        return self.lr * self.by_name()[name].lr_factor

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per parameter (name, role, shape, init, multiplier, lr, update): tables and files."""
        rows = []
        for p in self.params:
            row = asdict(p)
            row["shape"] = list(p.shape)
            row["base_shape"] = list(p.base_shape)
            row["scale_shape"] = list(p.scale_shape) if p.scale_shape else None
            row["lr"] = self.lr * p.lr_factor
            rows.append(row)
        return rows


def matrix_dims(role: str, shape: Sequence[int]) -> tuple[int, int]:
    """(dout, din) of a parameter in the math sense y = x W: torch layout (dout, din), except that an
    embedding table (V, d) maps a one-hot of size V to d; vectors are (d, 1)."""
    if len(shape) == 1:
        return int(shape[0]), 1
    if role == "embedding":
        return int(shape[-1]), int(shape[-2])
    return int(shape[-2]), int(shape[-1])


def base_value(text: str, dout: int, din: int) -> float:
    """A number, or a shape rule from INIT_RULES evaluated at (dout, din)."""
    if text == "1/sqrt(fan_in)":
        return 1.0 / math.sqrt(din)
    if text == "1/fan_in":
        return 1.0 / din
    if text == "spectral":
        return math.sqrt(dout / din) / (math.sqrt(din) + math.sqrt(dout))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"'{text}' is neither a number nor one of {INIT_RULES}") from None


def make_plan(
    shapes: Mapping[str, Shape],
    base_shapes: Mapping[str, Shape],
    roles: Mapping[str, str],
    width: int,
    preset: ParametrizationConfig,
    opt: OptimizerConfig,
) -> Plan:
    """Evaluate the preset for every parameter. ``base_shapes`` are the same parameters at the base width."""
    family = family_of(opt.name)
    m = width / preset.base_width
    updates = UPDATE_BY_FAMILY[family]
    plans = []
    for name, shape in shapes.items():
        role = roles[name]
        row = getattr(preset.roles, role)
        c = getattr(row.c, family)
        if c is None:
            raise ValueError(f"preset '{preset.name}' has no LR exponent for role '{role}' with optimizer family '{family}'")
        dout, din = matrix_dims(role, base_shapes[name])
        sigma = base_value(getattr(opt.init, role), dout, din) * m ** -row.b
        update = updates[role]
        scale_shape = None
        if update == "spectral":
            scale_shape = matrix_dims(role, base_shapes[name] if preset.muon_scale_shapes == "base" else shape)
        plans.append(
            ParamPlan(
                name=name,
                role=role,
                shape=tuple(int(s) for s in shape),
                base_shape=tuple(int(s) for s in base_shapes[name]),
                init_mean=sigma if role == "gain" else 0.0,
                init_std=0.0 if role == "gain" else sigma,
                multiplier=getattr(opt.multiplier, role) * m ** -row.a,
                lr_factor=base_value(getattr(opt.lr_mult, role), dout, din) * m ** -c,
                update=update,
                eps=opt.eps * m ** -row.eps if family == "adam" else None,
                scale_rule=opt.muon_scale if update == "spectral" else None,
                scale_shape=scale_shape,
            )
        )
    return Plan(preset=preset.name, optimizer=opt.name, width=width, base_width=preset.base_width, lr=opt.lr,
                params=tuple(plans))


@torch.no_grad()
def init_parameters(named_params: Iterable[tuple[str, nn.Parameter]], plan: Plan, generator: torch.Generator) -> None:
    """Initialise in model order from one seeded generator (on CPU, so every device gets the same weights)."""
    table = plan.by_name()
    for name, param in named_params:
        entry = table[name]
        values = torch.randn(param.shape, generator=generator) * entry.init_std + entry.init_mean
        param.copy_(values.to(param.dtype))


def build_optimizer(
    named_params: Iterable[tuple[str, nn.Parameter]], plan: Plan, opt: OptimizerConfig
) -> torch.optim.Optimizer:
    """The configured optimizer with one parameter group per parameter, LR (and eps) from the plan."""
    from .optim import SteepestDescent

    table = plan.by_name()
    groups: list[dict[str, Any]] = []
    for name, param in named_params:
        entry = table[name]
        group: dict[str, Any] = {"params": [param], "lr": plan.lr * entry.lr_factor, "name": name}
        if entry.eps is not None:
            group["eps"] = entry.eps
        if opt.name == "muon":
            group["update"] = entry.update
            if entry.update == "spectral":
                group["scale_rule"], group["scale_shape"] = entry.scale_rule, entry.scale_shape
        groups.append(group)
    if len(groups) != len(table):
        raise ValueError(f"the optimizer got {len(groups)} parameters but the plan has {len(table)}")
    wd = opt.weight_decay
    if opt.name == "adamw":
        return torch.optim.AdamW(groups, lr=plan.lr, betas=(opt.beta1, opt.beta2), eps=opt.eps, weight_decay=wd)
    if opt.name == "sgd":
        return torch.optim.SGD(groups, lr=plan.lr, momentum=opt.momentum, nesterov=opt.nesterov and opt.momentum > 0,
                               weight_decay=wd)
    ns_dtype = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16}[opt.ns_dtype]
    return SteepestDescent(groups, lr=plan.lr, momentum=opt.momentum, nesterov=opt.nesterov, weight_decay=wd,
                           ns_steps=opt.ns_steps, ns_coeffs=tuple(opt.ns_coeffs), ns_dtype=ns_dtype)
