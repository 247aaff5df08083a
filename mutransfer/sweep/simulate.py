"""Sweeps simulated from a known truth, for checking the analysis by coverage rather than by its formulas.

A simulated width has a true optimum x_w = x0 + slope · log2(w / w0); each seed shifts it by N(0, shift²)
(its init and batches), and each trained point adds N(0, noise²) to a bowl of curvature a (a·asymmetry on
the high side, divergence past ``diverge_after`` octaves above the seed's optimum). The sweep itself runs
the real policies — the grid, its extension past an edge, the noise probes — and the real analysis (the
optimum per width, pooling, the drift fit and the verdict). Pure numpy: no training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..analysis.compare import difference_interval
from ..analysis.drift import Drift, SearchSettings, drift, pool
from ..analysis.law import evaluate_law, fit_law
from ..analysis.optimum import Thresholds, WidthOptimum, fit_halfwidth, optimum_of_arrays
from ..analysis.prediction import predict
from ..analysis.fidelity import Fidelity, measure_fidelity
from .policy import GridPolicy, extension_point, probe_points
from .spec import SearchSpec

__all__ = ["Truth", "Design", "Outcome", "simulate", "coverage", "summary_entry", "simulate_verify", "verify_coverage",
           "compare_rates", "law_coverage"]


@dataclass(frozen=True)
class Truth:
    slope: float = 0.0
    x0: float = -5.0
    curvature: float = 0.2
    asymmetry: float = 1.0
    noise: float = 0.02
    seed_shift: float = 0.1
    diverge_after: Optional[float] = None
    loss_offset: float = 0.0
    """Each seed adds N(0, loss_offset²) to every loss it trains (a better or worse init and batches)."""

    def optimum(self, width: int, base: int) -> float:
        return self.x0 + self.slope * math.log2(width / base)


@dataclass(frozen=True)
class Design:
    widths: tuple[int, ...] = (32, 64, 128)
    low: float = -8.0
    high: float = -2.0
    step: float = 1.0
    seeds: int = 1
    noise_seeds: int = 2
    extend: bool = True
    extend_max: float = 4.0


@dataclass
class Outcome:
    optima: list[WidthOptimum]
    fit: Drift
    truth: dict[int, float] = field(default_factory=dict)


class _Width:
    """One simulated width: each seed's true optimum, and the trained points."""

    def __init__(self, truth: Truth, x_true: float, rng: np.random.Generator) -> None:
        self.truth, self.x_true, self.rng = truth, x_true, rng
        self.shifts: dict[int, float] = {}
        self.offsets: dict[int, float] = {}
        self.points: list[tuple[float, int, float, str]] = []

    def train(self, x: float, seed: int) -> None:
        if seed not in self.shifts:
            self.shifts[seed] = self.rng.normal(0.0, self.truth.seed_shift)
            self.offsets[seed] = self.rng.normal(0.0, self.truth.loss_offset) if self.truth.loss_offset else 0.0
        d = x - (self.x_true + self.shifts[seed])
        t = self.truth
        if t.diverge_after is not None and d > t.diverge_after:
            self.points.append((x, seed, math.nan, "diverged"))
            return
        a = t.curvature * (t.asymmetry if d > 0 else 1.0)
        self.points.append((x, seed, 2.0 + self.offsets[seed] + a * d * d + self.rng.normal(0.0, t.noise), "ok"))

    def finished(self) -> list[tuple[float, int, float]]:
        return [(x, s, loss if status == "ok" else math.inf) for x, s, loss, status in self.points]


def _sweep_width(width: _Width, design: Design, halfwidth: float) -> None:
    grid = [round(design.low + i * design.step, 10)
            for i in range(int(math.floor((design.high - design.low) / design.step + 1e-9)) + 1)]
    extra = design.extend_max if design.extend else 0.0
    for seed in range(design.seeds):
        for x in grid:
            width.train(x, seed)
        while design.extend:
            own = {x: loss for x, s, loss in width.finished() if s == seed}
            new = extension_point(own, design.step, design.low - extra, design.high + extra)
            if not new:
                break
            width.train(new[0], seed)
    probes = tuple(range(design.seeds, design.seeds + design.noise_seeds))
    while True:
        done = {(round(x, 9), s) for x, s, _ in width.finished()}
        new = [p for p in probe_points(width.finished(), halfwidth, probes) if (round(p[0], 9), p[1]) not in done]
        if not new:
            return
        for x, seed in new:
            width.train(x, seed)


