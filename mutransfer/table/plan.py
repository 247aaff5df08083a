"""The abc table evaluated: (preset, optimizer, width) → a ``ParamPlan`` per parameter, and its file format.

This is the one place where widths turn into numbers. With m = width / base_width and a role's row
(a, b, c, eps) from the preset, and base values (σ, multiplier, LR multiplier) from the optimizer config
evaluated at the *base-width* shapes:

    multiplier = mult_role · m^-a        init std = σ_role · m^-b        lr = η · lr_mult_role · m^-c
    adam eps   = eps · m^-eps                        weight decay λ_p = λ · m^-wd (decayed roles)

and, for a parameter inside a residual block, the depth factors of ``rules.depth_exponents`` with
m_L = depth / base_depth (LR × m_L^lr, eps × m_L^eps; each block's output × ``branch_multiplier``).

Gains are initialised to the constant σ·m^-b (std 0); every other parameter is drawn from N(0, std²).
Pure data: the torch side (initialising, multipliers, optimizers) lives in ``mutransfer.model.apply``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional

from ..files import atomic_write_text, dump_yaml
from ..fingerprint import config_later_keys, prune_config, restore
from ..schema import FAMILIES, ROLES, OptimizerConfig, ParametrizationConfig
from ..registry.families import OptimizerFamily
from .decay import decay_factor, decay_on, decay_per_step, decay_rule, weight_decay
from .rules import DepthExponents, base_value, depth_exponents, matrix_dims, muon_scale

__all__ = ["ParamPlan", "Plan", "make_plan", "PLAN_FORMAT", "Shape"]

PLAN_FORMAT = 1
PARAM_FIELDS = ("name", "role", "shape", "base_shape", "init_std", "init_mean", "multiplier", "lr", "lr_factor",
                "update", "shape_factor", "effective_lr")
OPTIONAL_PARAM_FIELDS = ("eps", "scale_rule", "scale_shape")
DEPTH_PARAM_FIELDS = ("in_block", "depth_lr_factor")
"""Written only by a plan with residual-branch scaling on (older files, and α = 0, keep their layout)."""
DECAY_PARAM_FIELDS = ("decay_factor", "weight_decay", "decay_per_step")
"""Written only by a plan that decays (λ > 0 or a timescale): λ_p / λ, λ_p in the rule's units, and the fraction
of the parameter one step at the schedule's peak removes (``table.decay``)."""
LAYOUT_PARAM_DEFAULTS: dict[str, Any] = {"transposed": False, "blocks": 1}
"""Written only where a parameter differs from an ``nn.Linear`` weight (GPT-2's ``Conv1D``, a fused q|k|v)."""

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ParamPlan:
    """Everything the table says about one parameter at the planned width. Its LR is η × ``lr_factor``; the
    optimizer multiplies that by ``shape_factor`` (Muon's α for spectral updates, 1 elsewhere), so the
    coefficient of the real step, ``effective_lr``, is lr × shape_factor: the spectral norm of the step for
    ``spectral``, its row RMS for ``row_norm``, its per-entry size for ``sign``, its RMS for ``rms``, Adam's
    per-entry step for ``adamw``."""

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
    shape_factor: float = 1.0
    in_block: bool = False
    depth_lr_factor: float = 1.0
    """The part of ``lr_factor`` that depth contributes (m_L^lr inside a residual block, 1 elsewhere)."""
    transposed: bool = False
    """Stored (din, dout), the transpose of ``nn.Linear`` (GPT-2's ``Conv1D``): shape rules and updates use
    the true (dout, din)."""
    blocks: int = 1
    """Logical blocks stacked along dout in one tensor (GPT-2's fused q|k|v: 3): each block is initialised,
    scaled and orthogonalised as its own matrix; ``scale_shape`` is one block's."""
    decay_factor: float = 0.0
    """λ_p / λ: m^-wd for a role ``optimizer.decayed`` turns on, 0 for the others."""


