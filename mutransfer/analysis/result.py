"""The analysis's results as typed data: what ``summary.json`` holds, and what every consumer reads.

The point-level results (``PointResult`` and the anchor effects) live in ``analysis.point_result`` and are
exported here with the rest. A result does not know which hyperparameter was searched or which axes were swept: a **key** is the searched
hyperparameter (the learning rate ``optimizer.lr`` is one key among others), an **axis** is one of the swept
coordinates (width, depth, a token budget, a parameter count: ``schema.axis_named``), a **point** is one value on
an axis. Per key and setup:

- ``PointResult``: the optimum at one point — ``x_star`` in the key's own coordinate (log2 η for the learning
  rate), its interval, censoring, the seeds' vertices, the fitted bowl; for a weight-decay key its effect against
  decay off (``DecayEffect``).
- ``AxisFit``: the points along one axis and the weighted line of ``x_star`` against log2 of the axis value —
  slope, intervals, lack of fit, and the verdict on that axis alone.
- ``Law``: one fit over every swept axis (``analysis.law``).
- ``SetupResult``: every axis's fit, the law, the batch analysis, and the setup's verdict (the first axis's,
  made ``inconclusive`` when the law fails its lack-of-fit test).
- ``Summary``: every key's setups, with the sweep's status.

``Summary.to_json`` writes layout ``SUMMARY_VERSION``; ``Summary.from_json`` reads it and the first layout
(no ``version``: the learning rate under ``setups``, other keys under ``keys``, the width's fit and points at the
top of a setup's entry and ``log2_lr_star`` for every key's optimum), so run directories written before still
load.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Optional

from ..schema import LR_KEY, axis_named
from ..words import Verdict
from .fates import Fates
from .held_out import Backtest
from .law_result import Judgement, Law, LawPoint
from .point_result import (ConstantEffect, DecayEffect, PointResult, PointValue, json_copy, json_interval, json_ready,
                           measured_point, point_key, point_value)

__all__ = ["SUMMARY_VERSION", "PointValue", "point_key", "point_value", "DecayEffect", "ConstantEffect", "PointResult",
           "measured_point", "AxisFit", "LawPoint", "NOISE_METHODS", "Noise", "Judgement", "Law", "SetupResult",
           "Unfitted", "KeyResult", "Basis", "Summary", "PRIMARY", "READABLE_VERSIONS", "Fates", "Backtest"]

SUMMARY_VERSION = 3
"""The layout ``Summary.to_json`` writes. 1 (unmarked): the learning rate's names for every key and axis; 2: the
layout 3 extends with keys only (a setup's ``primary``, ``fates`` and ``backtest``, a line's cut ``at``, the law's
90 % slope intervals, per-axis verdicts and censored points, a key's ``unfitted`` setups)."""
READABLE_VERSIONS = (2, SUMMARY_VERSION)
"""The layouts ``Summary.from_json`` reads as written (and 1, through ``SetupResult.from_first_layout``)."""
PRIMARY = ("line", "law")
"""What carries a setup's verdict and prediction: the first axis's line through the base point (a sweep), or the
law over every point (an import whose points vary on two or more axes, or a setup no base-point line holds)."""

@dataclass
class AxisFit:
    """The points along one axis and the weighted line of x* against log2 of the axis value
    (``analysis.drift``), with the verdict on this axis alone."""

    axis: str
    verdict: Verdict
    ci_kind: str
    points: dict[PointValue, PointResult] = field(default_factory=dict)
    slope: Optional[float] = None
    slope_ci: Optional[tuple[float, float]] = None
    slope_ci90: Optional[tuple[float, float]] = None
    intercept: Optional[float] = None
    centre: Optional[float] = None
    """The weighted centre of the measured points' log2 axis values."""
    se_slope: Optional[float] = None
    se_centre: Optional[float] = None
    dof: Optional[int] = None
    reason: str = ""
    fix: str = ""
    used: list[PointValue] = field(default_factory=list)
    """The points whose optimum was measured (the line's points)."""
    lack_of_fit: Optional[dict[str, Any]] = None
    between_sd: Optional[float] = None
    between_source: Optional[str] = None
    lack_of_fit_line: str = ""
    asymmetry: Optional[float] = None
    asymmetry_se_log: Optional[float] = None
    seed_correlation: Optional[float] = None
    decay_counts: Optional[dict[str, int]] = None
    """A weight-decay key: how many points show each ``decay_effect.EFFECTS`` verdict."""
    at: Optional[dict[str, PointValue]] = None
    """Where the line cuts the other axes: every other axis's value on it (the base point's, or, where the base
    point's line holds fewer than two measured optima, the cut holding the most); None with one axis."""

    def estimated(self) -> dict[PointValue, PointResult]:
        """The points with an estimate (a measured optimum, or a bound at the grid's edge)."""
        return {p: o for p, o in self.points.items() if o.estimated}

    def measured(self) -> dict[PointValue, PointResult]:
        """The points whose optimum was measured (not censored, not all diverged or failed)."""
        return {p: o for p, o in self.points.items() if o.measured}

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("axis", "points", "decay_counts")}
        if self.decay_counts is not None:
            data["decay_counts"] = dict(self.decay_counts)
        data["points"] = {point_key(p): o.to_json() for p, o in self.points.items()}
        return json_ready(data)

    @classmethod
    def from_json(cls, axis: str, data: Mapping[str, Any]) -> "AxisFit":
        points = {point_value(k): PointResult.from_json(point_value(k), v)
                  for k, v in (data.get("points") or {}).items()}
        scalar = {f.name for f in fields(cls)} - {"axis", "points", "slope_ci", "slope_ci90", "used", "decay_counts",
                                                  "at"}
        at = data.get("at")
        return cls(axis=axis, points=points, slope_ci=json_interval(data.get("slope_ci")),
                   at={str(k): point_value(v) for k, v in at.items()} if at else None,
                   slope_ci90=json_interval(data.get("slope_ci90")), used=[point_value(p) for p in data.get("used") or []],
                   decay_counts=dict(data["decay_counts"]) if data.get("decay_counts") else None,
                   **{name: json_copy(data[name]) for name in scalar if name in data})


