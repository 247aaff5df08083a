"""The drift of the optimum across widths, and the verdict as an equivalence test. Pure numpy/pandas.

Drift: weighted least squares of x* against log2(width) over the widths whose optimum was measured (not
censored at a grid edge), weights 1/se². With seed noise measured, the per-width errors come from the seeds'
vertex spread pooled over the setup's widths (degrees of freedom Σ(k_w − 1)), and the slope's intervals
use Student's t with those degrees of freedom; with one seed they are resolution bounds (normal quantiles).

Verdict: ``transfers`` when the slope's 90 % interval lies inside ±``transfer_slope`` octaves per doubling and
no width is censored or missing (two one-sided tests at 5 %); ``drifts`` when the 95 % interval excludes 0
and |slope| > ``transfer_slope``; otherwise ``inconclusive``, with the reason and what would decide it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..schema import axis_named
from .optimum import CONFIDENCE, MIN_SE, RESOLUTION, Thresholds, WidthOptimum, fit_halfwidth, optimum_of_arrays
from .stats import quantile

__all__ = ["Drift", "drift", "verdict", "pool", "analyze", "analyze_setup", "SearchSettings", "VERDICTS"]

VERDICTS = ("transfers", "drifts", "inconclusive")


@dataclass(frozen=True)
class SearchSettings:
    """How one setup's key was searched: grid step, log2 scale, and the spec's range (to tell added points)."""

    step: float = 1.0
    log2: bool = True
    low: float = -math.inf
    high: float = math.inf


@dataclass
class Drift:
    slope: Optional[float]
    ci: Optional[tuple[float, float]]
    ci90: Optional[tuple[float, float]]
    intercept: Optional[float]
    centre: Optional[float]
    se_slope: Optional[float]
    se_centre: Optional[float]
    dof: Optional[int]
    ci_kind: str
    verdict: str
    reason: str = ""
    fix: str = ""
    widths_used: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"slope": self.slope, "slope_ci": list(self.ci) if self.ci else None,
                "slope_ci90": list(self.ci90) if self.ci90 else None, "intercept": self.intercept,
                "centre_log2_width": self.centre, "se_slope": self.se_slope, "se_centre": self.se_centre,
                "dof": self.dof, "ci_kind": self.ci_kind, "verdict": self.verdict, "reason": self.reason,
                "fix": self.fix, "widths_used": self.widths_used}


def pool(optima: Sequence[WidthOptimum]) -> list[WidthOptimum]:
    """Confidence intervals with the seeds' vertex spread pooled over widths (more degrees of freedom than
    any one width has); resolution bounds are left as they are."""
    spread = {id(o) for o in optima if o.ci_kind == CONFIDENCE and o.measured and o.dof}
    dof = sum(o.dof or 0 for o in optima if id(o) in spread)
    if len(spread) < 2:
        return list(optima)
    variance = sum((o.dof or 0) * o.se**2 * ((o.dof or 0) + 1) for o in optima if id(o) in spread) / dof
    return [o.with_se(max(math.sqrt(variance / ((o.dof or 0) + 1)), MIN_SE), dof) if id(o) in spread else o
            for o in optima]


def verdict(slope: float, ci90: tuple[float, float], ci95: tuple[float, float],
            th: Thresholds = Thresholds()) -> str:
    """The equivalence test on a measured slope (no censored or missing width)."""
    if -th.transfer_slope <= ci90[0] and ci90[1] <= th.transfer_slope:
        return "transfers"
    if abs(slope) > th.transfer_slope and (ci95[0] > 0 or ci95[1] < 0):
        return "drifts"
    return "inconclusive"


def _undecided(ci90: tuple[float, float], th: Thresholds, kind: str, plural: str) -> tuple[str, str]:
    reason = (f"the slope's 90 % interval [{ci90[0]:+.2f}, {ci90[1]:+.2f}] is neither inside ±{th.transfer_slope:g} "
              "nor clear of 0 beyond it")
    more = "more noise probes (search.noise_seeds) or seeds" if kind == CONFIDENCE else \
        "seed noise measured (search.noise_seeds ≥ 1)"
    return reason, f"{more}, or {plural} further apart, narrow it"


def drift(optima: Sequence[WidthOptimum], th: Thresholds = Thresholds(), missing: Sequence[int] = (),
          axis: str = "width") -> Drift:
    """The weighted slope of x* over log2(width) and the verdict; censored or ``missing`` widths (all their
    trials diverged or failed) make the verdict ``inconclusive``. ``axis`` names the axis in the reasons (the
    same rules fit the optimum against log2 depth or log2 steps)."""
    plural = axis_named(axis).plural
    used = [o for o in optima if o.measured]
    kind = CONFIDENCE if used and all(o.ci_kind == CONFIDENCE for o in used) else RESOLUTION
    dof = min((o.dof for o in used if o.dof), default=None) if kind == CONFIDENCE else None
    result = Drift(None, None, None, None, None, None, None, dof, kind, "inconclusive",
                   widths_used=[o.width for o in used])
    if len(used) >= 2:
        _fit_line(result, used)
    blockers = _blockers(optima, missing, plural)
    if blockers:
        result.reason, result.fix = blockers
    elif result.slope is None:
        result.reason, result.fix = f"fewer than two {plural} with a measured optimum", f"sweep more {plural}"
    else:
        assert result.ci90 is not None and result.ci is not None
        result.verdict = verdict(result.slope, result.ci90, result.ci, th)
        if result.verdict == "inconclusive":
            result.reason, result.fix = _undecided(result.ci90, th, kind, plural)
    return result


def _fit_line(result: Drift, used: Sequence[WidthOptimum]) -> None:
    x = np.log2([o.width for o in used])
    y = np.array([o.x_star for o in used])
    w = 1.0 / np.array([max(o.se, 1e-6) for o in used]) ** 2
    centre = float(np.sum(w * x) / np.sum(w))
    mean = float(np.sum(w * y) / np.sum(w))
    sxx = float(np.sum(w * (x - centre) ** 2))
    slope = float(np.sum(w * (x - centre) * (y - mean)) / sxx)
    se = math.sqrt(1.0 / sxx)
    q95, q90 = quantile(0.975, result.dof), quantile(0.95, result.dof)
    result.slope, result.se_slope, result.se_centre = slope, se, math.sqrt(1.0 / float(np.sum(w)))
    result.centre, result.intercept = centre, mean - slope * centre
    result.ci, result.ci90 = (slope - q95 * se, slope + q95 * se), (slope - q90 * se, slope + q90 * se)


def _blockers(optima: Sequence[WidthOptimum], missing: Sequence[int], plural: str) -> Optional[tuple[str, str]]:
    """Why no verdict can be reached whatever the slope: censored optima or widths without any result."""
    if missing:
        names = ", ".join(map(str, missing))
        return (f"every trial diverged or failed at {plural} {names}",
                f"lower the grid (log2_min) or fix the failures at {plural} {names}, then resweep")
    for edge, word, sign in (("low", "below", -1), ("high", "above", 1)):
        hit = [o for o in optima if o.censored == edge]
        if hit:
            names = ", ".join(str(o.width) for o in hit)
            bound = min(o.x_star for o in hit) if sign < 0 else max(o.x_star for o in hit)
            return (f"the optimum is at the grid's {edge} edge (2^{bound:g}) at {plural} {names}",
                    f"extend the grid {word} 2^{bound:g} at {plural} {names} (search.extend, search.extend_max, "
                    f"or log2_{'min' if sign < 0 else 'max'})")
    return None


def analyze_setup(rows: pd.DataFrame, settings: SearchSettings, th: Thresholds = Thresholds(),
                  axis: str = "width") -> dict[str, Any]:
    """One setup's summary entry: optimum per width (pooled intervals), drift, verdict, added points. With
    ``axis='depth'`` (or ``'steps'``) the ``width`` column holds depths (horizons) and the entry's keys say so."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    optima, missing, entries = [], [], {}
    for width, part in rows.groupby("width"):
        status = part["status"].to_numpy()
        opt = optimum_of_arrays(int(width), part["x"].to_numpy(float), part["seed"].to_numpy(),
                                part["loss"].to_numpy(float), status == "ok", status == "diverged", settings.step,
                                halfwidth, th)
        if opt is None:
            missing.append(int(width))
            flag = "all_diverged" if (status == "diverged").all() else "all_failed"
            entries[str(int(width))] = {"log2_lr_star": None, "ci": None, "flags": [flag], "censored": None}
        else:
            optima.append(opt)
        added = sorted(float(x) for x in part["x"].unique() if x < settings.low - 1e-9 or x > settings.high + 1e-9)
        entries.setdefault(str(int(width)), {})["added"] = added
    optima = pool(optima)
    for opt in optima:
        entries[str(opt.width)] = {**opt.as_dict(), "added": entries[str(opt.width)]["added"]}
    fit = drift(optima, th, missing, axis)
    entry = {**fit.as_dict(), "widths": dict(sorted(entries.items(), key=lambda kv: int(kv[0])))}
    named = axis_named(axis)
    return {key.replace("widths", named.plural).replace("width", named.name): value for key, value in entry.items()}


def analyze(table: pd.DataFrame, settings: SearchSettings | Mapping[str, SearchSettings] = SearchSettings(),
            th: Thresholds = Thresholds(), axis: str = "width") -> dict[str, Any]:
    """``{setup: {slope, slope_ci, verdict, reason, widths: {width: {...}}}}`` for one searched key; each
    setup with its own search settings when ``settings`` maps setup labels to them."""
    out: dict[str, Any] = {}
    for setup, rows in table.groupby("setup", sort=False):
        own = settings.get(str(setup), SearchSettings()) if isinstance(settings, Mapping) else settings
        out[str(setup)] = analyze_setup(rows, own, th, axis)
    return out
