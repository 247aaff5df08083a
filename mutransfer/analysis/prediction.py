"""log2 η* at a target width, with the range the sweep's data allow. Pure arithmetic on a setup's summary.

The fitted line (``analysis.drift``: the optima weighted by 1/(se² + σ_b²), σ_b the between-point scatter) at
the target N holds the true optimum there within q · √(se_c² + (log2 N − c)² · se_slope² + σ_b²): the line's
centre c, its slope carried over the doublings to N, and the target's own scatter about the line. q is the
97.5 % quantile of Student's t with the fit's degrees of freedom (normal for resolution bounds).

With drift correction the value is that line at N. Without it (η* carried unchanged, what ``transfers`` means)
the value is the line at its centre — the inverse-variance mean of the measured optima — and the range is the
corrected one stretched to reach that value: a slope inside the margin but not zero moves the truth at N by
ŝ · (log2 N − c), and a range centred on the plain value would leave that out (docs/transfer.md). ``half_width``
is the farthest the range reaches from the value.

A sweep over several axes (width with depth or steps) predicts from its fitted law instead (``analysis.law``):
the same rule per axis, the range from the law's covariance at the target. What would narrow a range wider than
the tolerance comes from ``analysis.narrowing``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ..words import Verdict
from .law import evaluate_law
from .narrowing import MAX_EXTRA_SEEDS, law_advice, narrowing_advice
from .stats import quantile
from .result import AxisFit, Law, SetupResult

__all__ = ["Prediction", "predict", "predict_setup", "carried_law", "transferred_lr", "law_prediction", "line_range",
           "narrowing_advice",
           "MAX_EXTRA_SEEDS"]

PAIRED_AXES = (("depth", "steps"), ("batch", "tokens"))
"""Axes a prediction writes in pairs (the other one null when only one is in the law), as transfer files hold them."""


@dataclass(frozen=True)
class Prediction:
    width: int
    log2_lr: float
    interval: Optional[tuple[float, float]]
    half_width: Optional[float]
    """The farthest the range reaches from ``log2_lr``."""
    within_tolerance: bool
    tolerance: float
    doublings: float
    """log2(target width) − the swept widths' weighted centre: how far the slope is extrapolated."""
    narrow: str
    """What would narrow the range, computed from the measured noise."""
    at: tuple[tuple[str, float], ...] = ()
    """The target on each axis besides width of the law the prediction comes from (a sweep over them), by name."""
    applied: tuple[str, ...] = ()
    """The axes whose fitted slope moved η* (a law's prediction)."""
    lack_of_fit: str = ""
    """The fit's lack-of-fit line (F, p and the between-point scatter carried)."""

    def as_dict(self) -> dict[str, Any]:
        out = {"width": self.width, "log2_lr": self.log2_lr, "interval": list(self.interval) if self.interval else None,
               "half_width": self.half_width, "within_tolerance": self.within_tolerance, "tolerance": self.tolerance,
               "extrapolated_doublings": self.doublings, "narrow": self.narrow, "lack_of_fit": self.lack_of_fit}
        at = dict(self.at)
        for pair in PAIRED_AXES:  # these two pairs are written together, as files have held them
            if any(name in at for name in pair):
                out.update({name: at.get(name) for name in pair}, applied_slopes=list(self.applied))
        for name, value in at.items():
            if not any(name in pair for pair in PAIRED_AXES):
                out.update({name: value}, applied_slopes=list(self.applied))
        return out


def transferred_lr(info: AxisFit, width: int, correct_drift: bool) -> float:
    """log2 η* at ``width``: the fitted line at its centre (the inverse-variance mean of the measured optima; of
    the edge bounds when no optimum was measured, and ``transfer`` then warns that the setup is inconclusive), or
    the line at ``width`` with drift correction."""
    if info.slope is not None:
        assert info.intercept is not None and info.centre is not None
        at = math.log2(width) if correct_drift else float(info.centre)
        return float(info.intercept + info.slope * at)
    widths = info.measured() or info.estimated()
    weights = {w: 1.0 / max(o.se or 0.0, 1e-6) ** 2 for w, o in widths.items()}
    return sum(float(widths[w].x_star or 0.0) * weights[w] for w in widths) / sum(weights.values())


