"""Sweeps simulated from a known truth, for checking the analysis by coverage rather than by its formulas.

A simulated width has a true optimum x_w = x0 + slope · log2(w / w0); each seed shifts it by N(0, shift²)
(its init and batches), and each trained point adds N(0, noise²) to a bowl of curvature a (a·asymmetry on
the high side, divergence past ``diverge_after`` octaves above the seed's optimum). The sweep itself runs
the real policies — the grid, its extension past an edge, the noise probes — and the real analysis (the
optimum per width, pooling, the drift fit and the verdict). Pure numpy: no training.

Real curves depart from that ideal in ways ``Truth`` can switch on one at a time (each is off by default, and
the ideal simulator's draws are then unchanged): curvature and asymmetry that change along the swept axes, a
seed's shift correlated across widths (seeds share batches), a seed's own curvature, each width's optimum off
the law, noise that grows on the high side, loss spikes. ``simulation.calibration`` holds the values measured on
this project's sweeps; ``simulation.simulated_rates`` counts how often the analysis holds the truth over many sweeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import numpy as np

from ..analysis.bowl import Asymmetry
from ..analysis.drift import PointTrials, drift, setup_optima
from ..analysis.result import AxisFit
from ..analysis.optimum import Optimum, fit_halfwidth
from ..analysis.thresholds import Thresholds
from ..analysis.fidelity import Fidelity, measure_fidelity
from ..sweep.plan.policy import GridPolicy, extension_point, probe_points
from ..sweep.spec.sweep_spec import SearchSpec
from ..words import TrialStatus

__all__ = ["SWEPT_SE_LOG", "Truth", "Design", "Outcome", "SharedSeeds", "SimulatedPoint", "sweep_point", "simulate",
           "simulate_points", "analyse", "true_optima", "simulate_verify", "population_loss"]


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


SWEPT_SE_LOG = 0.15
"""The error of log r a default sweep's pooled asymmetry has (0.1–0.2 over four widths on the real-curve
simulator): what a simulated verify is handed where its own grid cannot measure r."""


@dataclass(frozen=True)
class Design:
    """A simulated sweep's design; the defaults are the design ``sweeps/default.yaml`` had up to 0.6 (four widths,
    a 7-point grid around the optimum, two noise seeds), on which docs/analysis.md's tables are computed."""

    widths: tuple[int, ...] = (32, 64, 128, 256)
    low: float = -8.0
    high: float = -2.0
    step: float = 1.0
    seeds: int = 1
    noise_seeds: int = 2
    extend: bool = True
    extend_max: float = 4.0


@dataclass
class Outcome:
    optima: list[Optimum]
    fit: AxisFit
    truth: dict[int, float] = field(default_factory=dict)
    trained: dict[int, int] = field(default_factory=dict)
    """Points trained per width: what the simulated sweep cost."""


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


class SimulatedPoint:
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
            self.points.append((x, seed, math.nan, TrialStatus.DIVERGED))
            return
        a = self.curvatures[seed] * (self.asymmetry if d > 0 else 1.0)
        noise = t.noise * (1.0 + t.noise_growth * max(d, 0.0))
        loss = 2.0 + self.offsets[seed] + a * d * d + self.rng.normal(0.0, noise)
        if t.spike_rate and self.rng.random() < t.spike_rate:
            loss += self.rng.exponential(t.spike_size)
        self.points.append((x, seed, loss, TrialStatus.OK))

    def finished(self) -> list[tuple[float, int, float]]:
        return [(x, s, loss if status == TrialStatus.OK else math.inf) for x, s, loss, status in self.points]


def sweep_point(width: SimulatedPoint, design: Design, halfwidth: float) -> None:
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


def true_optima(truth: Truth, design: Design, rng: np.random.Generator) -> dict[int, float]:
    """Each width's true optimum for one simulated sweep: the law's, moved off it by ``Truth.departure``."""
    return {w: truth.departed(truth.optimum(w, design.widths[0]), rng) for w in design.widths}


