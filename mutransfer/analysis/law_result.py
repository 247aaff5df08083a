"""A law's results as typed data (``analysis.law`` computes them): one fit of the optimum over every swept axis,
its points, and each axis's verdict on its slope. ``analysis.result`` exports them with the rest."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional

from ..words import Verdict
from .point_result import PointResult, PointValue, json_copy, json_interval, json_ready, point_value

__all__ = ["LawPoint", "Judgement", "Law"]


@dataclass
class LawPoint:
    """One point of a law's fit: its value on every axis of the law and its optimum."""

    at: dict[str, PointValue]
    result: PointResult

    def to_json(self) -> dict[str, Any]:
        return {"at": dict(self.at), **self.result.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LawPoint":
        at = {str(k): point_value(v) for k, v in (data.get("at") or {}).items()}
        return cls(at, PointResult.from_json(0, {k: v for k, v in data.items() if k != "at"}))


@dataclass(frozen=True)
class Judgement:
    """A verdict with why it stands and what would change it."""

    verdict: Verdict
    reason: str = ""
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"verdict": self.verdict, "reason": self.reason, "fix": self.fix}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Judgement":
        return cls(Verdict(data.get("verdict", Verdict.INCONCLUSIVE)), str(data.get("reason") or ""),
                   str(data.get("fix") or ""))


@dataclass
class Law:
    """One fit of x* over every swept axis (``analysis.law``): coefficients per axis name, their covariance,
    the lack-of-fit test; ``beta`` the horizon exponent where steps or tokens is an axis."""

    axes: list[str]
    coefficients: dict[str, float]
    covariance: list[list[float]]
    dof: Optional[int]
    ci_kind: str
    points_used: int
    centre: dict[str, float]
    slope_ci: dict[str, tuple[float, float]]
    lack_of_fit: Optional[dict[str, Any]]
    fails_lack_of_fit: bool
    between_sd: Optional[float]
    between_source: Optional[str]
    lack_of_fit_line: str
    asymmetry: float
    beta: Optional[float] = None
    beta_ci: Optional[tuple[float, float]] = None
    points: list[LawPoint] = field(default_factory=list)
    """Every point the law saw (those off the axes' lines through the base point too), with its optimum."""
    slope_ci90: dict[str, tuple[float, float]] = field(default_factory=dict)
    verdicts: dict[str, Judgement] = field(default_factory=dict)
    """Each axis's verdict on the law's slope (``analysis.law.judge_law``)."""
    censored: int = 0
    """Points whose optimum is at their grid's edge: left out of the fit, counted here."""
    censored_shift: dict[str, float] = field(default_factory=dict)
    """How far each slope moves when the censored points enter the fit at their bounds."""
    contradicted: list[dict[str, PointValue]] = field(default_factory=list)
    """The censored points whose bound the law's 95 % range lies wholly beyond (they block a verdict)."""

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("points", "verdicts")}
        if self.beta is None:
            data.pop("beta"), data.pop("beta_ci")
        data = json_ready(data)
        data["verdicts"] = {name: judged.to_json() for name, judged in self.verdicts.items()}
        if self.points:
            data["points"] = [p.to_json() for p in self.points]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Law":
        names = {f.name for f in fields(cls)} - {"slope_ci", "slope_ci90", "beta_ci", "points", "verdicts"}
        return cls(slope_ci={k: json_interval(v) for k, v in (data.get("slope_ci") or {}).items()},  # type: ignore[misc]
                   slope_ci90={k: json_interval(v) for k, v in (data.get("slope_ci90") or {}).items()},  # type: ignore[misc]
                   verdicts={k: Judgement.from_json(v) for k, v in (data.get("verdicts") or {}).items()},
                   beta_ci=json_interval(data.get("beta_ci")), points=[LawPoint.from_json(p) for p in data.get("points") or []],
                   **{n: json_copy(data[n]) for n in names if n in data})