@dataclass(frozen=True)
class Plan:
    """A parametrization evaluated for one model: a ``ParamPlan`` per parameter, in model order.

    η lives in one place, ``optimizer_config.lr``; ``lr`` reads it.
    """

    preset: str
    width: int
    base_width: int
    optimizer_config: OptimizerConfig
    params: tuple[ParamPlan, ...] = field(default_factory=tuple)
    depth: Optional[int] = None
    base_depth: Optional[int] = None
    depth_alpha: float = 0.0
    steps: Optional[int] = None
    """The run's length T, kept when a weight-decay timescale needs it (λ = 1/(τ·T))."""

    @property
    def depth_ratio(self) -> float:
        """m_L = depth / base_depth (1 when the plan has no depth information)."""
        return self.depth / self.base_depth if self.depth and self.base_depth else 1.0

    @property
    def depth_rules(self) -> DepthExponents:
        return depth_exponents(FAMILIES.named(self.optimizer_name), self.depth_alpha)

    @property
    def branch_multiplier(self) -> float:
        """The factor on every residual branch's output: m_L^-α (1 when α = 0)."""
        return self.depth_ratio ** self.depth_rules.branch

    @property
    def lr(self) -> float:
        return self.optimizer_config.lr

    @property
    def optimizer_name(self) -> str:
        return self.optimizer_config.name

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

    def with_lr(self, lr: float) -> "Plan":
        return replace(self, optimizer_config=replace(self.optimizer_config, lr=lr))

    @property
    def weight_decay_rule(self) -> str:
        return decay_rule(self.optimizer_config)

    def weight_decay_of(self, p: ParamPlan) -> float:
        """λ_p of a parameter in its rule's units (``table.decay``), at the plan's η."""
        return weight_decay(self.optimizer_config, p.decay_factor, self.lr * p.lr_factor, self.steps)

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per parameter (name, role, shape, init, multiplier, lr, update): tables and files."""
        rows = []
        for p in self.params:
            row = asdict(p)
            row["shape"] = list(p.shape)
            row["base_shape"] = list(p.base_shape)
            row["scale_shape"] = list(p.scale_shape) if p.scale_shape else None
            row["lr"] = self.lr * p.lr_factor
            row["effective_lr"] = row["lr"] * p.shape_factor
            row["weight_decay"] = self.weight_decay_of(p)
            row["decay_per_step"] = decay_per_step(self.optimizer_config, p.decay_factor, row["lr"], self.steps)
            rows.append(row)
        return rows

    def to_document(self) -> dict[str, Any]:
        """The file format shared by ``Plan.save`` and ``mutransfer transfer``: one entry per parameter."""
        decaying = decay_on(self.optimizer_config)
        groups = []
        for row in self.rows():
            entry = {k: row[k] for k in PARAM_FIELDS}
            entry.update({k: row[k] for k in OPTIONAL_PARAM_FIELDS if row[k] is not None})
            entry.update({k: row[k] for k in DEPTH_PARAM_FIELDS if self.depth_alpha})
            entry.update({k: row[k] for k in DECAY_PARAM_FIELDS if decaying})
            entry.update({k: row[k] for k, default in LAYOUT_PARAM_DEFAULTS.items() if row[k] != default})
            groups.append(entry)
        depth = {"depth": self.depth, "base_depth": self.base_depth, "depth_alpha": self.depth_alpha,
                 "branch_multiplier": self.branch_multiplier} if self.depth_alpha else {}
        optimizer = prune_config(asdict(self.optimizer_config), decay_off=not decaying, prefix="optimizer.")
        decay: dict[str, Any] = {"weight_decay_rule": self.weight_decay_rule} if decaying else {}
        if self.optimizer_config.weight_decay_timescale is not None:
            decay["steps"] = self.steps
        return {"mutransfer_plan": PLAN_FORMAT, "preset": self.preset, "width": self.width,
                "base_width": self.base_width, **depth, "lr": self.lr, "log2_lr": math.log2(self.lr), **decay,
                "optimizer": optimizer, "param_groups": groups}

    def save(self, path: Path | str) -> None:
        """Write the plan as YAML (or JSON for a ``.json`` path), atomically."""
        path = Path(path)
        doc = self.to_document()
        atomic_write_text(path, json.dumps(doc, indent=2) + "\n" if path.suffix == ".json" else dump_yaml(doc))

    @classmethod
    def load(cls, path: Path | str) -> "Plan":
        """Read a file written by ``Plan.save`` or ``mutransfer transfer``."""
        import yaml

        from ..yamldoc import YAMLBoundError, parse_yaml

        try:
            text = Path(path).read_text(encoding="utf-8")
            doc = json.loads(text) if Path(path).suffix == ".json" else parse_yaml(text)
        except YAMLBoundError as exc:
            raise ValueError(f"{path}: {exc.problem}; {exc.fix}") from None
        except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            raise ValueError(f"{path} is not a plan or transfer file ({type(exc).__name__})") from None
        if not isinstance(doc, dict) or "param_groups" not in doc:
            raise ValueError(f"{path} is not a plan or transfer file (no param_groups)")
        try:
            return cls.from_document(doc)
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"{path} is not a valid plan or transfer file ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:120]})") from None

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> "Plan":
        """The inverse of ``to_document`` (older files without the full optimizer config keep loading)."""
        params = tuple(ParamPlan(name=g["name"], role=g["role"], shape=tuple(g["shape"]),
                                 base_shape=tuple(g.get("base_shape", g["shape"])), init_mean=g["init_mean"],
                                 init_std=g["init_std"], multiplier=g["multiplier"],
                                 lr_factor=g.get("lr_factor", g["lr"] / doc["lr"]), update=g["update"], eps=g.get("eps"),
                                 scale_rule=g.get("scale_rule"),
                                 scale_shape=tuple(g["scale_shape"]) if g.get("scale_shape") else None,
                                 shape_factor=g.get("shape_factor", 1.0), in_block=bool(g.get("in_block", False)),
                                 depth_lr_factor=g.get("depth_lr_factor", 1.0),
                                 transposed=bool(g.get("transposed", False)), blocks=int(g.get("blocks", 1)),
                                 decay_factor=float(g.get("decay_factor", ROLES.named(g["role"]).decayed)))
                       for g in doc["param_groups"])
        opt = doc.get("optimizer") or {}
        config = _optimizer_from_dict(opt) if "init" in opt else OptimizerConfig(name=opt.get("name", "muon"))
        config = replace(config, lr=float(doc["lr"]))
        legacy = doc.get("parametrization") or {}
        return cls(preset=doc.get("preset") or legacy.get("name", ""), width=int(doc["width"]),
                   base_width=int(doc.get("base_width") or legacy.get("base_width", 0)), optimizer_config=config,
                   params=params, depth=doc.get("depth"), base_depth=doc.get("base_depth"),
                   depth_alpha=float(doc.get("depth_alpha") or 0.0),
                   steps=doc.get("steps") or (doc.get("train") or {}).get("steps"))


def _optimizer_from_dict(data: Mapping[str, Any]) -> OptimizerConfig:
    """A plan file's optimizer section, the keys it leaves out at their defaults (``to_document``) restored."""
    fields = restore(data, config_later_keys(), prefix="optimizer.")
    for key in ("init", "multiplier", "lr_mult", "decayed"):
        fields[key] = dict(fields[key])
    fields["ns_coeffs"] = list(fields["ns_coeffs"])
    return OptimizerConfig(**fields)


