"""Hydra compose + validation -> typed ``Config``. The only module that touches Hydra/OmegaConf."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import typing
from pathlib import Path
from typing import Any, Optional, Sequence

from .errors import UserError, closest, did_you_mean
from .schema import (LR_KEY, NS_COEFFS, OPTIMIZER_FAMILY, ROLES, Config, DataConfig, ModelConfig,
                     OptimizerConfig, ParametrizationConfig, family_of)
from .table.decay import decay_problem
from .table.record import config_data
from .table.rules import INIT_RULES, MUON_SCALES, check_depth_alpha
from .train.budget import budget_problem, budget_steps

__all__ = ["config_dir", "packaged_dir", "compose", "load_config_file", "config_from_dict", "compose_parametrization",
           "to_yaml", "to_dict", "validate", "resolved", "check_width", "is_config_key",
           "GROUPS"]

GROUPS: tuple[str, ...] = ("model", "parametrization", "optimizer", "data", "train")
VERSION_BASE = "1.3"
SCHEMA_NAME = "mutransfer_schema"
DATA_KINDS = ("stdlib", "text", "tokens")
DEVICES = ("auto", "cpu", "cuda")
SCHEDULES = ("linear", "cosine", "constant", "wsd")
COMPILE_MODES = ("auto", "on", "off")
NS_DTYPES = ("auto", "float32", "bfloat16")
SCALE_SHAPES = ("base", "actual")
OPEN_KEYS = ("model.hf.config.",)
"""Keys under a free-form mapping: an override of one adds or replaces it (Hydra's ``++``), no ``+`` needed."""


def packaged_dir(name: str) -> Path:
    """A top-level folder shipped inside the wheel (``mutransfer/<name>``) or next to the package in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / name, here.parent / name):
        if candidate.is_dir():
            return candidate
    raise UserError(f"cannot find the '{name}' folder next to the mutransfer package", "reinstall mutransfer")


def config_dir() -> Path:
    return packaged_dir("configs")


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    keep = [line for line in lines if not line.startswith(("object_type", "full_key", "reference_type", "Available"))]
    key = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("full_key:")), "")
    text = keep[0] if keep else type(exc).__name__
    if key and key not in text:
        text = f"{key}: {text}"
    return text


def _translate(exc: BaseException) -> UserError:
    """Turn a Hydra/OmegaConf exception into one line that names the key and says how to fix it."""
    text = str(exc)
    missing_group = re.search(r"Could not find '([\w]+)/([^']+)'", text)
    if missing_group:
        group, name = missing_group.groups()
        options = group_options(group) if (config_dir() / group).is_dir() else []
        return UserError(f"unknown {group} '{name}'",
                         f"{did_you_mean(name, options)}choose one of: {', '.join(options)}")
    where = _missing_key(text) or (_missing_key(str(exc.__cause__)) if exc.__cause__ is not None else None)
    if where is not None:
        return _unknown_key(where)
    if text.startswith("Error merging override") and exc.__cause__ is not None:
        return UserError(f"bad value: {_one_line(exc.__cause__)}", "give a value of the type this key expects")
    if "Could not override" in text or "Could not append" in text:
        match = re.search(r"'([^']+)'", text)
        where = match.group(1) if match else "?"
        detail = _one_line(exc.__cause__) if exc.__cause__ else ""
        return UserError(f"bad override '{where}'" + (f" ({detail})" if detail else ""),
                         "use key=value with a key that exists, e.g. model.width=256")
    if any(word in text for word in ("mismatched input", "no viable alternative", "extraneous input", "NoViableAlt")):
        return UserError(f"cannot parse override: {text.splitlines()[0]}", "write overrides as key=value")
    return UserError(_one_line(exc), "fix the value named above")


def _missing_key(text: str) -> Optional[str]:
    """The key an OmegaConf "not in struct" / "not in 'ModelConfig'" message names (its full key), or None."""
    if "not in struct" not in text and not ("Key '" in text and "not in" in text):
        return None
    full = re.search(r"full_key: (\S+)", text) or re.search(r"Key '([^']+)'", text)
    return full.group(1) if full else "?"


@functools.cache
def _schema_fields(schema: Any) -> dict[str, Any]:
    """A schema dataclass's field names → the dataclass each holds (through ``Optional``), None for a value or a
    free-form mapping."""
    hints = typing.get_type_hints(schema)
    return {f.name: next((t for t in (hints[f.name], *typing.get_args(hints[f.name])) if dataclasses.is_dataclass(t)),
                         None) for f in dataclasses.fields(schema)}


def is_config_key(dotted: str) -> bool:
    """Whether ``dotted`` (``optimizer.weight_decay``) names a value of the config schema."""
    schema: Any = Config
    for part in dotted.split("."):
        fields = _schema_fields(schema) if schema is not None else {}
        if part not in fields:
            return False
        schema = fields[part]
    return schema is None


def _unknown_key(where: str) -> UserError:
    """``unknown config key`` with the closest valid dotted key (each unknown part replaced by its closest
    sibling, difflib), or how to see every key when none is close."""
    schema: Any = Config
    guess: list[str] = []
    for part in where.split("."):
        fields = _schema_fields(schema) if schema is not None else {}
        match = part if part in fields else closest(part, fields)
        if match is None:
            guess = []
            break
        guess.append(match)
        schema = fields[match]
    if guess and ".".join(guess) != where:
        return UserError(f"unknown config key '{where}'", f"did you mean '{'.'.join(guess)}'?")
    return UserError(f"unknown config key '{where}'",
                     "check the spelling; `mutransfer show --config` prints the config")


def _store_schema() -> None:
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NAME, node=Config)


def compose(overrides: Sequence[str] = (), extra: Optional[dict[str, Any]] = None) -> Config:
    """Compose ``configs/config.yaml`` with Hydra overrides (then an ``extra`` tree, e.g. a spec's ``model``
    mapping) and return a validated ``Config``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    overrides = list(overrides)
    for item in overrides:
        if item.startswith("-"):
            raise UserError(f"unknown option '{item}'", "see `mutransfer --help` for the options of each command")
        if "=" not in item:
            raise UserError(f"override '{item}' has no '='", "write overrides as key=value, e.g. model.width=256")
    overrides = [f"++{item}" if item.startswith(OPEN_KEYS) else item for item in overrides]
    _store_schema()
    try:
        with initialize_config_dir(config_dir=str(config_dir()), version_base=VERSION_BASE):
            cfg = hydra_compose(config_name="config", overrides=overrides)
        if extra:
            OmegaConf.set_struct(cfg, False)  # new keys under typed dicts (model.roles); typos are caught below
            cfg = OmegaConf.merge(cfg, extra)
        _refuse_unknown_keys(OmegaConf.to_container(cfg), Config, "")
        obj = OmegaConf.to_object(cfg)
    except UserError:
        raise
    except Exception as exc:  # Hydra and OmegaConf raise many unrelated types for user mistakes.
        raise _translate(exc) from None
    assert isinstance(obj, Config)
    validate(obj)
    return resolved(obj)


def _refuse_unknown_keys(tree: Any, schema: Any, prefix: str) -> None:
    """``+key=value`` bypasses Hydra's struct check: compare the composed tree with the dataclasses."""
    if not isinstance(tree, dict):
        return
    fields = _schema_fields(schema)
    for key, value in tree.items():
        where = f"{prefix}.{key}" if prefix else str(key)
        if key not in fields:
            raise _unknown_key(where)
        if fields[key] is not None:
            _refuse_unknown_keys(value, fields[key], where)


def config_from_dict(data: Any, overrides: Sequence[str] = (), where: str = "config") -> Config:
    """A saved config (e.g. a run's config.yaml or a transfer file's ``config``) plus plain key=value overrides.

    Group switches (``optimizer=adamw``) are not available here: the saved config is already resolved."""
    from omegaconf import OmegaConf

    from .yamldoc import YAMLBoundError, check_yaml_bounds

    if not isinstance(data, dict):
        raise UserError(f"{where} is not a config mapping", "pass a config.yaml or transfer file written by mutransfer")
    for item in overrides:
        if "=" not in item or item.startswith(("-", "+")):
            raise UserError(f"override '{item}' is not key=value", "with --config, write plain key=value overrides")
        if item.split("=", 1)[0] in GROUPS:
            raise UserError(f"override '{item}' switches a config group",
                            "with --config only single keys can change, e.g. train.steps=300")
        try:
            check_yaml_bounds(item.split("=", 1)[1])  # OmegaConf parses each value as a YAML document
        except YAMLBoundError as exc:
            raise UserError(f"override '{item.split('=', 1)[0]}': {exc.problem}", exc.fix) from None
    try:
        _refuse_unknown_keys(data, Config, "")
        merged = OmegaConf.merge(OmegaConf.structured(Config), data, OmegaConf.from_dotlist(list(overrides)))
        _refuse_unknown_keys(OmegaConf.to_container(merged), Config, "")
        obj = OmegaConf.to_object(merged)
    except UserError:
        raise
    except Exception as exc:
        raise _translate(exc) from None
    assert isinstance(obj, Config)
    validate(obj)
    return resolved(obj)


def compose_parametrization(preset: str, optimizer: str, base_width: int,
                            overrides: Sequence[str] = ()) -> Config:
    """The config of a model that is not the built-in GPT (no head_dim rule): its parametrization, optimizer and
    any ``train.*`` override (the run's length)."""
    return compose([f"parametrization={preset}", f"optimizer={optimizer}", f"parametrization.base_width={base_width}",
                    "model.head_dim=1", f"model.width={base_width}", *overrides])


def load_config_file(path: Path, overrides: Sequence[str] = ()) -> Config:
    """Load a saved ``config.yaml``, or the ``config`` section of a transfer file (YAML or JSON)."""

    from .files import load_yaml

    if not path.is_file():
        raise UserError(f"config file not found: {path}", "pass the path of a file written by mutransfer")
    data = load_yaml(path, "config file")
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]
    return config_from_dict(data, overrides, str(path))