@dataclass
class SetupResult:
    """One setup's results for one key: a fit per swept axis (the first is width), the law over them, the batch
    worth using (a learning rate swept across batch sizes at fixed budgets: ``analysis.batch``'s document), and
    the setup's verdict with its reason and fix."""

    setup: str
    axes: dict[str, AxisFit]
    verdict: Verdict
    reason: str = ""
    fix: str = ""
    law: Optional[Law] = None
    batch: Optional[dict[str, Any]] = None
    primary: str = "line"
    """``PRIMARY``: what carries the verdict and the prediction."""
    fates: Optional[Fates] = None
    backtest: Optional[Backtest] = None

    @property
    def line(self) -> Optional[AxisFit]:
        """The first axis's fit (width's): the line ``transfer`` carries; None where the law is primary (the axes'
        lines are then only the points drawn along each axis)."""
        if self.primary == "law" or not self.axes:
            return None
        return next(iter(self.axes.values()))

    @property
    def first_axis(self) -> str:
        """The axis whose verdict is the setup's: the line's, or the law's first."""
        if self.line is not None:
            return self.line.axis
        return next((name for name in self.axes if self.law is not None and name in self.law.axes),
                    next(iter(self.axes), ""))

    def judged(self, axis: str) -> AxisFit:
        """``axis``'s fit as a reader is shown it: the line's first axis with the setup's verdict, reason and fix
        (the law's judgement included), any other with its own; where the law is primary, every axis with the
        law's slope and verdict on that axis."""
        fit = self.axes[axis]
        if self.primary == "law":
            law = self.law
            if law is None or axis not in law.verdicts:
                return fit
            judged = law.verdicts[axis]
            return replace(fit, verdict=judged.verdict, reason=judged.reason, fix=judged.fix,
                           slope=law.coefficients[axis], slope_ci=law.slope_ci[axis], slope_ci90=law.slope_ci90[axis])
        if fit is not self.line:
            return fit
        return replace(fit, verdict=self.verdict, reason=self.reason, fix=self.fix)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"verdict": self.verdict, "reason": self.reason, "fix": self.fix,
                                "primary": self.primary,
                                "axes": {name: fit.to_json() for name, fit in self.axes.items()}}
        if self.law is not None:
            data["law"] = self.law.to_json()
        if self.batch is not None:
            data["batch"] = json_ready(self.batch)
        if self.fates is not None:
            data["fates"] = self.fates.to_json()
        if self.backtest is not None:
            data["backtest"] = self.backtest.to_json()
        return data

    @classmethod
    def from_json(cls, setup: str, data: Mapping[str, Any]) -> "SetupResult":
        law = data.get("law")
        return cls(setup=setup, axes={name: AxisFit.from_json(name, fit) for name, fit in data["axes"].items()},
                   verdict=Verdict(data.get("verdict", Verdict.INCONCLUSIVE)), reason=str(data.get("reason") or ""),
                   fix=str(data.get("fix") or ""), law=Law.from_json(law) if law else None, batch=data.get("batch"),
                   primary=str(data.get("primary") or "line"),
                   fates=Fates.from_json(data["fates"]) if data.get("fates") else None,
                   backtest=Backtest.from_json(data["backtest"]) if data.get("backtest") else None)

    @classmethod
    def from_first_layout(cls, setup: str, data: Mapping[str, Any]) -> "SetupResult":
        """A setup entry written before ``version`` 2: the width's fit and points at the top, each other axis's
        under ``axes`` with the axis's plural for its points (``depths``, ``steps``) and ``centre_log2_<axis>``."""
        axes = {"width": AxisFit.from_json("width", _first_axis(data, "width"))}
        for name, entry in (data.get("axes") or {}).items():
            if name != "width" and entry:
                axes[name] = AxisFit.from_json(name, _first_axis(entry, name))
        width = (data.get("axes") or {}).get("width") or {}
        for word in ("verdict", "reason", "fix"):  # the width line's own; the setup's may be the law's judgement
            if word in width:
                setattr(axes["width"], word, width[word] or ("" if word != "verdict" else Verdict.INCONCLUSIVE))
        law = data.get("law")
        return cls(setup=setup, axes=axes, verdict=Verdict(data.get("verdict", Verdict.INCONCLUSIVE)),
                   reason=str(data.get("reason") or ""), fix=str(data.get("fix") or ""),
                   law=Law.from_json(law) if law else None, batch=data.get("batch"))


