"""log2 η* at a target width, with the range the sweep's data allow. Pure arithmetic on a setup's summary.

η* is the inverse-variance mean of the measured per-width optima — the fitted line's value at the swept
widths' weighted centre c — or, with drift correction, the line at the target. Either way the range carries
the uncertainty of that centre and of the slope extrapolated from c to the target:
half-width = q · √(se_c² + (log2 N − c)² · se_slope²), q the 97.5 % quantile of Student's t with the sweep's
degrees of freedom (normal for resolution bounds). It is what the data allow, not what a theory promises.

A sweep over several axes (width with depth or steps) predicts from its fitted law instead
(``analysis/law.py``): the same centre-or-line rule per axis, the range from the law's covariance at the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .law import evaluate_law
from .stats import quantile
from .summary import estimated_widths, measured_widths

__all__ = ["Prediction", "predict", "transferred_lr", "law_prediction"]


@dataclass(frozen=True)
class Prediction:
    width: int
    log2_lr: float
    interval: Optional[tuple[float, float]]
    half_width: Optional[float]
    within_tolerance: bool
    tolerance: float
    doublings: float
    """log2(target width) − the swept widths' weighted centre: how far the slope is extrapolated."""
    narrow: str
    """What would narrow the range."""
    depth: Optional[int] = None
    """The target depth and horizon, for the axes of the law the prediction comes from (a sweep over them)."""
    steps: Optional[int] = None
    applied: tuple[str, ...] = ()
    """The axes whose fitted slope moved η* (a law's prediction)."""

    def as_dict(self) -> dict[str, Any]:
        out = {"width": self.width, "log2_lr": self.log2_lr, "interval": list(self.interval) if self.interval else None,
               "half_width": self.half_width, "within_tolerance": self.within_tolerance, "tolerance": self.tolerance,
               "extrapolated_doublings": self.doublings, "narrow": self.narrow}
        if self.depth is not None or self.steps is not None:
            out.update(depth=self.depth, steps=self.steps, applied_slopes=list(self.applied))
        return out


def transferred_lr(info: Mapping[str, Any], width: int, correct_drift: bool) -> float:
    """log2 η* at ``width``: the inverse-variance mean of the measured optima (of the edge bounds when no
    optimum was measured; ``transfer`` then warns that the setup is inconclusive), or the fitted line with drift."""
    if correct_drift and info.get("slope") is not None:
        return float(info["intercept"] + info["slope"] * math.log2(width))
    widths = measured_widths(info) or estimated_widths(info)
    weights = {w: 1.0 / max(o["se"], 1e-6) ** 2 for w, o in widths.items()}
    return sum(widths[w]["log2_lr_star"] * weights[w] for w in widths) / sum(weights.values())


def _narrow(se_centre: float, spread: float, doublings: float, width: int, kind: str) -> str:
    if kind != "confidence":
        return "measure seed noise (search.noise_seeds ≥ 1): with one seed the range is a resolution bound"
    if spread > se_centre:
        return (f"most of it is the slope's uncertainty carried over {doublings:.1f} width doublings: sweep widths "
                f"nearer {width} (e.g. up to {max(1, width // 8)}) or more widths; more noise seeds help less")
    return "most of it is the seeds' noise at the swept widths: more noise seeds (search.noise_seeds)"


def predict(info: Mapping[str, Any], width: int, correct_drift: bool, tolerance: float) -> Prediction:
    """The prediction at ``width`` for one setup's summary entry."""
    log2_lr = transferred_lr(info, width, correct_drift)
    slope, se_slope, se_centre = info.get("slope"), info.get("se_slope"), info.get("se_centre")
    if slope is None or se_slope is None or se_centre is None:
        return Prediction(width, log2_lr, None, None, False, tolerance, math.nan,
                          "sweep at least two widths whose optimum is inside the grid: without a slope the range at "
                          "another width is unknown")
    doublings = math.log2(width) - float(info["centre_log2_width"])
    q = quantile(0.975, info.get("dof"))
    spread = abs(doublings) * se_slope
    half = q * math.sqrt(se_centre**2 + spread**2)
    return Prediction(width, log2_lr, (log2_lr - half, log2_lr + half), half, half <= tolerance, tolerance, doublings,
                      _narrow(se_centre, spread, doublings, width, info.get("ci_kind", "resolution")))


def law_prediction(info: Mapping[str, Any], target: Mapping[str, int], correct_drift: bool,
                   tolerance: float) -> Prediction:
    """The prediction at ``target`` ({axis: value}) from a setup's fitted law (a sweep over several axes): the
    width slope is applied with ``correct_drift``, the depth and steps slopes whenever their axis does not
    transfer (or with ``correct_drift``); the range is the law's uncertainty at the target."""
    law = info["law"]
    verdicts = {name: (info.get("axes") or {}).get(name, {}).get("verdict") for name in law["axes"]}
    applied = tuple(name for name in law["axes"]
                    if correct_drift or (name != "width" and verdicts.get(name) != "transfers"))
    log2_lr, half = evaluate_law(law, target, applied)
    width = int(target["width"])
    doublings = math.log2(width) - law["centre"]["width"] if "width" in law["centre"] else math.nan
    kind = law.get("ci_kind", "resolution")
    narrow = ("measure seed noise (search.noise_seeds ≥ 1): with one seed the range is a resolution bound"
              if kind != "confidence" else "sweep points nearer the target on the axes it extrapolates, or more "
              "noise seeds")
    return Prediction(width, log2_lr, (log2_lr - half, log2_lr + half), half, half <= tolerance, tolerance, doublings,
                      narrow, depth=target.get("depth") if "depth" in law["axes"] else None,
                      steps=target.get("steps") if "steps" in law["axes"] else None, applied=applied)
