"""A spec's axes: lists of integer values (``widths``, ``depths``, ``steps``, ``batch_sizes``, ``tokens``, and
seeds), the batch axis with what it holds fixed, and how the axes combine (``axes``). Plain data in, validated
tuples out; every refusal is one ``UserError`` line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from ...errors import UserError
from ...schema import TRANSFER_AXES, Axis, axis_named
from .search import spec_number

__all__ = ["COMBINATIONS", "HOLDS", "FIRST_LOOK_WIDTHS", "AxisValues", "Point", "axis_keys", "int_list", "axis_list",
           "batch_axis", "listed_axes", "varied_axes", "combination"]

COMBINATIONS = ("one", "product")
"""``axes: one`` sweeps each axis through the base point (the first value of every axis); ``product`` the full
grid; a list of axes' plurals crosses those."""
HOLDS = ("tokens", "steps")
"""What a batch axis holds fixed: the token budget (batch × steps × sequence length; the steps follow from it) or
the steps (the tokens grow with the batch)."""
FIRST_LOOK_WIDTHS = 3
"""Widths in a width-only sweep's first tier (``sweep.plan.sweep_plan``): the fewest whose optima leave a line a residual, so a
slope's interval rests on more than two points."""


def axis_keys() -> tuple[str, ...]:
    """The spec keys of the axes: each registered axis's plural, in ``TRANSFER_AXES`` order, and ``hold`` after the
    batch sizes."""
    return tuple(key for axis in TRANSFER_AXES for key in (axis.plural, *(("hold",) if axis.name == "batch" else ())))


@dataclass(frozen=True)
class AxisValues:
    """The values a spec lists on each registered axis, by axis name; an axis it does not list has ``()`` (the
    config's value)."""

    listed: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, Sequence[int]]) -> "AxisValues":
        """From ``{axis name: values}``, in ``TRANSFER_AXES`` order, the axes with no values left out."""
        return cls(tuple((axis.name, tuple(values[axis.name])) for axis in TRANSFER_AXES if values.get(axis.name)))

    def __getitem__(self, name: str) -> tuple[int, ...]:
        return next((values for axis, values in self.listed if axis == name), ())

    def by_name(self) -> dict[str, tuple[int, ...]]:
        """Every registered axis's values (``()`` where none are listed), in ``TRANSFER_AXES`` order."""
        return {axis.name: self[axis.name] for axis in TRANSFER_AXES}


class Point(tuple):
    """Where a study trains: one value per registered axis in ``TRANSFER_AXES`` order, None where the spec leaves
    the config's (``Point(64)``, ``Point(32, 2)``, ``Point(64, steps=300)``); ``point.depth`` reads an axis by name.
    Axes registered after the point was made read None; a point unpickled before its axes are registered (a sweep
    worker, before ``MUTRANSFER_PLUGINS`` is loaded) keeps its values and reads them once they are."""

    def __new__(cls, *values: Optional[int], **named: Optional[int]) -> "Point":
        names = TRANSFER_AXES.names()
        full = [*values, *[None] * (len(names) - len(values))]
        for name, value in named.items():
            if name not in names:
                raise TypeError(f"'{name}' is not a registered axis ({', '.join(names)})")
            full[names.index(name)] = value
        return super().__new__(cls, full)

    def __getnewargs__(self) -> tuple[Optional[int], ...]:
        return tuple(self)

    def __getattr__(self, name: str) -> Optional[int]:
        names = TRANSFER_AXES.names()
        if name not in names:
            raise AttributeError(name)
        index = names.index(name)
        return self[index] if index < len(self) else None

    def _replace(self, **changes: Optional[int]) -> "Point":
        return Point(**{**dict(zip(TRANSFER_AXES.names(), self)), **changes})

    def __repr__(self) -> str:
        return f"Point({', '.join(f'{name}={value}' for name, value in zip(TRANSFER_AXES.names(), self))})"


