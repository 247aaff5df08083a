"""A backtest's results as typed data (``analysis.backtest`` computes them): per held-out point, what the law or
line refitted without that axis's largest value predicted there, and what the point's own trials say."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional

from .point_result import PointValue, json_interval, json_ready, point_value

__all__ = ["HeldOut", "Backtest"]


@dataclass(frozen=True)
class HeldOut:
    """One held-out point: its coordinates, its measured optimum (or, censored, the bound its grid's edge gives),
    the refit's prediction and predictive interval (the refit's range combined with the point's own error), the
    miss (predicted − measured, octaves), whether the interval held it, and the loss given up at the predicted LR
    read off the point's own bowl (None outside the LRs it tried)."""

    axis: str
    at: dict[str, PointValue]
    predicted: float
    interval: tuple[float, float]
    measured: Optional[float] = None
    bound: Optional[str] = None
    """``low`` (the optimum is at or below ``measured``) or ``high``: a censored point, reported as a bound."""
    miss: Optional[float] = None
    held: Optional[bool] = None
    regret: Optional[float] = None

    def to_json(self) -> dict[str, Any]:
        return json_ready({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "HeldOut":
        interval = json_interval(data["interval"])
        assert interval is not None
        return cls(axis=str(data["axis"]), at={str(k): point_value(v) for k, v in data["at"].items()},
                   predicted=float(data["predicted"]), interval=interval, measured=data.get("measured"),
                   bound=data.get("bound"), miss=data.get("miss"), held=data.get("held"), regret=data.get("regret"))


@dataclass
class Backtest:
    """Every held-out point of one setup (one refit per axis with three or more values), and the axes that had
    too few values to hold one out."""

    points: list[HeldOut] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    fit: str = "line"
    """What was refitted: the setup's ``law`` or each axis's ``line``."""

    def measured(self) -> list[HeldOut]:
        return [p for p in self.points if p.miss is not None]

    @property
    def median_miss(self) -> Optional[float]:
        """The median |miss| over the held-out points with a measured optimum (octaves)."""
        return _median([abs(p.miss) for p in self.measured() if p.miss is not None])

    @property
    def share_held(self) -> Optional[float]:
        measured = self.measured()
        return sum(bool(p.held) for p in measured) / len(measured) if measured else None

    def line(self, axis: Optional[str] = None) -> str:
        """``the law fitted without width 256 predicts it within −0.2 octave [held]`` for one held-out point, else
        the median |miss| and the share held."""
        points = [p for p in self.points if axis is None or p.axis == axis]
        if len(points) == 1:
            p = points[0]
            where = " ".join(f"{k} {v:g}" for k, v in p.at.items() if k == p.axis) or p.axis
            if p.miss is None:
                side = "≤" if p.bound == "low" else "≥"
                return (f"the {self.fit} fitted without {where} predicts {p.predicted:+.2f} there; that point's "
                        f"optimum is only a bound ({side} {p.measured:+.2f})")
            return (f"the {self.fit} fitted without {where} predicts it within {p.miss:+.2f} octave "
                    f"[{'held' if p.held else 'NOT held'}]")
        measured = [p for p in points if p.miss is not None]
        if not measured:
            return f"{len(points)} held-out points, none with a measured optimum"
        median = _median([abs(p.miss) for p in measured if p.miss is not None]) or 0.0
        held = sum(bool(p.held) for p in measured)
        return (f"{len(measured)} held-out points: median |miss| {median:.2f} octave, {held}/{len(measured)} held "
                f"by their predictive intervals" + (f" ({len(points) - len(measured)} censored, bounds only)"
                                                    if len(points) > len(measured) else ""))

    def brief(self) -> dict[str, Any]:
        """What a transfer file carries of the backtest: its line and its two figures."""
        return {"line": self.line(), "held_out": len(self.points), "median_miss": self.median_miss,
                "share_held": self.share_held}

    def to_json(self) -> dict[str, Any]:
        return {"fit": self.fit, "points": [p.to_json() for p in self.points], "skipped": dict(self.skipped),
                "median_miss": self.median_miss, "share_held": self.share_held}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Backtest":
        return cls([HeldOut.from_json(p) for p in data.get("points") or []],
                   {str(k): str(v) for k, v in (data.get("skipped") or {}).items()}, str(data.get("fit") or "line"))


def _median(values: list[float]) -> Optional[float]:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
