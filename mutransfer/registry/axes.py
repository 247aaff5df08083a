"""The transfer axes: what a sweep may vary besides the searched hyperparameter, each in the one place that says
which config key it sets and how tables, specs, study names and commands call it. Plain data, no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .base import Registry

__all__ = ["Axis", "TRANSFER_AXES", "generic_axis", "axis_named", "axis_of_column"]


@dataclass(frozen=True)
class Axis:
    """One transfer axis: what a sweep may vary besides the searched hyperparameter, and the one place that says
    which config key it sets, which trials.csv column and summary key hold it, and its study-name tag.

    ``TRANSFER_AXES`` lists the axes a sweep spec can vary; ``axis_named`` and ``axis_of_column`` answer any other
    name with a generic axis (no config key, its name everywhere, log2 coordinates), so that an axis no config key
    sets and whose values are floats (a parameter count in a table imported from elsewhere) needs no new code."""

    name: str
    config_key: Optional[str]
    """The config key a trial's value on the axis sets; None for an axis no config key sets."""
    column: str
    plural: str
    """The spec key and ``SweepSpec`` field that list the axis's values, and the summary key that holds them."""
    tag: str
    option: str
    """The ``transfer`` and ``verify`` option that sets the target's value ('' for an axis they cannot set)."""
    log2: bool = True
    """Whether the analysis takes log2 of the axis's value as its coordinate."""
    example: str = ""
    """Values a spec might list for the axis, for messages that show how to list them."""
    counted: str = ""
    """What a sweep's header calls the axis's values when it counts them (``3 horizons``); '' : its plural."""
    cost: int = 0
    """The power of the axis's value that a trial's cost grows with (width²: parameters; depth, steps and batch
    size: 1; the token budget 0, since its steps carry it)."""


TRANSFER_AXES: Registry[Axis] = Registry("axis", (
    Axis("width", "model.width", "width", "widths", "w", "--width", example="[32, 64, 128]", cost=2),
    Axis("depth", "model.depth", "depth", "depths", "d", "--depth", example="[2, 4, 8]", cost=1),
    Axis("steps", "train.steps", "horizon", "steps", "t", "--steps", example="[150, 300, 600]", counted="horizons",
         cost=1),
    Axis("batch", "train.batch_size", "batch_size", "batch_sizes", "b", "--batch-size", example="[4, 8, 16, 32]",
         counted="batch sizes", cost=1),
    Axis("tokens", "train.tokens", "tokens", "tokens", "tok", "--tokens", example="[65536, 262144]",
         counted="token budgets"),
    Axis("experts", "model.moe.experts", "experts", "experts", "e", "", example="[8, 4, 16]",
         counted="expert counts"),
))
"""Width, depth (number of blocks), the training horizon in steps, the batch size (sequences per step) and the
token budget (batch × steps × sequence length), and a mixture of experts' number of routed experts (``model=moe``;
the target is ``--at experts=E``). The horizon's column is ``horizon`` because ``steps`` in
trials.csv is the number of steps a trial trained (fewer when it diverged). The first, width, is the axis every
sweep spec lists. A new axis is one entry here (or ``TRANSFER_AXES.register`` from the user's code) and nothing
else."""


def generic_axis(name: str) -> Axis:
    """The axis of a name ``TRANSFER_AXES`` does not list: no config key sets it, and ``name`` is its column,
    plural and tag."""
    return Axis(name=name, config_key=None, column=name, plural=name, tag=name, option="")


def axis_named(name: str) -> Axis:
    """The registered axis called ``name``, else ``generic_axis(name)``."""
    return next((a for a in TRANSFER_AXES if a.name == name), None) or generic_axis(name)


def axis_of_column(column: str) -> Axis:
    """The registered axis whose trials.csv column is ``column``, else ``generic_axis(column)``."""
    return next((a for a in TRANSFER_AXES if a.column == column), None) or generic_axis(column)
