"""What a sweep's fingerprint covers, and the one place that keeps earlier fingerprints and files valid.

A sweep's record (its run directory's config.yaml, its studies' record) is its spec and every setup's resolved
config as plain data, less what says how the sweep runs rather than what it computes (``EXECUTION_KEYS``,
``EXECUTION_CONFIG_KEYS``); its fingerprint is ``fingerprint_of`` that record. A key added after records and
files existed is a ``LaterKey``: stored data leaves it out while it holds the default that reproduces what those
records describe, so their fingerprints stay valid (``prune_config``, ``prune_spec``), and data read back gets
it again (``restore``). Plain data: imports no torch, Optuna or Hydra.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Collection, Iterator, Mapping, Sequence

from .registry.roles import Role, shipped_roles
from .schema import TRANSFER_AXES

__all__ = ["ALWAYS", "DECAY_OFF", "ONE_AXIS", "LaterKey", "EXECUTION_KEYS", "EXECUTION_CONFIG_KEYS", "EXECUTION_TRAINER_KEYS", "LOCATION_KEYS",
           "config_later_keys", "spec_later_keys", "later_defaults", "prune", "restore", "omit_at_defaults",
           "prune_config", "prune_spec", "restore_spec", "without_execution", "sweep_record_of", "fingerprint_of"]

ALWAYS = "always"
"""A later key left out whenever it holds its default."""
DECAY_OFF = "decay off"
"""A later key left out at its default only while weight decay is off (``table.decay.decay_on``): data from
before the weight-decay keys decayed every parameter alike, so with decay on it describes another model and its
fingerprint must not match."""
ONE_AXIS = "one axis"
"""A later key left out at its default only while the spec sweeps the widths alone (``SweepSpec.swept``)."""

EXECUTION_KEYS: tuple[str, ...] = ("batch_trials", "trunks", "stop", "devices_per_trial")
"""Spec keys that say how a sweep runs, not what it computes: left out of its fingerprint, so changing them resumes
the same sweep."""
EXECUTION_CONFIG_KEYS: tuple[str, ...] = ("train.compile", "train.parallel", "train.dist_timeout")
"""Config keys of the same kind: left out of the record's configs and overrides."""
EXECUTION_TRAINER_KEYS: tuple[str, ...] = ("cwd", "timeout", "env", "devices_per_trial", "retries", "max_failures")
"""Keys of a spec's ``trainer`` (and a setup's) that say how a trial runs: kept in the record (``verify`` runs
the same way), left out of the fingerprint."""
LOCATION_KEYS: tuple[str, ...] = ("factory_path",)
"""Keys of the spec's ``model`` and each config's that say where a factory's module is found (an absolute path):
kept in the record, left out of the fingerprint, so a project moved to another folder is the same sweep."""


@dataclass(frozen=True)
class LaterKey:
    """A key added after data was stored without it: its dotted ``path`` (``*`` steps into every item of a
    list), the ``default`` that reproduces what the earlier data describes, and ``when`` it is left out at that
    default (``ALWAYS``, ``DECAY_OFF`` or ``ONE_AXIS``)."""

    path: str
    default: Any
    when: str = ALWAYS
    like: str = ""
    """A sibling key in the same mapping whose value is the default instead (a role ``like`` another: its entry in
    a per-role table is left out while it equals that role's, and restored as a copy of it)."""


ROLE_TABLES = ("parametrization.roles", "optimizer.init", "optimizer.multiplier", "optimizer.lr_mult", "optimizer.decayed")
"""The config's mappings keyed by role."""


