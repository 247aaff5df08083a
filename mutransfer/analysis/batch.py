"""The batch worth using at a fixed token budget. Pure numpy/pandas.

Per setup and budget (at the base width and depth), each batch size's best loss — the fitted minimum over the
learning rate, each batch at its own η*, and each seed's own minimum for the spread — gives a curve of loss
against log2 B:

- **best**: the curve's minimum, found as an LR optimum is (``analysis.optimum``: a local parabola in log2 B, the
  seeds' vertices for the interval); at the smallest or largest batch it is a bound, not an estimate.
- **critical**: the largest batch whose loss is within ``tolerance`` (relative) of the best batch's: where the
  mean curve, linear between swept batches in log2 B, crosses (1 + tolerance) × the best loss. Its interval is
  where the curve ± the t quantile × the seeds' standard error of the difference crosses the same level: a bound
  when every batch past the best stays within the tolerance, ``unresolved`` when the seeds' noise at the best
  batch is as large as the tolerance itself.
- **growth**: with ``MIN_BUDGETS`` or more budgets spanning ``MIN_SPAN`` or more, log2 of the best and of the
  critical batch against log2 tokens by weighted least squares, B ∝ D^γ, γ's interval from Student's t with the
  scatter about the line carried (Birge's ratio). McCandlish et al. ("An Empirical Model of Large-Batch Training")
  and Zhang et al. ("How Does Critical Batch Size Scale in Pre-training?") find it grows with the budget; Li et al.
  ("Predictable Scale: Part I") fit B* ∝ D^0.571.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from .drift import PointTrials, SearchSettings, setup_optima
from .optimum import fit_halfwidth
from .thresholds import Thresholds
from .stats import quantile, t_quantile

__all__ = ["batch_analysis", "batch_curve", "critical_batch", "best_batches", "growth", "DEFAULT_BATCH_TOLERANCE",
           "CRITICAL_STATUSES", "MIN_BUDGETS", "MIN_SPAN"]

DEFAULT_BATCH_TOLERANCE = Thresholds.batch_tolerance
CRITICAL_STATUSES = ("measured", "bound", "unresolved")
MIN_BUDGETS = 3
MIN_SPAN = 16.0
"""The growth with tokens is fitted from ``MIN_BUDGETS`` budgets spanning at least this factor."""


def batch_curve(rows: pd.DataFrame, settings: SearchSettings, th: Thresholds = Thresholds()) -> pd.DataFrame:
    """One setup's curve at one budget: per batch size (``batch_size`` column of ``rows``, with ``seed, x, loss,
    status``) its η* and best loss, each seed's best loss, the loss's standard error and degrees of freedom."""
    halfwidth = fit_halfwidth(settings.step, settings.log2, th)
    parts = {int(b): PointTrials.of(part) for b, part in rows.groupby("batch_size")}
    optima, _, _ = setup_optima(parts, settings.step, halfwidth, th)
    out = []
    for opt in sorted(optima, key=lambda o: o.point):
        seeds = opt.seed_best_losses or [opt.best_loss]
        spread = float(np.std(seeds, ddof=1)) / math.sqrt(len(seeds)) if len(seeds) > 1 else math.nan
        out.append({"batch": opt.point, "log2_batch": math.log2(opt.point), "loss": opt.best_loss, "loss_se": spread,
                    "dof": len(seeds) - 1, "seed_losses": [float(v) for v in seeds],
                    "seeds": opt.vertex_seeds or [int(rows["seed"].min())], "log2_lr_star": opt.x_star,
                    "lr_censored": opt.censored})
    return pd.DataFrame(out, columns=["batch", "log2_batch", "loss", "loss_se", "dof", "seed_losses", "seeds",
                                      "log2_lr_star", "lr_censored"])


def _curve_trials(curve: pd.DataFrame) -> PointTrials:
    """A budget's curve as the trials of a bowl in log2 B: each seed's best loss at each batch."""
    x = np.concatenate([[b] * len(s) for b, s in zip(curve["log2_batch"], curve["seed_losses"])]).astype(float)
    loss = np.concatenate(list(curve["seed_losses"])).astype(float)
    ok = np.ones(len(x), dtype=bool)
    return PointTrials(x, np.concatenate(list(curve["seeds"])), loss, ok, ~ok)


def best_batches(curves: Mapping[int, pd.DataFrame],
                 th: Thresholds = Thresholds()) -> dict[int, Optional[dict[str, Any]]]:
    """Each budget's batch with the lowest loss, with its interval from the seeds: the bowls in log2 B analysed
    as LR bowls are (``analysis.drift.setup_optima``: one asymmetry pooled over the budgets, the seeds' vertices
    for the interval); at the smallest or largest batch (``censored`` low/high) the batch is that edge, a bound."""
    usable = {tokens: curve for tokens, curve in curves.items() if len(curve) >= 2}
    optima, _, _ = setup_optima({t: _curve_trials(c) for t, c in usable.items()}, 1.0, fit_halfwidth(1.0, True, th), th)
    out: dict[int, Optional[dict[str, Any]]] = {tokens: None for tokens in curves}
    for opt in optima:
        x = usable[opt.point]["log2_batch"]
        at = {"low": float(x.min()), "high": float(x.max())}.get(opt.censored or "", opt.x_star)
        out[opt.point] = {"batch": 2.0**at, "log2_batch": at, "ci": [_power(v) for v in opt.ci],
                          "ci_kind": opt.ci_kind, "censored": opt.censored,
                          "loss": float(usable[opt.point]["loss"].min())}
    return out


def _power(value: float) -> Optional[float]:
    return 2.0**value if math.isfinite(value) else None


def _crossing(x: np.ndarray, y: np.ndarray, level: float, start: int) -> Optional[float]:
    """Where ``y`` (linear between the points ``x``) first reaches ``level`` at or after index ``start``, or None."""
    if y[start] >= level:
        return float(x[start])
    for i in range(start + 1, len(x)):
        if y[i] >= level:
            return float(x[i - 1] + (level - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
    return None


def _excess(curve: pd.DataFrame, best: int, tolerance: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Each batch's loss minus (1 + tolerance) × the best batch's, its standard error and degrees of freedom:
    paired by seed when two or more seeds trained every batch (a seed's level, shared by its batches, cancels),
    else from each batch's own spread (0 degrees of freedom with one seed)."""
    y = curve["loss"].to_numpy(float)
    if "seeds" in curve.columns:
        common = set.intersection(*(set(s) for s in curve["seeds"]))
        if len(common) >= 2:
            order = sorted(common)
            losses = np.array([[dict(zip(s, v))[seed] for s, v in zip(curve["seeds"], curve["seed_losses"])]
                               for seed in order])
            excess = losses - (1.0 + tolerance) * losses[:, [best]]
            return (y - (1.0 + tolerance) * y[best], excess.std(axis=0, ddof=1) / math.sqrt(len(order)),
                    len(order) - 1)
    se, dof = curve["loss_se"].to_numpy(float), curve["dof"].to_numpy(int)
    return y - (1.0 + tolerance) * y[best], np.sqrt(se**2 + ((1.0 + tolerance) * se[best]) ** 2), int(dof.min())


