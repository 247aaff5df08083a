"""Each interval a table prints, at the table's one level: 95 % (``defaults.INTERVAL_LEVEL``) or 90 %, the level
the verdict reads the slope's interval at (two one-sided tests at 5 %: ``drift.verdict``). The analysis stores
the 95 % intervals and the slope's 90 % one; the others at 90 % come from the same rule with the 0.95 quantiles.

An optimum's confidence interval is x* ± the seeds' t interval and the asymmetry's normal one
(``optimum.confidence_interval``); an end that is a bound keeps its place at any level: open at a grid edge, at
a censored seed's side, or capped by the lowest diverged point. A resolution bound (one seed) is no confidence
interval and has no level: it is printed as found. An effect against its anchor (a decay against decay off, a
tuned constant against factor 1) is Welch's interval from the seeds' fitted minima."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..defaults import INTERVAL_LEVEL, INTERVAL_LEVELS
from .optimum import CONFIDENCE, confidence_interval
from .result import AxisFit, PointResult
from .stats import welch_difference

__all__ = ["STORED_LEVEL", "VERDICT_LEVEL", "upper_p", "slope_interval", "point_interval", "decay_interval",
           "constant_interval"]

STORED_LEVEL = 95
"""Percent: the level of the intervals the analysis stores (an optimum's ``ci``, ``slope_ci``, the effects')."""
VERDICT_LEVEL = 90
"""Percent: the level of the slope's interval the verdict reads (stored too: ``slope_ci90``)."""
Interval = Optional[tuple[float, float]]


def upper_p(level: int) -> float:
    """The upper quantile a two-sided ``level`` % interval reaches (95 → 0.975)."""
    if level not in INTERVAL_LEVELS:
        raise ValueError(f"level {level} is not one of {INTERVAL_LEVELS}")
    return 0.5 + level / 200


def slope_interval(fit: AxisFit, level: int = INTERVAL_LEVEL) -> Interval:
    """The fit's slope interval at ``level``, one of the two the analysis stores (None without a slope)."""
    return {STORED_LEVEL: fit.slope_ci, VERDICT_LEVEL: fit.slope_ci90}[level]


def point_interval(point: PointResult, level: int = INTERVAL_LEVEL) -> Interval:
    """An optimum's interval at ``level``: the stored one at 95 % and for a resolution bound; a confidence interval's
    ends from the seeds' error at the level, each bound kept (module docstring)."""
    ci = point.ci
    if level == STORED_LEVEL or ci is None or point.ci_kind != CONFIDENCE or point.x_star is None \
            or point.se is None or point.dof is None:
        return ci
    lo, hi = confidence_interval(point.x_star, point.se, point.dof, point.shape_se, upper_p(level))
    low_bound = "low" in point.seed_censored or not math.isfinite(ci[0])
    high_bound = "high" in point.seed_censored or not math.isfinite(ci[1])
    return (ci[0] if low_bound else min(lo, point.x_star),
            ci[1] if high_bound else max(min(hi, ci[1]), point.x_star))


def decay_interval(point: PointResult, level: int = INTERVAL_LEVEL) -> Interval:
    """A point's best decay's loss minus decay off's: its interval at ``level`` (None where unmeasured)."""
    decay = point.decay
    if decay is None or level == STORED_LEVEL or decay.effect is None or decay.effect_ci is None:
        return None if decay is None else decay.effect_ci
    gain = welch_difference(np.asarray(point.seed_best_losses, dtype=float),
                            np.asarray(decay.off_seed_losses, dtype=float), -decay.effect, upper_p(level))
    return None if gain is None else (-float(gain[1]), -float(gain[0]))


def constant_interval(point: PointResult, level: int = INTERVAL_LEVEL) -> Interval:
    """A tuned constant's gain over factor 1 at a point: its interval at ``level`` (None where unmeasured)."""
    constant = point.constant
    if constant is None or level == STORED_LEVEL or constant.gain is None or constant.gain_ci is None:
        return None if constant is None else constant.gain_ci
    gain = welch_difference(np.asarray(point.seed_best_losses, dtype=float),
                            np.asarray(constant.at_one_seeds, dtype=float), constant.gain, upper_p(level))
    return None if gain is None else (float(gain[0]), float(gain[1]))