def config_later_keys() -> tuple[LaterKey, ...]:
    """The config keys added after run directories and transfer files existed (``config.to_dict`` and a plan's
    optimizer section leave them out at their defaults): the model's and training's always, the weight-decay
    keys while decay is off."""
    return (LaterKey("model.in_block", []), LaterKey("model.blocks", {}), LaterKey("model.factory_path", None),
            LaterKey("model.hf", None), LaterKey("model.moe", None),
            LaterKey("parametrization.base_depth", 2), LaterKey("parametrization.depth_alpha", 0.0),
            LaterKey("train.eval_batch_size", None), LaterKey("train.tokens", None),
            LaterKey("train.noise_scale", False), LaterKey("train.warmup_steps", None),
            LaterKey("train.cooldown_frac", 0.2), LaterKey("train.compile", "auto"),
            LaterKey("train.parallel", "ddp"), LaterKey("train.dist_timeout", 600.0),
            *(LaterKey(f"{table}.{role.name}", None, like=role.like) for role in shipped_roles() if role.like
              for table in ROLE_TABLES),
            LaterKey("optimizer.weight_decay_rule", None, DECAY_OFF),
            LaterKey("optimizer.weight_decay_timescale", None, DECAY_OFF),
            LaterKey("optimizer.decayed", {role.name: role.decayed for role in _listed_roles()}, DECAY_OFF),
            *(LaterKey(f"parametrization.roles.{role.name}.wd", 0.0, DECAY_OFF) for role in _listed_roles()))


def _listed_roles() -> tuple[Role, ...]:
    """The shipped roles every shipped table lists (a role ``like`` another is left out of them, so it never
    enters a stored config: the mixture-of-experts roles)."""
    return tuple(role for role in shipped_roles() if role.like is None)


def spec_later_keys() -> tuple[LaterKey, ...]:
    """The spec keys added after sweeps were recorded (``SweepSpec.as_dict`` leaves them out at their defaults):
    the lists of every axis besides width (``schema.TRANSFER_AXES``) and what a batch axis holds, how the axes
    combine while there is one, trunks, a search's anchors and stage, and a model section's residual-block and
    fused-weight patterns."""
    return (*(LaterKey(axis.plural, ()) for axis in TRANSFER_AXES[1:]), LaterKey("hold", ""),
            LaterKey("axes", "one", ONE_AXIS), LaterKey("trunks", True), LaterKey("devices_per_trial", 1),
            LaterKey("setups.*.search.*.anchors", ()), LaterKey("setups.*.search.*.at", "base"),
            LaterKey("trainer", None), LaterKey("setups.*.trainer", None), LaterKey("stop", False),
            LaterKey("constants", None), LaterKey("model.in_block", []), LaterKey("model.blocks", {}))


def later_defaults(keys: Sequence[LaterKey], when: str = ALWAYS) -> dict[str, Any]:
    """The dotted paths and defaults of those ``keys`` left out ``when``."""
    return {key.path: key.default for key in keys if key.when == when}


def _same(value: Any, default: Any) -> bool:
    """Whether a stored value is the default (a list and a tuple with the same items are the same)."""
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    return bool(value == default)


