"""A spec's top-level keys, and the words after ``mutransfer sweep SPEC`` that set them: a spec key
(``widths=[64,128]``, ``search.step=0.5``) changes the spec; any other ``key=value`` is a config override appended
to the spec's ``overrides``; a misplaced or misspelt spec key is refused naming it."""

from __future__ import annotations

import json
from typing import Any, Sequence

import yaml

from ...config import check_override_word
from ...errors import UserError, closest
from ...yamldoc import YAMLBoundError, parse_yaml
from .search import SEARCH_KEYS
from .axes import axis_keys

__all__ = ["spec_keys", "SETUP_KEYS", "MODEL_KEYS", "MODEL_DOCS", "apply_overrides"]


def spec_keys() -> tuple[str, ...]:
    """The keys a sweep spec may hold (every registered axis's plural among them)."""
    return ("name", "setups", *axis_keys(), "axes", "seeds", "search", "overrides", "coord_check", "batch_trials",
            "trunks", "model", "trainer", "stop", "constants", "log", "devices_per_trial")


SETUP_KEYS = ("overrides", "search", "trainer")
MODEL_KEYS = ("factory", "roles", "factory_path", "in_block", "blocks")
"""The keys of a spec's ``model`` section (a user's model factory); ``model.<key>=`` words set them."""
MODEL_DOCS = "docs/sweeps.md#your-own-model-modelfactory"
"""The page that documents the ``model`` section, named by its refusals."""


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Spec keys (``widths=[64,128]``, ``search.step=0.5``) change the spec; anything else is a config
    override appended to the spec's ``overrides`` (``train.steps=300``)."""
    data = json.loads(json.dumps(data))
    extra = data.get("overrides") or []
    if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
        raise UserError(f"overrides={extra!r} must be a list of key=value strings",
                        "e.g. overrides: [model.depth=2, train.steps=300]")
    extra = list(extra)
    for item in overrides:
        check_override_word(item, "`mutransfer sweep --help`", "widths=[64,128]")
        key, raw = item.split("=", 1)
        head = key.split(".")[0]
        _refuse_near_spec_key(head)
        spec_key = head in spec_keys() and key != "overrides" and (
            head != "model" or key == "model" or key.split(".")[1] in MODEL_KEYS)
        if spec_key:
            try:
                value = parse_yaml(raw)
            except YAMLBoundError as exc:
                raise UserError(f"the value of '{key}': {exc.problem}", exc.fix) from None
            except yaml.YAMLError:
                raise UserError(f"cannot parse the value of '{item}'", "use YAML syntax, e.g. widths=[64,128]") from None
            _set_dotted(data, key, value)
        else:
            extra.append(item)
    data["overrides"] = extra
    return data


def _refuse_near_spec_key(head: str) -> None:
    """A CLI override whose first key is neither a spec key nor near a config group, but a search key
    (``step=0.5``) or near a spec key (``widht=[64]``), is a misplaced or misspelt spec key: refused here, naming
    the spec key, rather than later as an unknown config key."""
    from ...config import GROUPS

    if head in spec_keys() or closest(head.lstrip("+~"), GROUPS):
        return
    match = f"search.{head}" if head in SEARCH_KEYS else closest(head, spec_keys())
    if match:
        raise UserError(f"unknown key '{head}'", f"did you mean the spec key '{match}'?")
