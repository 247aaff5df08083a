"""How a table of finished runs maps onto this tool's trials: which column holds the learning rate, the loss, the
seed, the setup, the status and each axis; which rows to keep; what counts as diverged. Pure data, parsed from the
``import`` command's options."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..errors import UserError

__all__ = ["AxisColumn", "RowFilter", "ImportMapping", "DUPLICATE_RULES", "parse_axis", "parse_where", "parse_lr_range",
           "parse_step", "check_axes", "check_mapping", "OPERATORS"]

DUPLICATE_RULES = ("refuse", "mean", "first")
"""What to do with rows that repeat a (setup, point, LR) with no seed column to tell them apart."""

OPERATORS: dict[str, Callable[[Any, Any], Any]] = {"<=": operator.le, ">=": operator.ge, "!=": operator.ne,
                                                   "==": operator.eq, "<": operator.lt, ">": operator.gt,
                                                   "=": operator.eq}
"""``--where``'s comparisons, longest spelling first (so ``<=`` is not read as ``<``)."""

AXIS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED = ("setup", "seed", "search_key", "log2_lr", "val_loss", "status", "trial", "message", "hold", "row")
"""trials.csv's own columns: an axis may not take their names."""


@dataclass(frozen=True)
class AxisColumn:
    """One axis of the imported table: its name in the analysis (and trials.csv) and the source column."""

    name: str
    column: str


@dataclass(frozen=True)
class RowFilter:
    """``--where "COLUMN OP VALUE"``: keep the rows where the comparison holds (numbers compared as numbers)."""

    column: str
    op: str
    value: str

    def text(self) -> str:
        return f"{self.column} {self.op} {self.value}"


@dataclass(frozen=True)
class ImportMapping:
    """The whole mapping of an import, as ``config.yaml`` records it."""

    lr: str
    loss: str
    axes: tuple[AxisColumn, ...]
    seed: Optional[str] = None
    setup: Optional[str] = None
    status: Optional[str] = None
    where: tuple[RowFilter, ...] = ()
    diverged_above: Optional[float] = None
    duplicates: str = "refuse"
    step: Optional[float] = None
    """The log2 grid (octaves) to bin the LRs on; None: the table's own LRs, the step inferred."""
    lr_range: Optional[tuple[float, float]] = None

    def columns(self) -> list[str]:
        """Every source column the mapping reads, in the order the options name them."""
        named = [self.lr, self.loss, self.seed, self.setup, self.status] + [a.column for a in self.axes]
        return list(dict.fromkeys([c for c in named if c] + [f.column for f in self.where]))

    def as_dict(self) -> dict[str, Any]:
        return {"lr": self.lr, "loss": self.loss, "seed": self.seed, "setup": self.setup, "status": self.status,
                "axes": {a.name: a.column for a in self.axes}, "where": [f.text() for f in self.where],
                "diverged_above": self.diverged_above, "duplicates": self.duplicates, "step": self.step,
                "lr_range": list(self.lr_range) if self.lr_range else None}


def parse_axis(text: str) -> AxisColumn:
    """``--axis NAME[=COLUMN]``: ``params=n_params`` reads column n_params as the axis params; ``tokens`` reads
    column tokens."""
    name, _, column = text.partition("=")
    name, column = name.strip(), (column.strip() or name.strip())
    if not AXIS_NAME.match(name):
        raise UserError(f"--axis '{text}': '{name}' is not a usable axis name",
                        "name an axis with letters, digits and _ (e.g. --axis params=n_params)")
    if name in RESERVED:
        raise UserError(f"--axis '{text}': '{name}' is one of trials.csv's own columns",
                        f"give the axis another name (e.g. --axis train_{name}={column})")
    return AxisColumn(name, column)


def parse_where(text: str) -> RowFilter:
    """``--where "COLUMN OP VALUE"`` with OP one of ``OPERATORS``."""
    for op in OPERATORS:
        column, found, value = text.partition(op)
        if found and column.strip() and value.strip():
            return RowFilter(column.strip(), op, value.strip().strip("'\""))
    raise UserError(f"--where '{text}' is not 'COLUMN OP VALUE'",
                    f"use one of {' '.join(OPERATORS)} (e.g. --where \"state == COMPLETE\" or --where \"tokens >= 1e9\")")


def parse_lr_range(text: Optional[str]) -> Optional[tuple[float, float]]:
    """``--lr-range LO,HI``: the learning rates the search could have reached, both positive, LO < HI."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise UserError(f"--lr-range '{text}' is not two numbers LO,HI", "e.g. --lr-range 1e-4,1e-1") from None
    if not (0 < low < high and math.isfinite(high)):
        raise UserError(f"--lr-range '{text}' needs 0 < LO < HI", "e.g. --lr-range 1e-4,1e-1")
    return low, high


def parse_step(text: Optional[str]) -> Optional[float]:
    """``--step OCTAVES``: a positive spacing of the log2 grid the LRs are binned on."""
    if text is None:
        return None
    try:
        step = float(text)
    except ValueError:
        step = math.nan
    if not (math.isfinite(step) and step > 0):
        raise UserError(f"--step '{text}' is not a positive number of octaves", "e.g. --step 0.5")
    return step


def check_mapping(mapping: ImportMapping) -> ImportMapping:
    """The mapping, refused when it names no learning-rate or loss column or no axis."""
    for option, column, example in (("--lr", mapping.lr, "lr"), ("--loss", mapping.loss, "'val/loss'")):
        if not column:
            raise UserError(f"no {option} given", f"name the column holding each run's {option[2:]}, e.g. {option} "
                            f"{example}")
    check_axes(mapping.axes)
    return mapping


def check_axes(axes: Sequence[AxisColumn]) -> tuple[AxisColumn, ...]:
    """At least one axis, each named once."""
    if not axes:
        raise UserError("no --axis given", "map at least one axis, e.g. --axis width or --axis params=n_params")
    names = [a.name for a in axes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"--axis {repeated[0]} is given twice", "name each axis once")
    return tuple(axes)
