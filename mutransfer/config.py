"""Hydra compose -> typed ``Config``, validated by ``config_checks``. The only module that touches Hydra/OmegaConf."""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import typing
from pathlib import Path
from typing import Any, Optional, Sequence

from .config_checks import check_width, validate
from .errors import UserError, closest, did_you_mean
from .schema import ROLES, Config
from .table.record import config_data
from .table.role_defaults import keyed_names, with_role_defaults
from .train.budget import budget_steps

__all__ = ["config_dir", "packaged_dir", "compose", "load_config_file", "config_from_dict", "compose_parametrization",
           "to_yaml", "to_dict", "validate", "resolved", "check_width", "is_config_key",
           "check_override_word", "GROUPS"]

GROUPS: tuple[str, ...] = ("model", "parametrization", "optimizer", "data", "train")
VERSION_BASE = "1.3"
SCHEMA_NAME = "mutransfer_schema"
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


@dataclasses.dataclass(frozen=True)
class _Keyed:
    """A schema mapping keyed by a registry (``schema.ROLE_KEYED``): its ``kind``, and the dataclass each value is
    (None for a plain value)."""

    kind: str
    value: Any


@functools.cache
def _schema_fields(schema: Any) -> dict[str, Any]:
    """A schema dataclass's field names → the dataclass each holds (through ``Optional``), a ``_Keyed`` for a
    mapping keyed by a registry, None for a value or a free-form mapping."""
    hints = typing.get_type_hints(schema)

    def held(f: dataclasses.Field[Any]) -> Any:
        inner = next((t for t in (hints[f.name], *typing.get_args(hints[f.name])) if dataclasses.is_dataclass(t)),
                     None)
        return _Keyed(f.metadata["keyed"], inner) if "keyed" in f.metadata else inner

    return {f.name: held(f) for f in dataclasses.fields(schema)}


def _children(schema: Any) -> dict[str, Any]:
    """The keys a schema node may hold → what each holds (``_schema_fields``); the registered names under a
    ``_Keyed`` mapping (read each time: a registry may grow)."""
    if isinstance(schema, _Keyed):
        return dict.fromkeys(keyed_names(schema.kind), schema.value)
    return _schema_fields(schema) if schema is not None else {}


def _under_keyed(dotted: str) -> bool:
    """Whether ``dotted`` lies under a mapping keyed by a registry (``optimizer.init.hidden``): an override of it
    adds or replaces its entry (Hydra's ``++``), the key checked against the registry afterwards."""
    schema: Any = Config
    for part in dotted.split(".")[:-1]:
        if isinstance(schema, _Keyed):
            return True
        schema = _children(schema).get(part)
    return isinstance(schema, _Keyed)


def _inside_entry(dotted: str) -> bool:
    """Whether ``dotted`` names a typed entry of a keyed mapping or a field inside one (``parametrization.roles.
    hidden``, ``parametrization.roles.hidden.b``)."""
    schema: Any = Config
    for part in dotted.split("."):
        if isinstance(schema, _Keyed):
            return schema.value is not None
        schema = _children(schema).get(part)
    return False


def is_config_key(dotted: str) -> bool:
    """Whether ``dotted`` (``optimizer.weight_decay``) names a value of the config schema."""
    schema: Any = Config
    for part in dotted.split("."):
        fields = _children(schema)
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
        fields = _children(schema)
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



def check_override_word(item: str, options: str, example: str) -> None:
    """A word after a command's options is an override, ``key=value``: refuse an option the command does not know
    (pointing at ``options``, where they are listed) and a word without ``=`` (showing ``example``)."""
    if item.startswith("-"):
        raise UserError(f"unknown option '{item}'", f"see {options}")
    if "=" not in item:
        raise UserError(f"override '{item}' has no '='", f"write overrides as key=value, e.g. {example}")

def _store_schema() -> None:
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NAME, node=Config)


def _selects_group(item: str) -> bool:
    """Whether an override picks, adds or removes a config group's option (``optimizer=adamw``, ``~data``), as
    opposed to setting a key (``optimizer.lr=0.01``)."""
    key, _, value = item.partition("=")
    return key.lstrip("+~") in GROUPS and not value.lstrip().startswith("{")


