"""One point's result as typed data: the optimum of a searched key at one value of an axis (``PointResult``), and
for a key measured against an anchor what its best value gains over it: weight decay against decay off
(``DecayEffect``), a tuned constant against factor 1 (``ConstantEffect``). With the JSON helpers every result of
``analysis.result`` writes and reads its fields with."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional

from ..words import DecayVerdict, Effect

__all__ = ["PointValue", "point_key", "point_value", "DecayEffect", "ConstantEffect", "PointResult", "measured_point",
           "json_interval", "json_ready", "json_copy"]

PointValue = float
"""A value on an axis: a whole number for width, depth, steps, batch and tokens (kept as ``int``), any positive
number for an axis a table brings (a parameter count, tokens per parameter)."""


def point_value(text: Any) -> PointValue:
    """A point as a number: ``int`` when whole, else ``float`` (JSON keys are text)."""
    number = float(text)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def point_key(value: PointValue | str) -> str:
    """A point as ``summary.json`` keys it: ``"64"``, ``"1.3e+08"`` only where the value is not whole; a law point
    compared on all axes keeps its label (``analysis.compare.law_point_label``)."""
    if isinstance(value, str) and not _numeric(value):
        return value
    number = point_value(value)
    return str(number) if isinstance(number, int) else repr(number)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def json_interval(value: Any) -> Optional[tuple[float, float]]:
    """An interval read back: JSON's null at an open end is -inf below, +inf above."""
    if value is None:
        return None
    low, high = value
    return (-math.inf if low is None else float(low), math.inf if high is None else float(high))


def json_ready(value: Any) -> Any:
    """JSON-ready: tuples as lists, inside lists and dicts too."""
    if isinstance(value, tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    return value


@dataclass
class DecayEffect:
    """Does a point's best weight decay beat decay off (``analysis.decay_effect``)."""

    off_loss: Optional[float]
    off_seed_losses: list[float]
    effect: Optional[float]
    effect_ci: Optional[tuple[float, float]]
    verdict: DecayVerdict
    """Effect, no effect or unmeasured."""

    def to_json(self) -> dict[str, Any]:
        return json_ready({"off_loss": self.off_loss, "off_seed_losses": self.off_seed_losses, "effect": self.effect,
                       "effect_ci": self.effect_ci, "verdict": self.verdict})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "DecayEffect":
        return cls(off_loss=data.get("off_loss"), off_seed_losses=list(data.get("off_seed_losses") or []),
                   effect=data.get("effect"), effect_ci=json_interval(data.get("effect_ci")),
                   verdict=DecayVerdict(data.get("verdict", data.get("decay_effect", DecayVerdict.UNMEASURED))))


@dataclass(frozen=True)
class ConstantEffect:
    """Does a tuned constant matter (``analysis.constant_effect``): the loss at factor 1 (the seeds' mean and each
    seed's), the gain of the best factor over it (positive: the tuned constant is better) with its 95 % interval,
    and the verdict (``constant_effect.CONSTANT_EFFECTS``)."""

    at_one: Optional[float]
    at_one_seeds: list[float]
    gain: Optional[float]
    gain_ci: Optional[tuple[float, float]]
    verdict: Effect

    def to_json(self) -> dict[str, Any]:
        return json_ready({"at_one": self.at_one, "at_one_seeds": self.at_one_seeds, "gain": self.gain,
                       "gain_ci": self.gain_ci, "verdict": self.verdict})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ConstantEffect":
        return cls(at_one=data.get("at_one"), at_one_seeds=list(data.get("at_one_seeds") or []),
                   gain=data.get("gain"), gain_ci=json_interval(data.get("gain_ci")),
                   verdict=Effect(data.get("verdict") or Effect.UNMEASURED))


@dataclass
class PointResult:
    """The optimum of one key at one point (``analysis.optimum``); ``x_star`` None where every trial there
    diverged or failed (``flags`` says which)."""

    point: PointValue
    x_star: Optional[float]
    ci: Optional[tuple[float, float]]
    se: Optional[float] = None
    dof: Optional[int] = None
    ci_kind: Optional[str] = None
    best_loss: Optional[float] = None
    flags: list[str] = field(default_factory=list)
    censored: Optional[str] = None
    """``low`` or ``high``: the optimum is at the grid's edge, a one-sided bound."""
    diverged_above: Optional[float] = None
    seed_vertices: list[float] = field(default_factory=list)
    window: list[float] = field(default_factory=list)
    shape_se: float = 0.0
    seed_censored: list[str] = field(default_factory=list)
    seed_best_losses: list[float] = field(default_factory=list)
    curvature: Optional[float] = None
    asymmetry: float = 1.0
    grid_seeds: list[int] = field(default_factory=list)
    """The seeds that trained the grid (the noise probes train the fit window only): the curve figures draw."""
    added: list[float] = field(default_factory=list)
    """Searched values past the spec's range, which the sweep added to bracket the optimum."""
    failed: int = 0
    """Trials at this point that failed (after their retries): missing points, neither a loss nor a bound."""
    decay: Optional[DecayEffect] = None
    constant: Optional[ConstantEffect] = None
    """A tuned constant at the width it was tuned at: its gain over factor 1 and whether it matters."""

    @property
    def estimated(self) -> bool:
        """An optimum or a bound at the grid's edge (not all diverged or failed)."""
        return self.x_star is not None

    @property
    def measured(self) -> bool:
        """An optimum inside the grid: a point of the line's fit."""
        return self.x_star is not None and not self.censored

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("point", "decay", "constant")}
        if self.decay is not None:
            data["decay"] = self.decay.to_json()
        if self.constant is not None:
            data["constant"] = self.constant.to_json()
        return json_ready(data)

    @classmethod
    def from_json(cls, point: PointValue, data: Mapping[str, Any]) -> "PointResult":
        names = {f.name for f in fields(cls)} - {"point", "decay", "constant", "x_star", "ci"}
        decay = data.get("decay")
        if decay is None and "decay_effect" in data:  # the first layout kept the effect among the point's fields
            decay = data
        return cls(point=point, x_star=data.get("x_star", data.get("log2_lr_star")), ci=json_interval(data.get("ci")),
                   decay=DecayEffect.from_json(decay) if decay is not None else None,
                   constant=ConstantEffect.from_json(data["constant"]) if data.get("constant") else None,
                   **{name: json_copy(data[name]) for name in names if name in data})


def measured_point(point: PointValue, data: Any) -> Optional[PointResult]:
    """An optimum a document holds (verify.json's ``measured``, either layout), None where none was measured."""
    result = PointResult.from_json(point, data) if isinstance(data, Mapping) else None
    return result if result is not None and result.x_star is not None else None


def json_copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value