def critical_batch(curve: pd.DataFrame, tolerance: float = DEFAULT_BATCH_TOLERANCE) -> Optional[dict[str, Any]]:
    """The largest batch whose loss is within ``tolerance`` of the best batch's, with its interval and status
    (``CRITICAL_STATUSES``); None with fewer than two batches."""
    if len(curve) < 2:
        return None
    x = curve["log2_batch"].to_numpy(float)
    best = int(np.argmin(curve["loss"].to_numpy(float)))
    excess, se, dof = _excess(curve, best, tolerance)
    measured = bool(dof > 0 and np.isfinite(se).all())
    reach = t_quantile(0.975, dof) * se if measured else np.zeros_like(excess)
    mean = _crossing(x, excess, 0.0, best)
    low = _crossing(x, excess + reach, 0.0, best)
    high = _crossing(x, excess - reach, 0.0, best)
    entry: dict[str, Any] = {"tolerance": tolerance, "level": float((1.0 + tolerance) * curve["loss"].iloc[best])}
    if mean is None:
        entry.update(status="bound", log2_batch=float(x[-1]), batch=float(2.0 ** x[-1]),
                     ci=[_power(low) if low is not None else float(2.0 ** x[-1]), None],
                     reason=f"every batch past the best stays within {100 * tolerance:g} % of its loss: the critical "
                            f"batch is at least {2.0 ** x[-1]:g}")
        return entry
    lo = low if low is not None else float(x[best])
    entry.update(log2_batch=mean, batch=2.0**mean, ci=[2.0**lo, _power(high) if high is not None else None])
    if not measured:
        entry.update(status="unresolved", reason="one seed: the loss's noise is not measured (search.noise_seeds)")
    elif excess[best] + reach[best] >= 0 or high is None:
        entry.update(status="unresolved", reason=f"the seeds' noise (±{reach[best]:.3g} nats at the best batch) is as "
                                                 f"large as the {100 * tolerance:g} % tolerance")
    else:
        entry.update(status="measured", reason=None)
    return entry