def int_list(where: str, value: Any, positive: bool) -> tuple[int, ...]:
    """A spec list of distinct integers (one integer is a list of one): sorted when ``positive`` (an axis), in
    the given order and ≥ 0 otherwise (seeds)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise UserError(f"{where} must be a non-empty list of integers", f"e.g. {where}: [32, 64, 128]")
    for item in value:
        spec_number(where, item, integer=True, positive=positive)
        if not positive and item < 0:
            raise UserError(f"{where} has {item}; seeds must be >= 0", "fix the spec")
    if len(set(value)) != len(value):
        raise UserError(f"{where} lists a value twice: {value}", "remove the duplicate")
    return tuple(sorted(value)) if positive else tuple(value)


def axis_list(data: dict[str, Any], axis: Axis, example: str) -> tuple[int, ...]:
    """A second axis's values (``depths``, ``steps``): each ≥ 1, at least two to fit a slope, and not also set
    by an override."""
    if data.get(axis.plural) is None:
        return ()
    values = int_list(axis.plural, data[axis.plural], True)
    if len(values) < 2:
        raise UserError(f"{axis.plural}={list(values)} names one value; an axis needs at least two",
                        f"e.g. {axis.plural}: {example}, or set it with overrides: [{axis.config_key}={values[0]}]")
    if any(o.startswith(f"{axis.config_key}=") for o in data.get("overrides") or []):
        raise UserError(f"the spec names {axis.plural} and also overrides {axis.config_key}",
                        f"remove the {axis.config_key} override")
    return values


def batch_axis(data: dict[str, Any]) -> tuple[tuple[int, ...], str, tuple[int, ...]]:
    """The batch axis: its sizes, what it holds fixed (``HOLDS``; tokens by default) and the token budgets."""
    batch = axis_named("batch")
    sizes = axis_list(data, batch, batch.example)
    hold = data.get("hold")
    if hold is not None and hold not in HOLDS:
        raise UserError(f"hold={hold!r} is not something a batch axis can hold fixed",
                        f"use one of: {', '.join(HOLDS)}")
    if not sizes:
        if hold is not None or data.get("tokens") is not None:
            what = f"hold: {hold}" if hold is not None else "tokens"
            raise UserError(f"{what} needs a batch axis", f"add {batch.plural}: {batch.example}, or remove it")
        return (), "", ()
    hold = hold or "tokens"
    if hold == "steps":
        if data.get("tokens") is not None:
            raise UserError("tokens is the budget that hold: tokens keeps; under hold: steps the tokens follow from "
                            "the batch", "remove tokens, or set hold: tokens")
        return sizes, hold, ()
    if data.get("tokens") is None:
        raise UserError("hold: tokens (the default with batch_sizes) needs the token budget",
                        "add tokens: [N] with N = batch × steps × train.seq_len, or set hold: steps")
    if data.get("steps") is not None or any(o.startswith("train.steps=") for o in data.get("overrides") or []):
        raise UserError("under hold: tokens the budget sets the steps, so steps cannot be set too",
                        "list token budgets as tokens: [...], or set hold: steps")
    if any(o.startswith("train.tokens=") for o in data.get("overrides") or []):
        raise UserError("the spec names tokens and also overrides train.tokens", "remove the train.tokens override")
    return sizes, hold, int_list("tokens", data["tokens"], True)


def listed_axes(data: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], str]:
    """Every axis's values by name, in ``TRANSFER_AXES`` order ((): the config's), and what a batch axis holds
    fixed ('' without one): the widths (``int_list``: one or more), the batch sizes with their token budgets
    (``batch_axis``), and each other axis by ``axis_list``."""
    widths, *others = TRANSFER_AXES
    values = {widths.name: int_list(widths.plural, data[widths.plural], True)}
    hold = ""
    for axis in others:
        if axis.name == "batch":
            values[axis.name], hold, values["tokens"] = batch_axis(data)
        elif axis.name not in values:
            values[axis.name] = axis_list(data, axis, axis.example)
    return values, hold


def varied_axes(values: Mapping[str, Sequence[Any]]) -> tuple[str, ...]:
    """The axes a spec varies, in ``TRANSFER_AXES`` order: width (the first) always, any other whose values (by
    axis name) are two or more."""
    return tuple(axis.name for i, axis in enumerate(TRANSFER_AXES) if i == 0 or len(values[axis.name]) > 1)


def combination(data: dict[str, Any], swept: Sequence[str]) -> str | tuple[str, ...]:
    """``axes``: one of ``COMBINATIONS``, or a list of two or more swept axes' plurals to cross."""
    axes = data.get("axes", "one")
    if "axes" in data and len(swept) < 2:
        raise UserError("axes is set but the spec names no second axis", "add depths: [2, 4, 8] or remove axes")
    if isinstance(axes, list):
        plurals = [axis.plural for axis in TRANSFER_AXES if axis.name in swept]
        wrong = next((a for a in axes if a not in plurals), None)
        if wrong is not None or len(set(axes)) < 2 or len(set(axes)) < len(axes):
            raise UserError(f"axes={axes} must list two or more of the axes the spec sweeps, once each"
                            + (f" ('{wrong}' is not one)" if wrong is not None else ""),
                            f"cross some of: {', '.join(plurals)}, or use one of: {', '.join(COMBINATIONS)}")
        return tuple(a for a in plurals if a in axes)
    if axes not in COMBINATIONS:
        raise UserError(f"axes={axes!r} is not a way to combine axes",
                        f"choose one of: {', '.join(COMBINATIONS)}, or list the axes to cross, e.g. "
                        "[batch_sizes, tokens]")
    return axes