def simulate(truth: Truth, design: Design, rng: np.random.Generator, th: Thresholds = Thresholds()) -> Outcome:
    """One simulated sweep of one setup, analysed as ``mutransfer`` analyses a real one."""
    halfwidth = fit_halfwidth(design.step, True, th)
    optima, missing, truths = [], [], {}
    for w in design.widths:
        width = _Width(truth, truth.optimum(w, design.widths[0]), rng)
        _sweep_width(width, design, halfwidth)
        x, seed, loss, status = (np.array(col) for col in zip(*width.points))
        opt = optimum_of_arrays(w, x.astype(float), seed.astype(int), loss.astype(float), status == "ok",
                                status == "diverged", design.step, halfwidth, th)
        truths[w] = width.x_true
        if opt is None:
            missing.append(w)
        else:
            optima.append(opt)
    optima = pool(optima)
    return Outcome(optima, drift(optima, th, missing), truths)


def summary_entry(out: Outcome) -> dict[str, Any]:
    """The setup's summary.json entry for a simulated sweep (what ``transfer`` reads)."""
    return {**out.fit.as_dict(), "widths": {str(o.width): o.as_dict() for o in out.optima}}


def coverage(truth: Truth, design: Design, sims: int, seed: int = 0, target: int = 4096) -> dict[str, float]:
    """Over ``sims`` simulated sweeps: how often the per-width and slope 95 % intervals and the predicted
    range at ``target`` (drift-corrected when the truth drifts) hold the truth, and how often each verdict
    comes out."""
    rng = np.random.default_rng(seed)
    width_hits = width_total = slope_hits = slope_total = predicted = predicted_total = 0
    verdicts = {"transfers": 0, "drifts": 0, "inconclusive": 0}
    for _ in range(sims):
        out = simulate(truth, design, rng)
        verdicts[out.fit.verdict] += 1
        if out.fit.slope is not None:
            forecast = predict(summary_entry(out), target, truth.slope != 0, 1.0)
            assert forecast.interval is not None
            predicted_total += 1
            predicted += forecast.interval[0] <= truth.optimum(target, design.widths[0]) <= forecast.interval[1]
        for opt in out.optima:
            if opt.measured:
                width_total += 1
                width_hits += opt.ci[0] <= out.truth[opt.width] <= opt.ci[1]
        if out.fit.ci is not None:
            slope_total += 1
            slope_hits += out.fit.ci[0] <= truth.slope <= out.fit.ci[1]
    return {"width_coverage": width_hits / max(width_total, 1), "slope_coverage": slope_hits / max(slope_total, 1),
            "prediction_coverage": predicted / max(predicted_total, 1), **{k: v / sims for k, v in verdicts.items()}}