@functools.lru_cache(maxsize=64)
def _composed_defaults(selections: tuple[str, ...], directory: str) -> Any:
    """Hydra's composition of the defaults list under ``selections`` (config-group choices), before any key=value
    override, kept per process: it is the slow part of ``compose`` (about 0.2 s) and the same for every trial of a
    study. Callers copy it before changing it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    _store_schema()
    with initialize_config_dir(config_dir=directory, version_base=VERSION_BASE):
        return hydra_compose(config_name="config", overrides=list(selections))


def _apply_key_values(overrides: list[str], cfg: Any) -> None:
    """Apply key=value overrides to a composed config in order, as Hydra's own compose does once the defaults are
    merged (its override grammar, its struct checks and its errors)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    ConfigLoaderImpl._apply_overrides_to_config(OverridesParser.create().parse_overrides(overrides), cfg)


def compose(overrides: Sequence[str] = (), extra: Optional[dict[str, Any]] = None) -> Config:
    """Compose ``configs/config.yaml`` with Hydra overrides (then an ``extra`` tree, e.g. a spec's ``model``
    mapping) and return a validated ``Config``.

    Hydra merges the defaults list under the group choices first and applies the key=value overrides after, in
    order; the first part is kept per process (``_composed_defaults``), so composing many trials of one setup pays
    for it once."""
    from omegaconf import OmegaConf

    overrides = list(overrides)
    for item in overrides:
        check_override_word(item, "`mutransfer --help` for the options of each command", "model.width=256")
    inside = [item for item in overrides if _inside_entry(item.split("=", 1)[0])]
    overrides = [f"++{item}" if item.startswith(OPEN_KEYS) or _under_keyed(item.split("=", 1)[0]) else item
                 for item in overrides if item not in inside]
    selections = tuple(item for item in overrides if _selects_group(item))
    try:
        cfg = copy.deepcopy(_composed_defaults(selections, str(config_dir())))
        _apply_key_values([item for item in overrides if item not in selections], cfg)
        if inside:  # Hydra cannot create a typed entry of a keyed mapping from a dotted key; OmegaConf's merge can
            OmegaConf.set_struct(cfg, False)  # the new entries' keys are checked below
            _inherit_entries(cfg, inside)
            cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(inside))
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
    obj = with_role_defaults(obj)
    validate(obj)
    return resolved(obj)


def _inherit_entries(cfg: Any, inside: Sequence[str]) -> None:
    """Before a field of a role's entry is set (``parametrization.roles.router.b=0.5``), give a role the table leaves
    out a copy of the entry of the role it is ``like``, so its other fields keep that role's values."""
    from omegaconf import OmegaConf

    for item in inside:
        *table, role, _field = item.split("=", 1)[0].split(".")
        if not table or role not in ROLES.names():
            continue
        like = ROLES.named(role).like
        mapping = OmegaConf.select(cfg, ".".join(table))
        if like is not None and mapping is not None and role not in mapping and like in mapping:
            mapping[role] = copy.deepcopy(mapping[like])


def _refuse_unknown_keys(tree: Any, schema: Any, prefix: str) -> None:
    """``+key=value`` bypasses Hydra's struct check: compare the composed tree with the dataclasses."""
    if not isinstance(tree, dict) or schema is None:
        return
    fields = _children(schema)
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
    obj = with_role_defaults(obj)
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


def resolved(cfg: Config) -> Config:
    """A valid config with the fields derived from others filled: the steps a token budget buys, and a factory's
    search path made absolute (the run may start elsewhere)."""
    t, m = cfg.train, cfg.model
    steps = budget_steps(t.tokens, t.batch_size, t.seq_len) if t.tokens is not None else t.steps
    factory_path = str(Path(m.factory_path).resolve()) if m.factory_path is not None else None
    return dataclasses.replace(cfg, train=dataclasses.replace(t, steps=steps),
                               model=dataclasses.replace(m, factory_path=factory_path))