def line_range(info: AxisFit, width: int) -> tuple[float, float]:
    """(the fitted line at ``width``, the 95 % half-width that holds the true optimum there)."""
    assert info.centre is not None and info.se_centre is not None and info.se_slope is not None
    assert info.intercept is not None and info.slope is not None
    doublings = math.log2(width) - float(info.centre)
    between = float(info.between_sd or 0.0)
    half = quantile(0.975, info.dof) * math.sqrt(info.se_centre**2 + doublings**2 * info.se_slope**2 + between**2)
    return float(info.intercept + info.slope * math.log2(width)), half


def predict(info: AxisFit, width: int, correct_drift: bool, tolerance: float) -> Prediction:
    """The prediction at ``width`` from one setup's width line."""
    log2_lr = transferred_lr(info, width, correct_drift)
    if info.slope is None or info.se_slope is None or info.se_centre is None or info.centre is None:
        return Prediction(width, log2_lr, None, None, False, tolerance, math.nan,
                          narrowing_advice(info, width, tolerance))
    line, half = line_range(info, width)
    lo, hi = min(line - half, log2_lr), max(line + half, log2_lr)
    reach = max(log2_lr - lo, hi - log2_lr)
    doublings = math.log2(width) - float(info.centre)
    narrow = "" if reach <= tolerance else narrowing_advice(info, width, tolerance)
    return Prediction(width, log2_lr, (lo, hi), reach, reach <= tolerance, tolerance, doublings, narrow,
                      lack_of_fit=info.lack_of_fit_line or "")


def law_prediction(info: SetupResult, target: Mapping[str, int], correct_drift: bool,
                   tolerance: float) -> Prediction:
    """The prediction at ``target`` ({axis: value}) from a setup's fitted law (a sweep over several axes): the
    width slope is applied with ``correct_drift``, the depth and steps slopes whenever their axis does not
    transfer (or with ``correct_drift``); the range is the law's at the target, stretched to the value."""
    law = info.law
    assert law is not None
    verdicts = {name: info.axes[name].verdict if name in info.axes else None for name in law.axes}
    applied = tuple(name for name in law.axes
                    if correct_drift or (name != "width" and verdicts.get(name) != Verdict.TRANSFERS))
    log2_lr, (lo, hi) = evaluate_law(law, target, applied)
    reach = max(log2_lr - lo, hi - log2_lr)
    width = int(target["width"])
    doublings = math.log2(width) - law.centre["width"] if "width" in law.centre else math.nan
    narrow = "" if reach <= tolerance else law_advice(law, tolerance)
    return Prediction(width, log2_lr, (lo, hi), reach, reach <= tolerance, tolerance, doublings,
                      narrow, at=tuple((name, target[name]) for name in law.axes if name != "width" and
                                       target.get(name) is not None), applied=applied,
                      lack_of_fit=law.lack_of_fit_line or "")


def carried_law(setup: SetupResult) -> Optional[Law]:
    """The law a prediction carries: the setup's when it was fitted across width and another axis; None when the
    width line alone carries it."""
    law = setup.law
    return law if law is not None and "width" in law.axes and len(law.axes) > 1 else None


def predict_setup(setup: SetupResult, target: Mapping[str, int], correct_drift: bool,
                  tolerance: float) -> Prediction:
    """The prediction at ``target`` ({axis: value}, width among them) for one setup: from its law when it carries
    one (``carried_law``), from its width line otherwise."""
    if carried_law(setup) is not None:
        return law_prediction(setup, target, correct_drift, tolerance)
    return predict(setup.line, int(target["width"]), correct_drift, tolerance)
