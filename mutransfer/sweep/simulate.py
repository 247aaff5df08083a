"""Sweeps simulated from a known truth, for checking the analysis by coverage rather than by its formulas.

A simulated width has a true optimum x_w = x0 + slope · log2(w / w0); each seed shifts it by N(0, shift²)
(its init and batches), and each trained point adds N(0, noise²) to a bowl of curvature a (a·asymmetry on
the high side, divergence past ``diverge_after`` octaves above the seed's optimum). The sweep itself runs
the real policies — the grid, its extension past an edge, the noise probes — and the real analysis (the
optimum per width, pooling, the drift fit and the verdict). Pure numpy: no training.

Real curves depart from that ideal in ways ``Truth`` can switch on one at a time (each is off by default, and
the ideal simulator's draws are then unchanged): curvature and asymmetry that change along the swept axes, a
seed's shift correlated across widths (seeds share batches), a seed's own curvature, each width's optimum off
the law, noise that grows on the high side, loss spikes. ``sweep.calibration`` holds the values measured on
this project's sweeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import pandas as pd

from ..analysis.compare import difference_interval
from ..analysis.drift import Drift, SearchSettings, drift, pool
from ..analysis.law import evaluate_law, fit_law
from ..analysis.optimum import Thresholds, WidthOptimum, fit_halfwidth, optimum_of_arrays
from ..analysis.prediction import law_prediction, predict
from ..analysis.summary import summarize
from ..analysis.fidelity import Fidelity, measure_fidelity
from ..schema import LR_COLUMN, LR_KEY, axis_named
from .policy import GridPolicy, extension_point, probe_points
from .spec import SearchSpec

__all__ = ["Truth", "Design", "Outcome", "SharedSeeds", "simulate", "coverage", "summary_entry", "simulate_verify",
           "verify_coverage", "compare_rates", "law_coverage", "real_coverage", "real_law_coverage"]


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
    curvature_slope: float = 0.0
    """Change of log2(curvature) per doubling along the swept axes: a = curvature · 2^(curvature_slope · d), d the
    point's doublings from the base point."""
    asymmetry_slope: float = 0.0
    """Change of log2(asymmetry) per doubling along the swept axes."""
    seed_correlation: float = 0.0
    """Correlation of one seed's optimum shift across the widths (depths, horizons) of a sweep: the seeds share
    their batches, so a seed whose batches favour a larger LR does so at every width."""
    seed_curvature: float = 0.0
    """Standard deviation of log(curvature) between seeds at one point."""
    departure: float = 0.0
    """Standard deviation (octaves) of each point's true optimum off the law, drawn once per simulated sweep (the
    target's too): the law is a line only on average."""
    noise_growth: float = 0.0
    """The loss noise grows on the high side: noise · (1 + noise_growth · d) at d octaves above the seed's optimum."""
    spike_rate: float = 0.0
    """Probability that a trained point's loss carries a spike (an exponential excess of mean ``spike_size``)."""
    spike_size: float = 0.0

    def optimum(self, width: int, base: int) -> float:
        """The law's optimum at ``width`` (without ``departure``, which is drawn per sweep)."""
        return self.x0 + self.slope * math.log2(width / base)

    def shape(self, doublings: float) -> tuple[float, float]:
        """(curvature, asymmetry) at a point ``doublings`` from the base point."""
        return (self.curvature * 2.0 ** (self.curvature_slope * doublings),
                self.asymmetry * 2.0 ** (self.asymmetry_slope * doublings))

    def departed(self, x: float, rng: np.random.Generator) -> float:
        """``x`` moved off the law by this truth's width-level departure (unchanged, and no draw, when off)."""
        return x + rng.normal(0.0, self.departure) if self.departure else x


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


