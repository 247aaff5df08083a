"""The transfer file's layout: one shape for the file ``transfer`` writes from a sweep and from an import
(``transfer.target``, ``transfer.imported``), the fields only one source writes, the precision every float is
written at, and the older layouts read back (by ``transfer_targets`` for the figures, and ``train --config``).

The file's ``mutransfer_transfer`` field names its layout. ``TRANSFER_VERSION`` (2) is the one written for every
source: η* with its 95 % range and the target in ``prediction`` (``target``, ``log2_lr``, ``lr``, ``interval``,
``lr_range``, ...), where the run came from in ``source`` (``kind``: ``sweep`` or ``import``). Files written
before it hold one of ``OLD_LAYOUTS``: ``1``, a sweep's, whose ``prediction`` held the target's axes beside η*
(``width: 4096``); ``import``, an import's, with η* at the top level (``log2_lr``, ``interval_log2``, ``target``,
``noise``) and no ``prediction``. ``upgraded`` reads any of them as version 2.

A field is named by its key path (``prediction.log2_lr``); ``*`` stands for an axis's name in a sweep's per-axis
fields (``source.depth_slope``). A field with no field listed below it holds whatever its section holds (the
target's axes, the config, the plan): ``fields_of`` stops there."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..errors import UserError
from ..files import atomic_write_text, dump_yaml, write_json
from ..precision import lr_digits, octaves, written

__all__ = ["TRANSFER_KEY", "TRANSFER_VERSION", "OLD_LAYOUTS", "SWEEP", "IMPORT", "COMMON_FIELDS", "SWEEP_FIELDS",
           "IMPORT_FIELDS", "KEYED_SECTIONS", "estimate_fields", "at_written_precision", "write_transfer_file",
           "is_transfer", "upgraded", "fields_of", "undeclared"]

TRANSFER_KEY = "mutransfer_transfer"
TRANSFER_VERSION = 2
OLD_LAYOUTS = (1, "import")
"""The layouts files written before ``TRANSFER_VERSION`` hold: ``1`` (a sweep's), ``import`` (an import's)."""
SWEEP = "sweep"
IMPORT = "import"
"""``source.kind``: where the prediction comes from."""

COMMON_FIELDS = (
    TRANSFER_KEY,
    "prediction", "prediction.target", "prediction.log2_lr", "prediction.lr", "prediction.interval",
    "prediction.lr_range", "prediction.half_width", "prediction.tolerance", "prediction.within_tolerance",
    "source", "source.kind", "source.run_dir", "source.setup",
    "backtest", "backtest.line", "backtest.held_out", "backtest.median_miss", "backtest.share_held",
    "lr", "log2_lr", "warnings", "config")
"""The fields every transfer file has (``backtest`` where the run's backtest held a point out; ``config`` null
where there is no model config to train: an import, a trainer command without ``model.factory``)."""
SWEEP_FIELDS = (
    "partial",
    "prediction.extrapolated_doublings", "prediction.narrow", "prediction.lack_of_fit", "prediction.applied_slopes",
    "source.verdict", "source.reason", "source.slope", "source.slope_ci", "source.asymmetry",
    "source.asymmetry_se_log", "source.swept_widths", "source.swept_depth", "source.log2_lr_star", "source.law",
    "source.*_slope", "source.*_slope_ci", "source.*_verdict", "source.swept_*",
    "decay", "constants", "correct_drift", "implied_error_octaves",
    "mutransfer_plan", "preset", "width", "base_width", "depth", "base_depth", "depth_alpha", "branch_multiplier",
    "weight_decay_rule", "steps", "optimizer", "param_groups", "model", "parametrization", "train",
    "computed_digest", "trainer")
"""The fields only a sweep's transfer writes: the fit's extras, what its analysis found, the decay and tuned
constants it carries, the model's plan (a ``Plan`` file's fields), a trainer command's section."""
IMPORT_FIELDS = ("prediction.held_at_centre", "prediction.extrapolated_octaves", "prediction.slopes",
                 "source.noise")
"""The fields only an import's transfer writes: the axes held at the table's centre, each axis's extrapolation
beyond the table, the law's slopes and how the import measured its noise."""

KEYED_SECTIONS = ("prediction", "backtest", "lr", "log2_lr", "implied_error_octaves")
"""The fields whose numbers are written by their key's rule (``precision.written``: octaves, learning rates);
every other section is built at its own precision by the code that computes it (the source's statistics, the
decay, the plan, the config) and has only its float noise dropped here."""


def estimate_fields(log2_lr: float, interval: Optional[Sequence[float]]) -> dict[str, Any]:
    """``prediction``'s estimate as every source writes it: log2 η* and its interval to the octave's thousandth,
    η* and its range as learning rates (2^log2 to ``LR_DIGITS`` significant digits, from the rounded log2)."""
    log2 = octaves(log2_lr)
    ends = [octaves(float(v)) for v in interval] if interval is not None else None
    return {"log2_lr": log2, "lr": lr_digits(2.0**log2), "interval": ends,
            "lr_range": [lr_digits(2.0**v) for v in ends] if ends is not None else None}