def _first_axis(entry: Mapping[str, Any], axis: str) -> dict[str, Any]:
    """One axis's entry of the first layout in the names ``AxisFit.from_json`` reads."""
    plural = axis_named(axis).plural
    data = {k: v for k, v in entry.items() if k not in (plural, f"{plural}_used", f"centre_log2_{axis}")}
    data["points"] = entry.get(plural) or {}
    data["used"] = entry.get(f"{plural}_used") or []
    data["centre"] = entry.get(f"centre_log2_{axis}")
    if isinstance(entry.get("decay_effect"), dict):
        data["decay_counts"] = entry["decay_effect"]
    return data


@dataclass(frozen=True)
class Unfitted:
    """A setup no point of which has an optimum inside its LRs: why, what would fix it, and its points' fates."""

    reason: str
    fix: str
    fates: Fates

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "fix": self.fix, "fates": self.fates.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Unfitted":
        return cls(str(data.get("reason") or ""), str(data.get("fix") or ""), Fates.from_json(data.get("fates") or {}))


@dataclass
class KeyResult:
    """One searched key's results: each setup's, and the setups that could not be fitted (named, with why)."""

    key: str
    setups: dict[str, SetupResult] = field(default_factory=dict)
    unfitted: dict[str, Unfitted] = field(default_factory=dict)


NOISE_METHODS = ("seeds", "residuals")
"""How a summary's intervals measured noise: the spread of the seeds' own optima, or (one run per point and LR,
no seeds) the bowl fits' residuals with the between-point scatter about the law (``analysis.no_seeds``)."""


@dataclass
class Noise:
    """How the noise that an imported table's intervals carry was measured, and whether simulation shows them
    calibrated (covering ≥ 0.90 of the truth); uncalibrated intervals keep every verdict ``inconclusive``."""

    method: str
    calibrated: bool
    reason: str

    def line(self) -> str:
        state = "calibrated" if self.calibrated else "UNCALIBRATED (verdicts stay inconclusive)"
        return f"{self.method}, {state}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "calibrated": self.calibrated, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Noise":
        return cls(str(data["method"]), bool(data["calibrated"]), str(data.get("reason") or ""))


