"""A trial's bookkeeping attributes as one typed record: the seed it trains with, whether it was queued on the
grid or only records a lost race, who holds it and how it ended. The field names are the Optuna user-attribute
names, so the sweep reads them through ``TrialAttrs.of`` and writes them through ``TrialAttrs.write``, and a name
exists in one place. (A trial's measurements, ``lr``, the curve, the point's coordinates, are the result's and
``tables.collect``'s.)"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional, Union

import optuna
from optuna.trial import FrozenTrial

from ...words import TrialStatus

__all__ = ["TrialAttrs"]

Trial = Union[FrozenTrial, optuna.Trial]


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class TrialAttrs:
    seed: Optional[int] = None
    """The seed queued with the trial (a noise probe's); None: the study's."""
    grid: bool = False
    """Queued by the sweep at a policy's point (an ask that finds no such trial took an empty queue)."""
    spurious: bool = False
    """An ask that found the queue emptied between a worker's look and its ask."""
    duplicate: bool = False
    """A claim of a point another live trial already holds."""
    status: Optional[TrialStatus] = None
    """How it ended, as trials.csv writes it; None before it ended."""
    val_loss: Optional[float] = None
    message: str = ""
    """Why it failed, in full."""
    failure: str = ""
    """Why it failed, in one line: what ``trainer.max_failures`` compares."""
    host: Optional[str] = None
    pid: Optional[int] = None
    proc_start: Optional[str] = None
    """The worker's process start time, so a recycled pid is not taken for a live worker."""

    @classmethod
    def of(cls, trial: Trial) -> TrialAttrs:
        attrs = trial.user_attrs
        status = attrs.get("status")
        return cls(seed=_int(attrs.get("seed")), grid=bool(attrs.get("grid")), spurious=bool(attrs.get("spurious")),
                   duplicate=bool(attrs.get("duplicate")),
                   status=TrialStatus(status) if status in TrialStatus._value2member_map_ else None,
                   val_loss=_float(attrs.get("val_loss")), message=str(attrs.get("message") or ""),
                   failure=str(attrs.get("failure") or ""),
                   host=attrs.get("host") if isinstance(attrs.get("host"), str) else None,
                   pid=_int(attrs.get("pid")), proc_start=attrs.get("proc_start"))

    @property
    def bookkeeping(self) -> bool:
        """A trial that only records a lost race (a duplicate claim, an ask that found the queue empty)."""
        return self.duplicate or self.spurious

    @property
    def claimed(self) -> bool:
        """A worker has put its identity on the trial."""
        return self.pid is not None

    @staticmethod
    def checked(**values: Any) -> dict[str, Any]:
        """``values`` by attribute name; a name that is not a field is refused (a typo would be lost)."""
        unknown = sorted(set(values) - {f.name for f in fields(TrialAttrs)})
        if unknown:
            raise TypeError(f"not a trial attribute: {', '.join(unknown)}")
        return values

    @staticmethod
    def queued(seed: int) -> dict[str, Any]:
        """The attributes a point queued on the grid carries."""
        return TrialAttrs.checked(grid=True, seed=seed)

    @staticmethod
    def write(trial: optuna.Trial, **values: Any) -> None:
        """Set the named attributes on ``trial`` (``checked``)."""
        for name, value in TrialAttrs.checked(**values).items():
            trial.set_user_attr(name, value)