def to_dict(cfg: Config) -> dict[str, Any]:
    """The config as plain data (``config_from_dict``'s inverse; ``table.record.config_data``)."""
    return config_data(cfg)


def to_yaml(cfg: Config) -> str:
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.structured(cfg))


def _check_ranges(node: Any, prefix: str) -> None:
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        key = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(value):
            _check_ranges(value, key)
            continue
        bounds = f.metadata.get("range")
        if bounds is None or value is None or isinstance(value, bool):
            continue
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
    _check_roles(cfg)
    _check_data(cfg.data)


def resolved(cfg: Config) -> Config:
    """A valid config with the fields derived from others filled: the steps a token budget buys, and a factory's
    search path made absolute (the run may start elsewhere)."""
    t, m = cfg.train, cfg.model
    steps = budget_steps(t.tokens, t.batch_size, t.seq_len) if t.tokens is not None else t.steps
    factory_path = str(Path(m.factory_path).resolve()) if m.factory_path is not None else None
    return dataclasses.replace(cfg, train=dataclasses.replace(t, steps=steps),
                               model=dataclasses.replace(m, factory_path=factory_path))


def _check_choices(cfg: Config) -> None:
    o, p, t = cfg.optimizer, cfg.parametrization, cfg.train
    _check_choice("optimizer", o.name, tuple(OPTIMIZER_FAMILY))
    _check_choice("data.kind", cfg.data.kind, DATA_KINDS)
    if not re.fullmatch(r"cuda:\d+", t.device):
        _check_choice("train.device", t.device, DEVICES)
    _check_choice("train.schedule", t.schedule, SCHEDULES)
    _check_choice("train.compile", t.compile, COMPILE_MODES)
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


def _check_roles(cfg: Config) -> None:
    """Every role has a learning-rate rule for the optimizer's family and valid init and LR rules; tied
    embeddings only where the embedding and readout roles scale and step alike."""
    m, p, o = cfg.model, cfg.parametrization, cfg.optimizer
    family = family_of(o.name)
    for role in ROLES:
        row = getattr(p.roles, role)
        if getattr(row.c, family) is None:
            raise UserError(f"preset '{p.name}' has no learning-rate rule for optimizer '{o.name}' (role {role})",
                            f"choose another optimizer or set parametrization.roles.{role}.c.{family}")
        _check_rule(f"optimizer.init.{role}", getattr(o.init, role))
        _check_rule(f"optimizer.lr_mult.{role}", getattr(o.lr_mult, role))
    if m.tie_embeddings:
        emb, out = p.roles.embedding, p.roles.readout
        if (emb.a, emb.b, getattr(emb.c, family)) != (out.a, out.b, getattr(out.c, family)) or \
                (o.init.embedding, o.lr_mult.embedding) != (o.init.readout, o.lr_mult.readout) or \
                o.multiplier.embedding != o.multiplier.readout or family == "muon":
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
