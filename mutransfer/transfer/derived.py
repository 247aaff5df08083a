"""The sections of a transfer file computed from its ``config`` (the plan, and copies of the model, parametrization and
train keys), their digest, and the check that refuses a file whose computed sections were edited by hand."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Optional

from ..config import to_dict
from ..errors import UserError
from ..files import YAML_DIGITS
from ..precision import written
from ..schema import Config

__all__ = ["derived_sections", "with_digest", "section_digest", "check_derived_sections", "first_difference"]


def derived_sections(cfg: Config) -> dict[str, Any]:
    """The parts of a transfer file computed from its ``config``: the plan (η, optimizer, one entry per
    parameter in ``param_groups``) and copies of the model, parametrization and train keys for reading; as
    plain JSON types, as the file writes them (``precision.written``: ``log2_lr`` to the octave's thousandth,
    float noise dropped)."""
    from ..model_kinds import model_plan  # torch: imported here, so that transfer's errors come without it
    from ..train.data import vocab_size

    return written(json.loads(json.dumps({
        **model_plan(cfg, vocab_size(cfg.data)).to_document(), "model": to_dict(cfg)["model"],
        "parametrization": {"name": cfg.parametrization.name, "base_width": cfg.parametrization.base_width,
                            **({"base_depth": cfg.parametrization.base_depth,
                                "depth_alpha": cfg.parametrization.depth_alpha}
                               if cfg.parametrization.depth_alpha else {})},
        "train": to_dict(cfg)["train"]})), octave_keys={"log2_lr"}, lr_keys=())


def section_digest(sections: dict[str, Any], rounded: bool = True) -> str:
    """A digest of the computed sections as a transfer file holds them: floats at the ``YAML_DIGITS`` the YAML
    keeps, so the file as written and as read back digest alike (``rounded=False``: every digit, as files
    written before YAML rounded its floats were digested)."""
    def written(value: Any) -> Any:
        if isinstance(value, float) and rounded:
            return float(f"{value:.{YAML_DIGITS}g}")
        if isinstance(value, dict):
            return {k: written(v) for k, v in value.items()}
        if isinstance(value, list):
            return [written(v) for v in value]
        return value

    return hashlib.sha256(json.dumps(written(sections), sort_keys=True).encode()).hexdigest()[:16]


def check_derived_sections(document: dict[str, Any], cfg: Config, path: Path) -> None:
    """Training reads only a transfer file's ``config``. The sections computed from it may be stale after an
    edit to the config (their ``computed_digest`` still matches: fine), but an edit to them would be silently
    ignored: refuse it, naming the first field that differs from what the config gives."""
    expected = derived_sections(cfg)
    found = {k: document.get(k) for k in expected}
    where = first_difference(found, expected, "")
    digests = (section_digest(found), section_digest(found, rounded=False))
    if where is not None and document.get("computed_digest") not in digests:
        key, found, wanted = where
        raise UserError(f"{path}: {key} is {found!r} but its config gives {wanted!r}; train reads only the file's "
                        "config section", "edit the config keys instead (e.g. train --config FILE optimizer.lr=0.01 "
                        "or parametrization.roles.hidden.c.muon=1), or run mutransfer transfer again")


def first_difference(found: Any, wanted: Any, key: str) -> Optional[tuple[str, Any, Any]]:
    """The first path at which ``found`` differs from ``wanted`` (numbers to 1e-9 relative), or None."""
    if isinstance(wanted, dict):
        if not isinstance(found, dict):
            return key, found, wanted
        for name in wanted:
            diff = first_difference(found.get(name), wanted[name], f"{key}.{name}" if key else name)
            if diff:
                return diff
        extra = next((name for name in found if name not in wanted), None)
        return (f"{key}.{extra}" if key else extra, found[extra], None) if extra is not None else None
    if isinstance(wanted, list) and wanted and all(isinstance(w, dict) and "name" in w for w in wanted):
        if not isinstance(found, list) or [f.get("name") if isinstance(f, dict) else f for f in found] != \
                [w["name"] for w in wanted]:
            return key, "a different list of parameters", "one entry per model parameter"
        return next((d for f, w in zip(found, wanted) if (d := first_difference(f, w, f"{key}[{w['name']}]"))),
                    None)
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) and isinstance(found, (int, float)) \
            and not isinstance(found, bool):
        return None if math.isclose(found, wanted, rel_tol=1e-9, abs_tol=1e-300) else (key, found, wanted)
    return None if found == wanted else (key, found, wanted)


def with_digest(sections: dict[str, Any]) -> dict[str, Any]:
    """The computed sections and their digest, which ``check_derived_sections`` compares on reading."""
    return {**sections, "computed_digest": section_digest(sections)}
