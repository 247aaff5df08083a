"""The rules a composed config must keep: each numeric field's range, each choice, the base-value rules, and the
rules across fields (widths that split into heads, a preset with a learning-rate rule for the optimizer, tied
embeddings only where both roles scale alike, data that names its file). Plain checks on the typed ``Config``:
each raises a one-line ``UserError`` and changes nothing."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Sequence

from .errors import UserError, did_you_mean
from .schema import (FAMILIES, LR_KEY, NS_COEFFS, ROLES, Config, DataConfig, ModelConfig, OptimizerConfig,
                     ParametrizationConfig)
from .table.decay import decay_problem
from .table.rules import INIT_RULES, MUON_SCALES, check_depth_alpha
from .train.budget import budget_problem

__all__ = ["validate", "check_width", "DATA_KINDS", "DEVICES", "SCHEDULES", "COMPILE_MODES", "PARALLEL_MODES", "NS_DTYPES",
           "SCALE_SHAPES"]

DATA_KINDS = ("stdlib", "text", "tokens")
DEVICES = ("auto", "cpu", "cuda")
SCHEDULES = ("linear", "cosine", "constant", "wsd")
COMPILE_MODES = ("auto", "on", "off")
PARALLEL_MODES = ("ddp", "fsdp")
"""``train.parallel``: how a run on several ranks spreads the model (``dist.wrap``)."""
NS_DTYPES = ("auto", "float32", "bfloat16")
SCALE_SHAPES = ("base", "actual")


def _check_ranges(node: Any, prefix: str) -> None:
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        key = f"{prefix}.{f.name}" if prefix else f.name
        items = value.items() if isinstance(value, dict) and "keyed" in f.metadata else [("", value)]
        for name, item in items:
            _check_value(f"{key}.{name}" if name else key, item, f.metadata.get("range"))


def _check_value(key: str, value: Any, bounds: Any) -> None:
    """``value`` (a dataclass: each of its fields) within ``bounds`` (``schema.rng``; None: any)."""
    if dataclasses.is_dataclass(value):
        _check_ranges(value, key)
        return
    if bounds is None or value is None or isinstance(value, bool):
        return
    low, high, low_open, high_open = bounds
    if not math.isfinite(value):
        raise UserError(f"{key}={value} is not a finite number", "give a finite value")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        hi = "inf" if high == math.inf else f"{high:g}"
        hint = (f"; {key} is the learning rate itself, not its log2: for 2^{value:g} write {key}="
                f"{2.0 ** value:.4g}" if key == LR_KEY and -64 < value < 0 else "")
        raise UserError(f"{key}={value} is out of range", f"it must lie in {left}{low:g}, {hi}{right}{hint}")


def _check_choice(key: str, value: str, options: Sequence[str]) -> None:
    if value not in options:
        raise UserError(f"unknown {key} '{value}'",
                        f"{did_you_mean(value, options)}choose one of: {', '.join(options)}")


def _check_rule(key: str, text: str) -> None:
    head, star, rule = text.partition("*")
    number = head if star and rule in INIT_RULES else text  # FACTOR*RULE: a rule scaled (a tuned constant)
    if text in INIT_RULES:
        return
    try:
        value = float(number)
    except ValueError:
        raise UserError(f"{key}='{text}' is neither a number nor a rule",
                        f"use a number, one of: {', '.join(INIT_RULES)}, or FACTOR*RULE (e.g. 0.5*1/fan_in)") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{key}={text} must be a finite number >= 0", "give e.g. 0.02")


def check_width(subject: str, width: int, head_dim: int) -> None:
    """The built-in GPT's widths must be positive multiples of the head dimension (heads = width / head_dim);
    ``subject`` names the width in the message (``model.width=100``, ``--width 48``)."""
    if width <= 0:
        raise UserError(f"{subject} must be positive", f"use a multiple of {head_dim}, e.g. {4 * head_dim}")
    if width % head_dim:
        raise UserError(f"{subject} is not divisible by model.head_dim={head_dim}",
                        f"use a multiple of {head_dim} (heads = width / head_dim)")


def validate(cfg: Config) -> None:
    """Ranges of every numeric field, choices, and the cross-field rules. Raises ``UserError``; changes nothing
    (``resolved`` fills the fields derived from others)."""
    _check_ranges(cfg, "")
    _check_choices(cfg)
    _check_optimizer(cfg.optimizer, cfg.parametrization)
    t = cfg.train
    if t.tokens is not None:
        problem = budget_problem(t.tokens, t.batch_size, t.seq_len)
        if problem is not None:
            raise UserError(*problem)
    _check_model(cfg.model, cfg.parametrization)
    if cfg.model.moe is not None:
        _check_moe(cfg.model, cfg.parametrization, t.parallel)
    _check_roles(cfg)
    _check_data(cfg.data)


def _check_choices(cfg: Config) -> None:
    o, p, t = cfg.optimizer, cfg.parametrization, cfg.train
    _check_choice("optimizer", o.name, FAMILIES.names())
    _check_choice("data.kind", cfg.data.kind, DATA_KINDS)
    if not re.fullmatch(r"cuda:\d+", t.device):
        _check_choice("train.device", t.device, DEVICES)
    _check_choice("train.schedule", t.schedule, SCHEDULES)
    _check_choice("train.compile", t.compile, COMPILE_MODES)
    _check_choice("train.parallel", t.parallel, PARALLEL_MODES)
    _check_choice("optimizer.ns_dtype", o.ns_dtype, NS_DTYPES)
    _check_choice("optimizer.muon_scale", o.muon_scale, MUON_SCALES)
    _check_choice("parametrization.muon_scale_shapes", p.muon_scale_shapes, SCALE_SHAPES)


def _check_optimizer(o: OptimizerConfig, p: ParametrizationConfig) -> None:
    try:
        check_depth_alpha(p.depth_alpha)
    except ValueError:
        raise UserError(f"parametrization.depth_alpha={p.depth_alpha:g} is neither 0 nor in [0.5, 1]",
                        "use 0 (off), 0.5 (depth-μP), 1 (CompleteP) or a value between 0.5 and 1") from None
    problem = decay_problem(o)
    if problem is not None:
        raise UserError(*problem)
    if len(o.ns_coeffs) != 3 or not all(math.isfinite(x) for x in o.ns_coeffs):
        raise UserError(f"optimizer.ns_coeffs={o.ns_coeffs} needs three finite numbers", f"e.g. {list(NS_COEFFS)}")


def _check_moe(m: ModelConfig, p: ParametrizationConfig, parallel: str) -> None:
    """A mixture of experts the built-in GPT can build at the width and the base width, on one device or DDP."""
    moe = m.moe
    assert moe is not None
    if m.hf is not None or m.factory:
        raise UserError(f"model.moe is set with {'model=hf' if m.hf is not None else 'model.factory'}: it builds "
                        "the built-in GPT's experts", "use model=moe alone (a Hugging Face MoE: model=hf with "
                        "model.hf.architecture=mixtral, qwen3_moe or olmoe)")
    if moe.top_k > moe.experts:
        raise UserError(f"model.moe.top_k={moe.top_k} routes each token to more experts than model.moe.experts="
                        f"{moe.experts}", f"set model.moe.top_k to at most {moe.experts}")
    for key, width in (("model.width", m.width), ("parametrization.base_width", p.base_width)):
        size = moe.expert_ratio * m.mlp_ratio * width
        if size < 1 or abs(size - round(size)) > 1e-9:
            raise UserError(f"model.moe.expert_ratio={moe.expert_ratio:g} × mlp_ratio {m.mlp_ratio} × {key}={width} "
                            f"gives an expert hidden size of {size:g}, not a whole positive number",
                            "choose an expert_ratio that gives whole sizes at every width (e.g. 0.25 or 0.5)")
    if moe.every > m.depth:
        raise UserError(f"model.moe.every={moe.every} names block {moe.every - 1}, but the model has {m.depth} "
                        f"block{'s' if m.depth > 1 else ''} (0–{m.depth - 1})",
                        f"set model.moe.every to at most model.depth={m.depth} (1: every block)")
    if parallel == "fsdp":
        raise UserError("train.parallel=fsdp is not supported with model.moe (FSDP2 would shard the experts' "
                        "stacked weights along the expert dimension)", "set train.parallel=ddp")


def _check_model(m: ModelConfig, p: ParametrizationConfig) -> None:
    if m.hf is not None:
        from .hf.build import check_hf

        if m.factory:
            raise UserError("model=hf and model.factory are both set", "use one of them")
        if p.depth_alpha:
            raise UserError(f"parametrization.depth_alpha={p.depth_alpha:g} scales residual branches, which "
                            "transformers models cannot do", "set parametrization.depth_alpha=0 with model=hf")
        check_hf(m, p.base_width)
    if m.factory is None:
        check_width(f"model.width={m.width}", m.width, m.head_dim)
        check_width(f"parametrization.base_width={p.base_width}", p.base_width, m.head_dim)
    elif ":" not in m.factory or not m.roles:
        raise UserError(f"model.factory='{m.factory}' needs the form 'package.module:function' and model.roles",
                        "e.g. model: {factory: 'mypkg.models:make', roles: {'*': hidden}}")
    if m.blocks and not m.factory:
        raise UserError("model.blocks names the fused weights of a model.factory model",
                        "set model.factory, or remove model.blocks")
    for pattern, count in m.blocks.items():
        if count < 1:
            raise UserError(f"model.blocks.{pattern}={count} is not a number of blocks",
                            f"give a positive integer, e.g. model.blocks={{'{pattern}': 3}}")


def _check_roles(cfg: Config) -> None:
    """Every role has a preset row with a learning-rate rule for the optimizer's family and valid init and LR rules;
    tied embeddings only where the embedding and readout roles scale and step alike."""
    m, p, o = cfg.model, cfg.parametrization, cfg.optimizer
    family = FAMILIES.named(o.name, "optimizer")
    column = family.exponents
    for role in ROLES.names():
        row = p.roles.get(role)
        if row is None:
            raise UserError(f"preset '{p.name}' has no row for role '{role}'",
                            f"set parametrization.roles.{role} (a, b, c.{column}), or register the role like one "
                            "the preset lists")
        if row.c.get(column) is None:
            raise UserError(f"preset '{p.name}' has no learning-rate rule for optimizer '{o.name}' (role {role})",
                            f"choose another optimizer or set parametrization.roles.{role}.c.{column}")
        _check_rule(f"optimizer.init.{role}", o.init[role])
        _check_rule(f"optimizer.lr_mult.{role}", o.lr_mult[role])
    if m.tie_embeddings:
        emb, out = p.roles["embedding"], p.roles["readout"]
        if (emb.a, emb.b, emb.c[column]) != (out.a, out.b, out.c[column]) or \
                (o.init["embedding"], o.lr_mult["embedding"]) != (o.init["readout"], o.lr_mult["readout"]) or \
                o.multiplier["embedding"] != o.multiplier["readout"] or family.rules_in_groups:
            raise UserError(f"model.tie_embeddings=true is refused under preset '{p.name}' with optimizer '{o.name}': "
                            "the embedding and readout roles scale and step differently",
                            "set model.tie_embeddings=false")


def _check_data(data: DataConfig) -> None:
    if data.kind == "stdlib" and data.path:
        raise UserError(f"data.path={data.path} is set but data=stdlib ignores it",
                        "add data=text (a file read as bytes) or data=tokens data.vocab_size=V (a uint16 .bin token "
                        "file)")
    if data.kind in ("text", "tokens") and not data.path:
        raise UserError(f"data={data.kind} needs data.path", "add data.path=FILE")
    if data.kind == "tokens" and data.vocab_size is None:
        raise UserError("data=tokens needs data.vocab_size", "add data.vocab_size=V (e.g. 50257 for GPT-2 tokens)")