@dataclass(frozen=True)
class Basis:
    """What a provisional answer rests on: the widths with a finished trial, the trials finished of those planned,
    and the widths whose noise probes have run (a verdict needs measured seed noise)."""

    widths: tuple[int, ...]
    trials: int
    planned: int
    noise_widths: tuple[int, ...]

    def line(self) -> str:
        noise = (f"noise measured at widths {', '.join(map(str, self.noise_widths))}" if self.noise_widths
                 else "noise not measured yet")
        return f"widths {', '.join(map(str, self.widths))}; {self.trials}/{self.planned} trials; {noise}"

    def to_json(self) -> dict[str, Any]:
        return {"widths": list(self.widths), "trials": self.trials, "planned": self.planned,
                "noise_widths": list(self.noise_widths)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Basis":
        return cls(tuple(int(w) for w in data["widths"]), int(data["trials"]), int(data["planned"]),
                   tuple(int(w) for w in data["noise_widths"]))


@dataclass
class Summary:
    """``summary.json``: every searched key's results, what a batch axis held fixed, the sweep's status
    (``sweep.store.completion.SweepStatus.as_dict``) when a sweep wrote it, and for an imported table how its noise was
    measured."""

    keys: dict[str, KeyResult] = field(default_factory=dict)
    hold: Optional[str] = None
    status: Optional[dict[str, Any]] = None
    noise: Optional[Noise] = None
    provisional: Optional[Basis] = None
    """Written by a sweep still training: what this answer rests on so far (None: the sweep's final answer)."""
    stopped: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Setups a sweep that stops when decided stopped at a look (``sweep.run.stopping.Stop.as_dict``)."""

    def setups(self, key: str = LR_KEY) -> dict[str, SetupResult]:
        """The setups' results for ``key`` (none when the sweep did not search it)."""
        return self.keys[key].setups if key in self.keys else {}

    def unfitted(self, key: str = LR_KEY) -> dict[str, Unfitted]:
        """The setups of ``key`` that could not be fitted, each with why."""
        return self.keys[key].unfitted if key in self.keys else {}

    def other_keys(self) -> list[str]:
        """The searched keys besides the learning rate."""
        return [key for key in self.keys if key != LR_KEY]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"version": SUMMARY_VERSION}
        if self.status is not None:
            data["status"] = dict(self.status)
        if self.hold is not None:
            data["hold"] = self.hold
        if self.noise is not None:
            data["noise"] = self.noise.to_json()
        if self.provisional is not None:
            data["provisional"] = True
            data["basis"] = self.provisional.to_json()
        if self.stopped:
            data["stopped"] = {label: dict(stop) for label, stop in self.stopped.items()}
        data["keys"] = {key: {"setups": {label: s.to_json() for label, s in result.setups.items()},
                              **({"unfitted": {label: u.to_json() for label, u in result.unfitted.items()}}
                                 if result.unfitted else {})}
                        for key, result in self.keys.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Summary":
        """Either layout (``SUMMARY_VERSION`` or the first); a damaged document raises ``KeyError``,
        ``TypeError``, ``ValueError`` or ``AttributeError``."""
        version = data.get("version", 1)
        if version in READABLE_VERSIONS:
            keys = {key: KeyResult(key, {label: SetupResult.from_json(label, s)
                                         for label, s in (part.get("setups") or {}).items()},
                                   {label: Unfitted.from_json(u) for label, u in (part.get("unfitted") or {}).items()})
                    for key, part in (data.get("keys") or {}).items()}
        elif version == 1:
            raw = {**({LR_KEY: {"setups": data["setups"]}} if data.get("setups") else {}), **(data.get("keys") or {})}
            keys = {key: KeyResult(key, {label: SetupResult.from_first_layout(label, s)
                                         for label, s in (part.get("setups") or {}).items()})
                    for key, part in raw.items()}
        else:
            raise ValueError(f"summary.json version {version} is newer than this mutransfer reads ({SUMMARY_VERSION})")
        return cls(keys=keys, hold=data.get("hold"), status=data.get("status"),
                   noise=Noise.from_json(data["noise"]) if data.get("noise") else None,
                   provisional=Basis.from_json(data["basis"]) if data.get("provisional") else None,
                   stopped={str(k): dict(v) for k, v in (data.get("stopped") or {}).items()})

