"""The per-role constants a transfer carries: those a sweep's ``constants`` tuned at one width and found to matter,
each the shipped value times its factor, with the factor's 95 % range and what the re-check across width said.
A constant with no effect stays at its shipped value; a parametrization under which a constant holds carries its
factor to any width (its optimum's slope across width ≈ 0), so a constant that drifts is carried with a warning."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from ..analysis.result import Summary
from ..config import config_from_dict, to_dict
from ..schema import Config, config_value
from ..table.constants import constant_keys, scaled
from ..words import Effect, Verdict

__all__ = ["TunedConstant", "tuned_constants", "with_constants", "constant_warnings"]


@dataclass(frozen=True)
class TunedConstant:
    """One tuned constant at the width it was tuned at: the log2 factor and its 95 % interval, the shipped and the
    tuned value, whether it matters there, and its optimum's slope and verdict across the re-check widths."""

    key: str
    log2_factor: float
    interval: Optional[tuple[float, float]]
    shipped: Any
    value: Any
    verdict: str
    width_slope: Optional[float]
    width_verdict: Optional[str]

    @property
    def applied(self) -> bool:
        return self.verdict == Effect.MATTERS

    def as_dict(self) -> dict[str, Any]:
        return {"log2_factor": round(self.log2_factor, 4),
                "range": [round(v, 4) for v in self.interval] if self.interval else None,
                "shipped": self.shipped, "value": self.value if self.applied else self.shipped,
                "tuned": self.value, "effect": self.verdict, "applied": self.applied,
                "width_slope": None if self.width_slope is None else round(self.width_slope, 4),
                "width_verdict": self.width_verdict}

    def line(self) -> str:
        """``optimizer.lr_mult.readout: 2^+1.50 [+1.20, +1.80] × 1/fan_in (matters; across width: transfers,
        slope +0.02)``."""
        interval = f" [{self.interval[0]:+.2f}, {self.interval[1]:+.2f}]" if self.interval else ""
        width = (f"; across width: {self.width_verdict}, slope {self.width_slope:+.2f}"
                 if self.width_verdict is not None and self.width_slope is not None else "")
        carried = "carried" if self.applied else "kept at the shipped value"
        return f"{self.key}: 2^{self.log2_factor:+.2f}{interval} × {self.shipped} ({self.verdict}, {carried}{width})"


def tuned_constants(summary: Summary, record: dict[str, Any], label: str, base: Config) -> list[TunedConstant]:
    """Each constant the sweep tuned for setup ``label`` (none when its spec had no ``constants``)."""
    constants = (record.get("spec") or {}).get("constants")
    if not constants:
        return []
    at = int(constants["at"])
    out = []
    for key in constants["keys"]:
        result = summary.setups(key).get(label)
        point = result.line.points.get(at) if result is not None else None
        if point is None or point.x_star is None or key not in constant_keys():
            continue
        fit = result.line if result is not None else None
        shipped = config_value(base, key)
        out.append(TunedConstant(key, float(point.x_star), point.ci, shipped, scaled(shipped, float(point.x_star)),
                                 point.constant.verdict if point.constant is not None else Effect.UNMEASURED,
                                 fit.slope if fit is not None else None,
                                 fit.verdict if fit is not None and len(fit.points) > 1 else None))
    return out


def with_constants(cfg: Config, constants: list[TunedConstant]) -> Config:
    """``cfg`` with every constant that matters at its tuned value."""
    overrides = [f"{c.key}={c.value}" for c in constants if c.applied]
    return config_from_dict(to_dict(cfg), overrides) if overrides else replace(cfg)


def constant_warnings(label: str, constants: list[TunedConstant]) -> list[str]:
    """A carried constant whose optimum moves with the width, whose holding across width is not shown, or one
    measured at its tuning width alone."""
    out = []
    for c in constants:
        if c.applied and c.width_verdict == Verdict.DRIFTS:
            out.append(f"{label}: {c.key}'s optimum moves with the width ({c.width_slope:+.2f} octaves per "
                       "doubling); it is carried at its tuning width's value, which the target may not share")
        elif c.applied and c.width_verdict == Verdict.INCONCLUSIVE:
            slope = f" (slope {c.width_slope:+.2f} per doubling)" if c.width_slope is not None else ""
            out.append(f"{label}: that {c.key} holds across width is not shown{slope}: its optimum is carried from "
                       "its tuning width; more noise seeds or re-check widths further apart would decide it")
        elif c.applied and c.width_verdict is None:
            out.append(f"{label}: {c.key} was tuned at one width and not measured at another; whether it holds "
                       "across width is unknown")
    return out
