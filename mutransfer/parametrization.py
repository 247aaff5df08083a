"""The abc table in action: (preset, optimizer, width) → per-parameter init, multiplier, LR and update rule.

This is the one place where widths turn into numbers. With m = width / base_width and a role's row
(a, b, c, eps) from the preset, and base values (σ, multiplier, LR multiplier) from the optimizer config
evaluated at the *base-width* shapes:

    multiplier = mult_role · m^-a        init std = σ_role · m^-b        lr = η · lr_mult_role · m^-c
    adam eps   = eps · m^-eps

Gains are initialised to the constant σ·m^-b (std 0); every other parameter is drawn from N(0, std²).
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import torch
from torch import nn

from .schema import (
    INIT_RULES,
    ROLES,
    UPDATE_BY_FAMILY,
    OptimizerConfig,
    ParametrizationConfig,
    RoleFloats,
    RoleRules,
    family_of,
)

__all__ = ["ParamPlan", "Plan", "make_plan", "matrix_dims", "base_value", "init_parameters", "build_optimizer",
           "match_roles", "refuse_tied", "attach_multipliers", "PLAN_FORMAT"]

PLAN_FORMAT = 1

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
    optimizer_name: str
    width: int
    base_width: int
    lr: float
    params: tuple[ParamPlan, ...] = field(default_factory=tuple)
    optimizer_config: Optional[OptimizerConfig] = field(default=None, compare=False)

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

    def with_lr(self, lr: float) -> "Plan":
        return replace(self, lr=lr, optimizer_config=replace(self.optimizer_config, lr=lr)
                       if self.optimizer_config else None)

    def to_document(self) -> dict[str, Any]:
        """The file format shared by ``Plan.save`` and ``mutransfer transfer``: one entry per parameter."""
        groups = []
        for row in self.rows():
            entry = {k: row[k] for k in ("name", "role", "shape", "base_shape", "init_std", "init_mean", "multiplier",
                                         "lr", "lr_factor", "update")}
            entry.update({k: row[k] for k in ("eps", "scale_rule", "scale_shape") if row[k] is not None})
            groups.append(entry)
        optimizer = asdict(self.optimizer_config) if self.optimizer_config else {"name": self.optimizer_name, "lr": self.lr}
        return {"mutransfer_plan": PLAN_FORMAT, "preset": self.preset, "width": self.width,
                "base_width": self.base_width, "lr": self.lr, "log2_lr": math.log2(self.lr), "optimizer": optimizer,
                "param_groups": groups}

    def save(self, path: Path | str) -> None:
        """Write the plan as YAML (or JSON for a ``.json`` path), atomically."""
        from .runs import atomic_write_text, dump_yaml

        path = Path(path)
        doc = self.to_document()
        atomic_write_text(path, json.dumps(doc, indent=2) + "\n" if path.suffix == ".json" else dump_yaml(doc))

    @classmethod
    def load(cls, path: Path | str) -> "Plan":
        """Read a file written by ``Plan.save`` or ``mutransfer transfer``."""
        import yaml

        text = Path(path).read_text()
        doc = json.loads(text) if Path(path).suffix == ".json" else yaml.safe_load(text)
        if not isinstance(doc, dict) or "param_groups" not in doc:
            raise ValueError(f"{path} is not a plan or transfer file (no param_groups)")
        opt = doc.get("optimizer") or {}
        config = _optimizer_from_dict(opt) if "init" in opt else None
        params = tuple(ParamPlan(name=g["name"], role=g["role"], shape=tuple(g["shape"]),
                                 base_shape=tuple(g.get("base_shape", g["shape"])), init_mean=g["init_mean"],
                                 init_std=g["init_std"], multiplier=g["multiplier"],
                                 lr_factor=g.get("lr_factor", g["lr"] / doc["lr"]), update=g["update"], eps=g.get("eps"),
                                 scale_rule=g.get("scale_rule"),
                                 scale_shape=tuple(g["scale_shape"]) if g.get("scale_shape") else None)
                       for g in doc["param_groups"])
        name = opt.get("name", "muon")
        return cls(preset=doc.get("preset") or doc.get("parametrization", {}).get("name", ""), optimizer_name=name,
                   width=int(doc["width"]), base_width=int(doc.get("base_width") or
                                                          doc.get("parametrization", {}).get("base_width", 0)),
                   lr=float(doc["lr"]), params=params, optimizer_config=config)

    def initialize(self, model: nn.Module, seed: int = 0) -> None:
        """Re-initialise ``model`` by the plan from one seeded generator (in parameter order)."""
        init_parameters(model.named_parameters(), self, torch.Generator().manual_seed(seed))

    def optimizer(self, model: nn.Module, lr: Optional[float] = None, **overrides: Any) -> torch.optim.Optimizer:
        """The planned optimizer over ``model``'s parameters, with per-parameter LRs (η = ``lr`` or the plan's)."""
        config = self.optimizer_config or OptimizerConfig(name=self.optimizer_name, lr=self.lr)
        plan = self.with_lr(lr) if lr is not None else self
        return build_optimizer(model.named_parameters(), plan, replace(config, lr=plan.lr, **overrides))

    def attach(self, model: nn.Module) -> list[Any]:
        """Apply the forward multipliers with forward hooks (see ``attach_multipliers``)."""
        return attach_multipliers(model, self.multipliers)


def _optimizer_from_dict(data: Mapping[str, Any]) -> OptimizerConfig:
    fields = dict(data)
    fields["init"] = RoleRules(**fields["init"])
    fields["multiplier"] = RoleFloats(**fields["multiplier"])
    fields["lr_mult"] = RoleRules(**fields["lr_mult"])
    fields["ns_coeffs"] = list(fields["ns_coeffs"])
    return OptimizerConfig(**fields)


def match_roles(names: Sequence[str], patterns: Mapping[str, str]) -> dict[str, str]:
    """Role of each parameter name: the first glob pattern that matches wins; unmatched names are an error."""
    for pattern, role in patterns.items():
        if role not in ROLES:
            raise ValueError(f"roles['{pattern}'] = '{role}' is not a role; use one of: {', '.join(ROLES)}")
    roles, unmatched = {}, []
    for name in names:
        role = next((r for pattern, r in patterns.items() if fnmatch.fnmatchcase(name, pattern)), None)
        if role is None:
            unmatched.append(name)
        else:
            roles[name] = role
    if unmatched:
        raise ValueError(f"no role pattern matches: {', '.join(unmatched)}; add patterns for them (e.g. '*': 'hidden')")
    return roles


def refuse_tied(model: nn.Module) -> None:
    """Tied parameters (one tensor under two names) would take two roles that scale differently."""
    seen: dict[int, str] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            raise ValueError(f"parameters '{seen[id(param)]}' and '{name}' are tied (one tensor): their roles scale "
                             "differently under width scaling; untie them")
        seen[id(param)] = name


def attach_multipliers(model: nn.Module, multipliers: Mapping[str, float]) -> list[Any]:
    """Forward hooks that multiply a module's output by its weight's multiplier (for weights that enter
    linearly: Linear/Embedding without bias, norm gains). Returns the hook handles."""
    modules = dict(model.named_modules())
    grouped: dict[str, dict[str, float]] = {}
    for name, value in multipliers.items():
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
    return Plan(preset=preset.name, optimizer_name=opt.name, width=width, base_width=preset.base_width, lr=opt.lr,
                params=tuple(plans), optimizer_config=opt)


@torch.no_grad()
def init_parameters(named_params: Iterable[tuple[str, nn.Parameter]], plan: Plan, generator: torch.Generator) -> None:
    """Initialise in model order from one seeded generator (on CPU, so every device gets the same weights).

    A parameter stacked along leading trial dimensions gets the planned draw in every trial slice.
    """
    table = plan.by_name()
    for name, param in named_params:
        entry = table[name]
        if tuple(param.shape[param.ndim - len(entry.shape):]) != entry.shape:
            raise ValueError(f"parameter '{name}' has shape {tuple(param.shape)} but the plan says {entry.shape}")
        values = torch.randn(entry.shape, generator=generator) * entry.init_std + entry.init_mean
        param.copy_(values.to(param.dtype))


def build_optimizer(
    named_params: Iterable[tuple[str, nn.Parameter]],
    plan: Plan,
    opt: OptimizerConfig,
    trial_lrs: Optional[Sequence[float]] = None,
) -> torch.optim.Optimizer:
    """The configured optimizer with one parameter group per parameter, LR (and eps) from the plan.

    With ``trial_lrs`` (one η per trial) the parameters are stacked along a leading trial dimension and each
    group's LR is a tensor of K per-trial LRs; the optimizer is then the stacked AdamW/SGD or SteepestDescent.
    """
    from .optim import StackedAdamW, StackedSGD, SteepestDescent

    table = plan.by_name()
    groups: list[dict[str, Any]] = []
    for name, param in named_params:
        entry = table[name]
        lr: float | torch.Tensor = plan.lr * entry.lr_factor
        if trial_lrs is not None:
            lr = torch.tensor(list(trial_lrs), dtype=torch.float32, device=param.device) * entry.lr_factor
        group: dict[str, Any] = {"params": [param], "lr": lr, "name": name}
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
    nesterov = opt.nesterov and opt.momentum > 0
    if opt.name == "adamw":
        adamw = torch.optim.AdamW if trial_lrs is None else StackedAdamW
        return adamw(groups, lr=plan.lr, betas=(opt.beta1, opt.beta2), eps=opt.eps, weight_decay=wd)
    if opt.name == "sgd":
        sgd = torch.optim.SGD if trial_lrs is None else StackedSGD
        return sgd(groups, lr=plan.lr, momentum=opt.momentum, nesterov=nesterov, weight_decay=wd)
    ns_dtype = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16}[opt.ns_dtype]
    return SteepestDescent(groups, lr=plan.lr, momentum=opt.momentum, nesterov=opt.nesterov, weight_decay=wd,
                           ns_steps=opt.ns_steps, ns_coeffs=tuple(opt.ns_coeffs), ns_dtype=ns_dtype)