def _population_loss(truth: Truth, x: float) -> float:
    """The loss at x averaged over seeds (their optimum shifts), by Gauss–Hermite quadrature."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    d = x - (truth.x0 + truth.seed_shift * nodes)
    a = truth.curvature * np.where(d > 0, truth.asymmetry, 1.0)
    return float(2.0 + (weights * a * d * d).sum() / weights.sum())


def simulate_verify(truth: Truth, search: SearchSpec, p: float,
                    rng: np.random.Generator) -> tuple[Fidelity, float, float]:
    """One simulated ``verify`` at a width whose true optimum is ``truth.x0``, of the prediction p: the real
    policy (grid, extension, anchor, noise probes) trains the points, the real analysis measures them.
    Returns the fidelity, the true error x0 − p, and the true regret L(p) − L(x*) of the seed-averaged loss."""
    policy = GridPolicy(search, 0, tuple(range(1, 1 + search.noise_seeds)))
    width = _Width(truth, truth.x0, rng)
    for x, seed in policy.initial_points():
        width.train(x, seed)
    while True:
        done = {(round(x, 9), s) for x, s, _ in width.finished()}
        new = [pt for pt in policy.next_points(width.finished()) if (round(pt[0], 9), pt[1]) not in done]
        if not new:
            break
        for x, seed in new:
            width.train(x, seed)
    x, seed, loss, status = (np.array(col) for col in zip(*width.points))
    fidelity = measure_fidelity(0, x.astype(float), seed.astype(int), loss.astype(float), status.astype(str), p, 0,
                                search.step)
    x_star = fidelity.measured.x_star if fidelity.measured else math.nan
    return fidelity, truth.x0 - p, _population_loss(truth, p) - _population_loss(truth, x_star)


def verify_coverage(truth: Truth, search: SearchSpec, p: float, sims: int, seed: int = 0) -> dict[str, float]:
    """Over ``sims`` simulated verifies: how often the error's and the regret's 95 % intervals hold the truth,
    and the mean bias of each estimate."""
    rng = np.random.default_rng(seed)
    error_hits = regret_hits = regret_total = 0
    error_bias = regret_bias = 0.0
    for _ in range(sims):
        fidelity, error, regret = simulate_verify(truth, search, p, rng)
        if fidelity.error_ci is not None:
            error_hits += fidelity.error_ci[0] <= error <= fidelity.error_ci[1]
        error_bias += (fidelity.error - error) / sims
        if fidelity.regret is not None and fidelity.regret.nats_ci is not None:
            regret_total += 1
            regret_hits += fidelity.regret.nats_ci[0] <= regret <= fidelity.regret.nats_ci[1]
            regret_bias += fidelity.regret.nats - regret
    return {"error_coverage": error_hits / sims, "regret_coverage": regret_hits / max(regret_total, 1),
            "error_bias": error_bias, "regret_bias": regret_bias / max(regret_total, 1)}


def compare_rates(truth_a: Truth, truth_b: Truth, design: Design, sims: int, seed: int = 0) -> dict[str, float]:
    """Over ``sims`` pairs of independent simulated sweeps (A from ``truth_a``, B from ``truth_b``): how often
    ``compare`` calls a width moved (its B − A interval excludes 0), how often the setup comes out ``moved``
    (some width moved), and how often the interval holds the true difference."""
    rng = np.random.default_rng(seed)
    moved_widths = widths = setups_moved = hits = 0
    for _ in range(sims):
        a, b = simulate(truth_a, design, rng), simulate(truth_b, design, rng)
        optima_b = {o.width: o for o in b.optima}
        any_moved = False
        for opt_a in a.optima:
            opt_b = optima_b.get(opt_a.width)
            if opt_b is None:
                continue
            _, (lo, hi), _ = difference_interval(opt_a.as_dict(), opt_b.as_dict())
            widths += 1
            moved = lo > 0 or hi < 0
            moved_widths += moved
            any_moved = any_moved or moved
            hits += lo <= b.truth[opt_a.width] - a.truth[opt_a.width] <= hi
        setups_moved += any_moved
    return {"width_moved_rate": moved_widths / max(widths, 1), "setup_moved_rate": setups_moved / sims,
            "difference_coverage": hits / max(widths, 1)}


def law_coverage(truth: Truth, slopes: dict[str, float], points: list[dict[str, int]], design: Design, sims: int,
                 target: dict[str, int], seed: int = 0) -> dict[str, float]:
    """Over ``sims`` simulated sweeps over several axes (one simulated width per point of ``points``, whose true
    optimum is ``truth.x0`` + Σ slope · log2(value / the first point's)): how often the law's 95 % interval
    holds each true slope, and how often its range at ``target`` (every slope applied) holds the truth there."""
    rng = np.random.default_rng(seed)
    base = points[0]
    axes = list(slopes)

    def optimum(point: dict[str, int]) -> float:
        return truth.x0 + sum(slopes[a] * math.log2(point[a] / base[a]) for a in axes)

    halfwidth = fit_halfwidth(design.step, True)
    settings = SearchSettings(step=design.step, low=design.low, high=design.high)
    hits = {a: 0 for a in axes}
    predicted = fitted = 0
    for _ in range(sims):
        rows = []
        for point in points:
            width = _Width(truth, optimum(point), rng)
            _sweep_width(width, design, halfwidth)
            rows += [{**point, "setup": "s", "seed": s, "x": x, "loss": loss, "status": status}
                     for x, s, loss, status in width.points]
        law = fit_law(pd.DataFrame(rows), axes, settings)
        if law is None:
            continue
        fitted += 1
        for a in axes:
            lo, hi = law["slope_ci"][a]
            hits[a] += lo <= slopes[a] <= hi
        value, half = evaluate_law(law, target, axes)
        predicted += abs(value - optimum(target)) <= half
    return {**{f"{a}_coverage": h / max(fitted, 1) for a, h in hits.items()},
            "prediction_coverage": predicted / max(fitted, 1), "fitted": fitted / sims}