def _parents(data: Any, parts: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The mappings the dotted ``parts`` lead to in the nested ``data`` (``*``: every item of a list)."""
    if not parts:
        if isinstance(data, dict):
            yield data
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        for item in data if isinstance(data, list | tuple) else ():
            yield from _parents(item, rest)
    elif isinstance(data, dict) and head in data:
        yield from _parents(data[head], rest)


def _located(key: LaterKey, prefix: str) -> tuple[list[str], str] | None:
    """The key's parent path and leaf below ``prefix``, or None for a key outside it."""
    if not key.path.startswith(prefix):
        return None
    *parents, leaf = key.path[len(prefix):].split(".")
    return parents, leaf


def prune(data: dict[str, Any], keys: Sequence[LaterKey], holding: Collection[str] = (), prefix: str = "") -> None:
    """Delete from the nested ``data`` each of ``keys`` (under the dotted ``prefix``, which ``data`` stands for)
    that holds its default, where it is left out ``ALWAYS`` or under one of the conditions ``holding``."""
    for key in keys:
        located = _located(key, prefix)
        if located is None or key.when != ALWAYS and key.when not in holding:
            continue
        parents, leaf = located
        for node in _parents(data, parents):
            default = node.get(key.like) if key.like else key.default
            if leaf in node and (not key.like or key.like in node) and _same(node[leaf], default):
                del node[leaf]


def restore(data: Mapping[str, Any], keys: Sequence[LaterKey], prefix: str = "") -> dict[str, Any]:
    """A copy of the nested ``data`` with each of ``keys`` it leaves out set to its default (where the mapping
    that holds the key is there)."""
    out = copy.deepcopy(dict(data))
    for key in sorted(keys, key=lambda k: bool(k.like)):  # a sibling's copy once the mapping that holds it is back
        located = _located(key, prefix)
        if located is None:
            continue
        parents, leaf = located
        for node in _parents(out, parents):
            if not key.like:
                node.setdefault(leaf, copy.deepcopy(key.default))
            elif key.like in node:
                node.setdefault(leaf, copy.deepcopy(node[key.like]))
    return out


def omit_at_defaults(data: dict[str, Any], defaults: Mapping[str, Any], prefix: str = "") -> None:
    """Delete from the nested ``data`` each dotted key of ``defaults`` (under ``prefix``) that holds its default."""
    prune(data, [LaterKey(path, default) for path, default in defaults.items()], prefix=prefix)


def prune_config(data: dict[str, Any], decay_off: bool, prefix: str = "") -> dict[str, Any]:
    """A config's plain data (or its section at ``prefix``, e.g. ``optimizer.``) without the later keys at
    their defaults (``config_later_keys``; the weight-decay ones only while ``decay_off``); ``data`` itself."""
    prune(data, config_later_keys(), (DECAY_OFF,) if decay_off else (), prefix)
    return data


def prune_spec(data: dict[str, Any], one_axis: bool) -> dict[str, Any]:
    """A spec's plain data without the later keys at their defaults (``spec_later_keys``; ``axes`` only while
    ``one_axis``); ``data`` itself."""
    prune(data, spec_later_keys(), (ONE_AXIS,) if one_axis else ())
    return data


def restore_spec(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a stored spec with every later key it leaves out at its default (``prune_spec``'s inverse)."""
    return restore(data, spec_later_keys())


def without_execution(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config's plain data without ``EXECUTION_CONFIG_KEYS``."""
    out = {group: dict(values) if isinstance(values, dict) else values for group, values in config.items()}
    for key in EXECUTION_CONFIG_KEYS:
        group, name = key.split(".", 1)
        out.get(group, {}).pop(name, None)
    return out


def sweep_record_of(spec: Mapping[str, Any], configs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The record of a sweep whose spec's plain data is ``spec`` (``SweepSpec.as_dict``) and whose setups resolve
    to ``configs`` (``config.to_dict``), with its fingerprint: both without ``EXECUTION_KEYS`` and
    ``EXECUTION_CONFIG_KEYS`` (in the configs and in the spec's and setups' overrides)."""
    data = {k: copy.deepcopy(v) for k, v in spec.items() if k not in EXECUTION_KEYS}
    for part in [data, *data["setups"]]:
        part["overrides"] = type(part["overrides"])(
            item for item in part["overrides"] if item.split("=", 1)[0].lstrip("+") not in EXECUTION_CONFIG_KEYS)
    record = {"kind": "sweep", "spec": data,
              "setups": {label: without_execution(config) for label, config in configs.items()}}
    return {"fingerprint": fingerprint_of(_without_trainer_execution(record)), **record}


def _without_trainer_execution(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record less ``EXECUTION_TRAINER_KEYS`` in the spec's trainer and each setup's, and less
    ``LOCATION_KEYS`` in the spec's model and each setup's config."""
    out = copy.deepcopy(dict(record))
    spec = out["spec"]
    for part in [spec, *spec["setups"]]:
        if isinstance(part.get("trainer"), dict):
            for key in EXECUTION_TRAINER_KEYS:
                part["trainer"].pop(key, None)
    for model in [spec.get("model"), *(config.get("model") for config in out["setups"].values())]:
        if isinstance(model, dict):
            for key in LOCATION_KEYS:
                model.pop(key, None)
    return out


def fingerprint_of(data: Any) -> str:
    """16 hex digits of the SHA-256 of ``data`` as JSON with sorted keys (``str`` of anything JSON cannot hold)."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