class SharedSeeds:
    """What a seed carries across the points of one simulated sweep: the common part of its optimum shift
    (``Truth.seed_correlation``), drawn on first use."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.common: dict[int, float] = {}

    def common_shift(self, seed: int) -> float:
        if seed not in self.common:
            self.common[seed] = self.rng.normal()
        return self.common[seed]


class _Width:
    """One simulated width (or point): each seed's true optimum and curvature, and the trained points."""

    def __init__(self, truth: Truth, x_true: float, rng: np.random.Generator, doublings: float = 0.0,
                 seeds: Optional[SharedSeeds] = None) -> None:
        self.truth, self.x_true, self.rng = truth, x_true, rng
        self.curvature, self.asymmetry = truth.shape(doublings)
        self.seeds = seeds
        self.shifts: dict[int, float] = {}
        self.offsets: dict[int, float] = {}
        self.curvatures: dict[int, float] = {}
        self.points: list[tuple[float, int, float, str]] = []

    def _shift(self, seed: int) -> float:
        t = self.truth
        if not t.seed_correlation or self.seeds is None:
            return self.rng.normal(0.0, t.seed_shift)
        rho = t.seed_correlation
        own = self.rng.normal()
        return t.seed_shift * (math.sqrt(rho) * self.seeds.common_shift(seed) + math.sqrt(1.0 - rho) * own)

    def train(self, x: float, seed: int) -> None:
        t = self.truth
        if seed not in self.shifts:
            self.shifts[seed] = self._shift(seed)
            self.offsets[seed] = self.rng.normal(0.0, t.loss_offset) if t.loss_offset else 0.0
            self.curvatures[seed] = self.curvature * (math.exp(self.rng.normal(0.0, t.seed_curvature))
                                                      if t.seed_curvature else 1.0)
        d = x - (self.x_true + self.shifts[seed])
        if t.diverge_after is not None and d > t.diverge_after:
            self.points.append((x, seed, math.nan, "diverged"))
            return
        a = self.curvatures[seed] * (self.asymmetry if d > 0 else 1.0)
        noise = t.noise * (1.0 + t.noise_growth * max(d, 0.0))
        loss = 2.0 + self.offsets[seed] + a * d * d + self.rng.normal(0.0, noise)
        if t.spike_rate and self.rng.random() < t.spike_rate:
            loss += self.rng.exponential(t.spike_size)
        self.points.append((x, seed, loss, "ok"))

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
    seeds = SharedSeeds(rng)
    for w in design.widths:
        width = _Width(truth, truth.departed(truth.optimum(w, design.widths[0]), rng), rng,
                       math.log2(w / design.widths[0]), seeds)
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
    rates = real_coverage(truth, design, sims, seed, target, correct_when_truth_drifts=True)
    return {key: value for key, value in rates.items() if key != "predicted"}


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


def _law_optimum(truth: Truth, slopes: dict[str, float], base: dict[str, int]) -> Callable[[dict[str, int]], float]:
    """The law's true optimum at a point: ``truth.x0`` + Σ slope · log2(value / the base point's)."""
    return lambda point: truth.x0 + sum(slope * math.log2(point[a] / base[a]) for a, slope in slopes.items())


def law_coverage(truth: Truth, slopes: dict[str, float], points: list[dict[str, int]], design: Design, sims: int,
                 target: dict[str, int], seed: int = 0) -> dict[str, float]:
    """Over ``sims`` simulated sweeps over several axes (one simulated width per point of ``points``, whose true
    optimum is ``truth.x0`` + Σ slope · log2(value / the first point's)): how often the law's 95 % interval
    holds each true slope, and how often its range at ``target`` (every slope applied) holds the truth there."""
    rng = np.random.default_rng(seed)
    base = points[0]
    axes = list(slopes)
    optimum = _law_optimum(truth, slopes, base)
    halfwidth = fit_halfwidth(design.step, True)
    settings = SearchSettings(step=design.step, low=design.low, high=design.high)
    hits = {a: 0 for a in axes}
    predicted = fitted = 0
    for _ in range(sims):
        rows = []
        seeds = SharedSeeds(rng)
        for point in points:
            doublings = sum(math.log2(point[a] / base[a]) for a in axes)
            width = _Width(truth, truth.departed(optimum(point), rng), rng, doublings, seeds)
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
        predicted += abs(value - truth.departed(optimum(target), rng)) <= half
    return {**{f"{a}_coverage": h / max(fitted, 1) for a, h in hits.items()},
            "prediction_coverage": predicted / max(fitted, 1), "fitted": fitted / sims}


def _hit(tally: list[int], interval: tuple[float, float] | list[float], value: float) -> None:
    """Count one interval in ``tally`` ([hits, total]) and whether it holds ``value``."""
    tally[0] += interval[0] <= value <= interval[1]
    tally[1] += 1


def _rates(tallies: dict[str, list[int]]) -> dict[str, float]:
    return {f"{name}_coverage": hits / max(total, 1) for name, (hits, total) in tallies.items()}