def at_written_precision(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with every float, at any depth, at the precision the file writes it at (``precision``)."""
    return {key: written({key: value})[key] if key in KEYED_SECTIONS else written(value, (), ())
            for key, value in document.items()}


def write_transfer_file(document: Mapping[str, Any], path: Path, fmt: str) -> None:
    """Write the transfer file atomically, YAML or JSON (a NaN written null), every float at its written
    precision (``at_written_precision``)."""
    data = at_written_precision(document)
    if fmt == "json":
        write_json(path, data)
    else:
        atomic_write_text(path, dump_yaml(data))


def is_transfer(document: Any) -> bool:
    """Whether a parsed file is a transfer file (of any layout)."""
    return isinstance(document, Mapping) and TRANSFER_KEY in document


def upgraded(document: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A transfer file's ``document`` in ``TRANSFER_VERSION``'s layout, whichever layout it was written in; a
    layout this version does not know is refused in one line naming the file (``where``)."""
    version = document.get(TRANSFER_KEY)
    if version == TRANSFER_VERSION:
        return dict(document)
    if version == 1:
        return _from_sweep_v1(document)
    if version == IMPORT:
        return _from_import(document)
    known = ", ".join(str(v) for v in (*OLD_LAYOUTS, TRANSFER_VERSION))
    raise UserError(f"{where}: {TRANSFER_KEY} {version!r} is not a transfer layout this mutransfer reads ({known})",
                    "write it again with this mutransfer's transfer command, or upgrade mutransfer")


_V1_PREDICTION = ("width", "log2_lr", "interval", "half_width", "within_tolerance", "tolerance",
                  "extrapolated_doublings", "narrow", "lack_of_fit", "applied_slopes")
"""Layout 1's ``prediction`` fields; its other keys were the target's axes besides width."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _from_sweep_v1(document: Mapping[str, Any]) -> dict[str, Any]:
    """Layout 1: the target's axes in ``prediction`` beside η*; no ``source.kind``; no ``config`` for a trainer."""
    old = document.get("prediction") if isinstance(document.get("prediction"), Mapping) else {}
    target = {"width": old.get("width"),
              **{k: v for k, v in old.items() if k not in _V1_PREDICTION and v is not None}}
    interval = old.get("interval")
    interval = interval if isinstance(interval, list) and len(interval) == 2 and all(map(_number, interval)) else None
    estimate = (estimate_fields(old["log2_lr"], interval) if _number(old.get("log2_lr")) else
                {"log2_lr": None, "lr": None, "interval": None, "lr_range": None})
    prediction = {"target": target, **estimate,
                  **{k: old.get(k) for k in ("half_width", "tolerance", "within_tolerance", "extrapolated_doublings",
                                             "narrow", "lack_of_fit")},
                  **({"applied_slopes": old["applied_slopes"]} if "applied_slopes" in old else {})}
    source = document.get("source") if isinstance(document.get("source"), Mapping) else {}
    return {**document, TRANSFER_KEY: TRANSFER_VERSION, "prediction": prediction,
            "source": {"kind": SWEEP, **source}, "config": document.get("config")}


def _from_import(document: Mapping[str, Any]) -> dict[str, Any]:
    """Layout ``import``: η*, its range and the target at the top level; the noise beside the source; the
    backtest as its line."""
    source = document.get("source") if isinstance(document.get("source"), Mapping) else {}
    prediction = {"target": document.get("target"), "held_at_centre": document.get("held_at_centre") or [],
                  "log2_lr": document.get("log2_lr"), "lr": document.get("lr"),
                  "interval": document.get("interval_log2"), "lr_range": document.get("lr_range"),
                  **{k: document.get(k) for k in ("half_width", "tolerance", "within_tolerance",
                                                  "extrapolated_octaves", "slopes")}}
    backtest = document.get("backtest")
    return {TRANSFER_KEY: TRANSFER_VERSION, "prediction": prediction,
            "source": {"kind": IMPORT, **source, "noise": document.get("noise")},
            **({"backtest": {"line": backtest}} if isinstance(backtest, str) and backtest else {}),
            "lr": document.get("lr"), "log2_lr": document.get("log2_lr"), "warnings": document.get("warnings") or [],
            "config": None}


def _declared() -> tuple[str, ...]:
    return (*COMMON_FIELDS, *SWEEP_FIELDS, *IMPORT_FIELDS)


def _field(path: str, declared: tuple[str, ...]) -> Optional[str]:
    """The declared field ``path`` belongs to: itself, or the nearest field above it with no field listed below
    it; None when it is none of the layout's."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        head = ".".join(parts[:end])
        field = next((f for f in declared if fnmatch.fnmatchcase(head, f)), None)
        if field is None:
            continue
        if end == len(parts) or not any(f.startswith(field + ".") for f in declared):
            return field
        return None
    return None


def _paths(data: Any, prefix: str = "") -> list[str]:
    """Every key path of ``data``; a list's items are walked under the list's own path."""
    out = []
    if isinstance(data, Mapping):
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out += [path, *_paths(value, path)]
    elif isinstance(data, list):
        for item in data:
            out += _paths(item, prefix)
    return out


def fields_of(document: Mapping[str, Any]) -> set[str]:
    """The layout's fields a (version 2) document holds, by their declared names (``source.*_slope``); a key path
    the layout does not declare is returned as itself."""
    declared = _declared()
    return {_field(path, declared) or path for path in _paths(document)}


def undeclared(document: Mapping[str, Any]) -> list[str]:
    """The key paths of a (version 2) document that no field of the layout names."""
    declared = _declared()
    return [path for path in _paths(document) if _field(path, declared) is None]