def growth(points: Mapping[int, Optional[Mapping[str, Any]]]) -> Optional[dict[str, Any]]:
    """B ∝ D^γ from ``{tokens: entry}`` (entries of ``best_batch`` or ``critical_batch``; bounds left out), or None
    with fewer than ``MIN_BUDGETS`` estimates spanning ``MIN_SPAN``."""
    used = {d: e for d, e in points.items() if e and not e.get("censored") and e.get("status", "measured") ==
            "measured" and e.get("ci") and all(v is not None for v in e["ci"])}
    if len(used) < MIN_BUDGETS or max(used) / min(used) < MIN_SPAN:
        return None
    x = np.log2(np.array(sorted(used), dtype=float))
    y = np.array([used[d]["log2_batch"] for d in sorted(used)])
    se = np.array([max((math.log2(used[d]["ci"][1]) - math.log2(used[d]["ci"][0])) / (2 * quantile(0.975)), 1e-3)
                   for d in sorted(used)])
    design = np.column_stack([np.ones(len(x)), x])
    w = 1.0 / se**2
    covariance = np.linalg.inv(design.T @ (w[:, None] * design))
    coefficients = covariance @ (design.T @ (w * y))
    dof = len(x) - 2
    chi2 = float(np.sum(w * (y - design @ coefficients) ** 2))
    covariance = covariance * max(1.0, chi2 / dof)
    half = t_quantile(0.975, dof) * math.sqrt(covariance[1, 1])
    gamma = float(coefficients[1])
    return {"gamma": gamma, "gamma_ci": [gamma - half, gamma + half], "intercept": float(coefficients[0]),
            "dof": dof, "chi2": chi2, "budgets": [int(d) for d in sorted(used)]}


def batch_analysis(rows: pd.DataFrame, settings: Mapping[str, SearchSettings],
                   th: Thresholds = Thresholds()) -> dict[str, dict[str, Any]]:
    """``{setup: {tolerance, best, critical, curve, budgets: {tokens: {best, critical, curve}}, growth}}`` from the
    learning-rate trials of a sweep across batch sizes at fixed token budgets (``batch_size``, ``tokens`` and the
    analysis columns ``seed, x, loss, status``; other axes at their base). ``best``, ``critical`` and ``curve`` at
    the top are the base (smallest) budget's; the critical batch's tolerance is ``th.batch_tolerance``."""
    tolerance = th.batch_tolerance
    out: dict[str, dict[str, Any]] = {}
    for setup, part in rows.groupby("setup", sort=False):
        own = settings.get(str(setup), SearchSettings())
        curves = {int(tokens): batch_curve(at, own, th) for tokens, at in part.groupby("tokens")}
        best = best_batches(curves, th)
        budgets = {str(tokens): {"best": best[tokens], "critical": critical_batch(curve, tolerance),
                                 "curve": curve.drop(columns=["seeds"]).to_dict("records")}
                   for tokens, curve in curves.items()}
        base = budgets[min(budgets, key=int)]
        out[str(setup)] = {"tolerance": tolerance, **base, "budgets": budgets,
                           "growth": {"best": growth({int(d): b["best"] for d, b in budgets.items()}),
                                      "critical": growth({int(d): b["critical"] for d, b in budgets.items()})}}
    return out