def make_plan(
    shapes: Mapping[str, Shape],
    base_shapes: Mapping[str, Shape],
    roles: Mapping[str, str],
    width: int,
    preset: ParametrizationConfig,
    opt: OptimizerConfig,
    depth: Optional[int] = None,
    in_block: frozenset[str] = frozenset(),
    transposed: frozenset[str] = frozenset(),
    blocks: Optional[Mapping[str, int]] = None,
    steps: Optional[int] = None,
) -> Plan:
    """Evaluate the preset for every parameter. ``base_shapes`` are the same parameters at the base width;
    ``in_block`` names the parameters inside residual blocks, which get the depth factors at ``depth``;
    ``transposed`` those stored (din, dout); ``blocks`` the number of logical blocks of fused parameters;
    ``steps`` the run's length (a weight-decay timescale needs it)."""
    ratios = _Ratios(FAMILIES.named(opt.name, "optimizer"), width / preset.base_width, depth / preset.base_depth if depth else 1.0)
    plans = []
    for name, shape in shapes.items():
        layout = {"transposed": name in transposed, "blocks": (blocks or {}).get(name, 1)}
        plans.append(_param_plan(name, roles[name], shape, base_shapes[name], layout, name in in_block, ratios,
                                 preset, opt))
    on = bool(preset.depth_alpha)  # α = 0: a plan without depth information, as before depth existed
    return Plan(preset=preset.name, width=width, base_width=preset.base_width, optimizer_config=opt,
                params=tuple(plans), depth=depth if on else None, base_depth=preset.base_depth if on else None,
                depth_alpha=preset.depth_alpha, steps=steps if opt.weight_decay_timescale is not None else None)


@dataclass(frozen=True)
class _Ratios:
    """What scales every parameter: the optimizer's family, width / base width and depth / base depth."""

    family: OptimizerFamily
    width: float
    depth: float


def _param_plan(name: str, role: str, shape: Shape, base_shape: Shape, layout: dict[str, Any], inside: bool,
                ratios: _Ratios, preset: ParametrizationConfig, opt: OptimizerConfig) -> ParamPlan:
    """One parameter's init, multiplier, LR factor, ε, update rule and decay at the plan's width and depth."""
    family, m = ratios.family, ratios.width
    row = preset.roles.get(role)
    c = row.c.get(family.exponents) if row is not None else None
    if row is None or c is None:
        raise ValueError(f"preset '{preset.name}' has no LR exponent for role '{role}' with optimizer '{family.name}'")
    dout, din = matrix_dims(role, base_shape, **layout)
    sigma = base_value(opt.init[role], dout, din) * m ** -row.b
    update = family.update_of(role)
    constant = ROLES.named(role).constant_init
    scale_shape = None
    if update == "spectral":
        scale_shape = matrix_dims(role, base_shape if preset.muon_scale_shapes == "base" else shape, **layout)
    depth_rules = depth_exponents(family, preset.depth_alpha)
    depth_lr = ratios.depth ** depth_rules.lr if inside else 1.0
    depth_eps = ratios.depth ** depth_rules.eps if inside else 1.0
    return ParamPlan(
        name=name,
        role=role,
        shape=tuple(int(s) for s in shape),
        base_shape=tuple(int(s) for s in base_shape),
        init_mean=sigma if constant else 0.0,
        init_std=0.0 if constant else sigma,
        multiplier=opt.multiplier[role] * m ** -row.a,
        lr_factor=base_value(opt.lr_mult[role], dout, din) * m ** -c * depth_lr,
        update=update,
        eps=opt.eps * m ** -row.eps * depth_eps if family.scaled_eps else None,
        scale_rule=opt.muon_scale if update == "spectral" else None,
        scale_shape=scale_shape,
        shape_factor=muon_scale(opt.muon_scale, *scale_shape) if scale_shape else 1.0,
        in_block=inside,
        depth_lr_factor=depth_lr,
        decay_factor=decay_factor(opt.decayed[role], m, row.wd),
        **layout,
    )
