"""The backtest: how far to trust the law (or line) when it extrapolates, answered by the user's own data. For
each axis with three or more values, the fit is made again without that axis's largest value (the per-point optima
reused: only the law or line is refitted) and asked to predict the held-out points. For each one it reports the
miss (predicted − measured, octaves; a censored point only as the bound its grid's edge gives), whether the
predictive interval held it (the refit's 95 % range at that point with the point's own error added to its
variance: the refit's uncertainty there, the between-point scatter σ_b and the point's seeds' error), and the loss given up at the predicted LR, read off the point's
own fitted bowl where the predicted LR lies inside the LRs it tried. Leave-largest-out is the question papers on
scaling-law fits ask of a law (Kalra & Barkeshli, the fit error and its robustness to extrapolation)."""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from .drift import PointTrials, SearchSettings, drift, setup_optima
from .held_out import Backtest, HeldOut
from .law import LawData, evaluate_law, law_of
from .local_fit import fit_halfwidth
from .optimum import Optimum
from .point_result import PointResult, PointValue, point_value
from .prediction import line_range
from .stats import quantile
from .thresholds import Thresholds

__all__ = ["MIN_VALUES", "law_backtest", "line_backtest", "held_out_line", "held_out_point"]

MIN_VALUES = 3
"""An axis needs this many values with an optimum for one to be held out (two remain to fit)."""


def held_out_point(axis: str, at: dict[str, PointValue], result: PointResult, predicted: float, half: float,
                   q: float, tried: tuple[float, float]) -> HeldOut:
    """One held-out point's report from the refit's prediction, its 95 % half-range there and the quantile ``q``
    that range was drawn with: the predictive interval is q · √(the range's variance + the point's own se² and
    its asymmetry's error²), so the point's error enters at the refit's degrees of freedom."""
    assert result.x_star is not None and result.ci is not None
    x_star, (low, high) = result.x_star, result.ci
    if result.censored:
        interval = (predicted - half, predicted + half)
        held = interval[0] <= high if result.censored == "low" else interval[1] >= low
        return HeldOut(axis, at, predicted, interval, measured=x_star, bound=result.censored, held=held)
    total = q * math.sqrt((half / q) ** 2 + float(result.se or 0.0) ** 2 + result.shape_se**2)
    regret = None
    if result.curvature is not None and tried[0] - 1e-9 <= predicted <= tried[1] + 1e-9:
        d = predicted - x_star
        regret = float(result.curvature * d * d * (result.asymmetry if d > 0 else 1.0))
    return HeldOut(axis, at, predicted, (predicted - total, predicted + total), measured=x_star,
                   miss=predicted - x_star, held=abs(predicted - x_star) <= total, regret=regret)


def _largest(values: Sequence[float]) -> Optional[float]:
    distinct = sorted(set(values))
    return distinct[-1] if len(distinct) >= MIN_VALUES else None


def law_backtest(data: LawData, axes: Sequence[str], censored_likelihood: bool = False) -> Backtest:
    """One refit of the law per axis of ``axes`` with three or more values among the points with an estimate,
    without the points at that axis's largest value (``censored_likelihood``: as ``law.law_of`` fits it)."""
    result = Backtest(fit="law")
    estimated = [i for i, point in enumerate(data.points) if point.result.x_star is not None]
    for name in axes:
        column = data.axes.index(name)
        largest = _largest([float(data.logs[i, column]) for i in estimated])
        if largest is None:
            result.skipped[name] = f"fewer than {MIN_VALUES} values with an optimum"
            continue
        held = [i for i in estimated if data.logs[i, column] == largest]
        refit = law_of(data, [i for i in estimated if data.logs[i, column] != largest], censored_likelihood)
        if refit is None or name not in refit.axes:
            result.skipped[name] = "the points left cannot fit the law"
            continue
        for i in held:
            at = data.at[i]
            predicted, (low, high) = evaluate_law(refit, {n: float(at[n]) for n in refit.axes}, list(refit.axes))
            result.points.append(held_out_point(name, dict(at), data.points[i].result, predicted, (high - low) / 2,
                                                quantile(0.975, refit.dof), data.tried[i]))
    return result


def line_backtest(rows: pd.DataFrame, settings: SearchSettings, th: Thresholds, axis: str,
                  no_seeds: bool = False) -> tuple[list[HeldOut], str]:
    """The refit of one axis's line (tidy rows: ``point, seed, x, loss, status``) without its largest value: the
    held-out point's report, or why there is none."""
    return held_out_line({point_value(point): PointTrials.of(part) for point, part in rows.groupby("point")},
                         settings, th, axis, no_seeds)


def held_out_line(points: Mapping[PointValue, PointTrials], settings: SearchSettings, th: Thresholds, axis: str,
                  no_seeds: bool = False) -> tuple[list[HeldOut], str]:
    """``line_backtest`` on each point's trials as arrays (a simulated sweep's)."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    optima, _, _ = setup_optima(dict(points), settings.step, halfwidth, th, own_shape=no_seeds)
    largest = _largest([float(o.point) for o in optima])
    if largest is None:
        return [], f"fewer than {MIN_VALUES} values with an optimum"
    kept: list[Optimum] = [o for o in optima if o.point != largest]
    refit = drift(kept, th, (), axis)
    if refit.slope is None:
        return [], "the points left cannot fit a line"
    held = next(o for o in optima if o.point == largest)
    predicted, half = line_range(refit, largest)  # type: ignore[arg-type]
    x = points[point_value(largest)].x
    return [held_out_point(axis, {axis: point_value(largest)}, held.result(), predicted, half,
                           quantile(0.975, refit.dof), (float(np.min(x)), float(np.max(x))))], ""