def real_coverage(truth: Truth, design: Design, sims: int, seed: int = 0, target: int = 4096,
                  correct_when_truth_drifts: bool = False) -> dict[str, float]:
    """Over ``sims`` simulated sweeps: how often the per-width and slope 95 % intervals hold the truth, how often
    the range at ``target`` that a user acts on holds it there — the plain range when the verdict is
    ``transfers``, the drift-corrected one otherwise (``correct_when_truth_drifts``: whenever the truth drifts,
    which only a simulation knows; ``coverage``'s rule) — how often a range is given at all, and how often each
    verdict comes out."""
    rng = np.random.default_rng(seed)
    tallies: dict[str, list[int]] = {"width": [0, 0], "slope": [0, 0], "prediction": [0, 0]}
    verdicts = {"transfers": 0, "drifts": 0, "inconclusive": 0}
    for _ in range(sims):
        out = simulate(truth, design, rng)
        verdicts[out.fit.verdict] += 1
        for opt in out.optima:
            if opt.measured:
                _hit(tallies["width"], opt.ci, out.truth[opt.width])
        if out.fit.ci is not None:
            _hit(tallies["slope"], out.fit.ci, truth.slope)
        if out.fit.slope is not None:
            corrected = truth.slope != 0 if correct_when_truth_drifts else out.fit.verdict != "transfers"
            forecast = predict(summary_entry(out), target, corrected, 1.0)
            assert forecast.interval is not None
            _hit(tallies["prediction"], forecast.interval,
                 truth.departed(truth.optimum(target, design.widths[0]), rng))
    return {**_rates(tallies), "predicted": tallies["prediction"][1] / sims,
            **{k: v / sims for k, v in verdicts.items()}}


def _point_entry(info: dict[str, Any], point: dict[str, int], base: dict[str, int]) -> Optional[dict[str, Any]]:
    """A point's entry in a setup's summary: from the line of the first axis it lies on through the base point
    (the width line for the base point itself); None for a point off every line (``axes: product``)."""
    for name in point:
        if all(point[other] == base[other] for other in point if other != name):
            entry = info if name == "width" else info["axes"][name]
            return entry[axis_named(name).plural].get(str(point[name]))
    return None


def real_law_coverage(truth: Truth, slopes: dict[str, float], points: list[dict[str, int]], design: Design,
                      sims: int, targets: dict[str, dict[str, int]], seed: int = 0) -> dict[str, float]:
    """Over ``sims`` simulated sweeps over several axes (``points`` as ``law_coverage`` takes them, the first one
    the base), each summarised as a real sweep is (``summarize``): how often each point's 95 % interval (from its
    axis's line through the base point) holds its true optimum, how often the law's interval holds each true
    slope, how often the range ``transfer`` gives at each of ``targets`` (name → point) holds the truth there —
    the width slope applied unless the width verdict is ``transfers`` (``--correct-drift``), the depth and steps
    slopes whenever their axis does not transfer — and the width verdict's rates. Keys: ``point_coverage``,
    ``<axis>_slope_coverage``, ``range_<name>_coverage``, ``fitted``, ``transfers``, ``drifts``, ``inconclusive``."""
    rng = np.random.default_rng(seed)
    base = points[0]
    axes = list(slopes)
    optimum = _law_optimum(truth, slopes, base)
    halfwidth = fit_halfwidth(design.step, True)
    settings = {LR_KEY: {"s": SearchSettings(step=design.step, low=design.low, high=design.high)}}
    tallies: dict[str, list[int]] = {"point": [0, 0], **{f"{a}_slope": [0, 0] for a in axes},
                                     **{f"range_{name}": [0, 0] for name in targets}}
    verdicts = {"transfers": 0, "drifts": 0, "inconclusive": 0}
    for _ in range(sims):
        rows, truths = [], []
        seeds = SharedSeeds(rng)
        for point in points:
            width = _Width(truth, truth.departed(optimum(point), rng), rng,
                           sum(math.log2(point[a] / base[a]) for a in axes), seeds)
            _sweep_width(width, design, halfwidth)
            truths.append(width.x_true)
            rows += [{**{axis_named(a).column: point[a] for a in axes}, "setup": "s", "seed": s, "search_key": LR_KEY,
                      LR_COLUMN: x, "val_loss": loss, "status": status} for x, s, loss, status in width.points]
        info = summarize(pd.DataFrame(rows), settings)["setups"]["s"]
        verdicts[info["verdict"]] += 1
        for point, x_true in zip(points, truths):
            entry = _point_entry(info, point, base)
            if entry and entry.get("log2_lr_star") is not None and not entry.get("censored"):
                _hit(tallies["point"], entry["ci"], x_true)
        law = info.get("law")
        if law is None:
            continue
        for a in axes:
            _hit(tallies[f"{a}_slope"], law["slope_ci"][a], slopes[a])
        for name, target in targets.items():
            forecast = law_prediction(info, target, info["verdict"] != "transfers", 1.0)
            assert forecast.interval is not None
            _hit(tallies[f"range_{name}"], forecast.interval, truth.departed(optimum(target), rng))
    return {**_rates(tallies), "fitted": tallies[f"{axes[0]}_slope"][1] / sims,
            **{k: v / sims for k, v in verdicts.items()}}