def simulate(truth: Truth, design: Design, rng: np.random.Generator, th: Thresholds = Thresholds(),
             optima: Optional[dict[int, float]] = None) -> Outcome:
    """One simulated sweep of one setup, analysed as ``mutransfer`` analyses a real one; ``optima`` gives each
    width's true optimum (default: drawn as ``true_optima`` draws them) — two runs of one model share theirs."""
    return analyse(*simulate_points(truth, design, rng, th, optima), design, th)


def simulate_points(truth: Truth, design: Design, rng: np.random.Generator, th: Thresholds = Thresholds(),
                    optima: Optional[dict[int, float]] = None) -> tuple[dict[int, PointTrials], dict[int, float],
                                                                        dict[int, int]]:
    """One simulated sweep's trials before the analysis: each width's trials, its true optimum and the points it
    trained (``simulate``'s arguments)."""
    halfwidth = fit_halfwidth(design.step, True, th)
    points, truths, trained = {}, {}, {}
    seeds = SharedSeeds(rng)
    for w in design.widths:
        x_true = truth.departed(truth.optimum(w, design.widths[0]), rng) if optima is None else optima[w]
        width = SimulatedPoint(truth, x_true, rng, math.log2(w / design.widths[0]), seeds)
        sweep_point(width, design, halfwidth)
        x, seed, loss, status = (np.array(col) for col in zip(*width.points))
        points[w] = PointTrials(x.astype(float), seed.astype(int), loss.astype(float), status == TrialStatus.OK,
                                status == TrialStatus.DIVERGED)
        truths[w], trained[w] = width.x_true, len(width.points)
    return points, truths, trained


def analyse(points: dict[int, PointTrials], truths: dict[int, float], trained: dict[int, int], design: Design,
            th: Thresholds = Thresholds()) -> Outcome:
    """The analysis of simulated ``points`` (width → its trials), as ``mutransfer`` analyses a sweep's."""
    halfwidth = fit_halfwidth(design.step, True, th)
    optima, missing, bowl = setup_optima(points, design.step, halfwidth, th)
    fit = drift(optima, th, missing)
    fit.asymmetry, fit.asymmetry_se_log = bowl.ratio, bowl.se_log
    fit.points = {o.point: o.result() for o in sorted(optima, key=lambda o: o.point)}
    return Outcome(optima, fit, dict(truths), dict(trained))


@lru_cache(maxsize=1)
def _hermite_nodes() -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights (probabilists'), 40 of them."""
    return np.polynomial.hermite_e.hermegauss(40)


def population_loss(truth: Truth, x: float) -> float:
    """The loss at x averaged over seeds (their optimum shifts), by Gauss–Hermite quadrature."""
    nodes, weights = _hermite_nodes()
    d = x - (truth.x0 + truth.seed_shift * nodes)
    a = truth.curvature * np.where(d > 0, truth.asymmetry, 1.0)
    return float(2.0 + (weights * a * d * d).sum() / weights.sum())


def simulate_verify(truth: Truth, search: SearchSpec, p: float, rng: np.random.Generator,
                    swept: Optional[Asymmetry] = None) -> tuple[Fidelity, float, float]:
    """One simulated ``verify`` at a width whose true optimum is ``truth.x0``, of the prediction p: the real
    policy (grid, extension, anchor, noise probes) trains the points, the real analysis measures them.
    Returns the fidelity, the true error x0 − p, and the true regret L(p) − L(x*) of the seed-averaged loss.
    ``swept`` is the asymmetry the sweep hands over (default: the truth's, its log known to ``SWEPT_SE_LOG``)."""
    swept = Asymmetry(truth.asymmetry, SWEPT_SE_LOG) if swept is None else swept
    policy = GridPolicy(search, 0, tuple(range(1, 1 + search.noise_seeds)))
    width = SimulatedPoint(truth, truth.x0, rng)
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
                                search.step, swept=swept)
    x_star = fidelity.measured.x_star if fidelity.measured else math.nan
    return fidelity, truth.x0 - p, population_loss(truth, p) - population_loss(truth, x_star)
