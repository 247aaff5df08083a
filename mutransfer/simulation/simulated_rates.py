"""Rates over many simulated sweeps (``simulation.simulate``): how often the analysis's intervals and ranges hold a
known truth and how often each verdict comes out — per width and slope, over several axes (the law), for
``verify`` and for ``compare``; the plain rule of the ideal checks and the rule a user acts on (``real_*``)."""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
import pandas as pd

from ..analysis.compare import DEFAULT_TOLERANCE, VERDICTS, compare_setup
from ..analysis.drift import SearchSettings
from ..analysis.law import evaluate_law, fit_law
from ..analysis.optimum import fit_halfwidth
from ..analysis.prediction import law_prediction, predict
from ..analysis.result import PointResult, SetupResult
from ..analysis.summary import summarize
from ..schema import LR_COLUMN, LR_KEY, axis_named
from .simulate import (Design, SharedSeeds, SimulatedPoint, Truth, population_loss, simulate, simulate_verify,
                       sweep_point, true_optima)
from ..sweep.spec.sweep_spec import SearchSpec
from ..words import Verdict

__all__ = ["coverage", "real_coverage", "law_coverage", "real_law_coverage", "verify_coverage", "compare_rates"]


def coverage(truth: Truth, design: Design, sims: int, seed: int = 0, target: int = 4096) -> dict[str, float]:
    """Over ``sims`` simulated sweeps: how often the per-width and slope 95 % intervals and the predicted
    range at ``target`` (drift-corrected when the truth drifts) hold the truth, and how often each verdict
    comes out."""
    rates = real_coverage(truth, design, sims, seed, target, correct_when_truth_drifts=True)
    return {key: value for key, value in rates.items() if key != "predicted"}


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


def _best_population_loss(truth: Truth) -> float:
    """The seed-averaged loss's minimum (on a 1/100-octave grid within 2 octaves of the optimum)."""
    return min(population_loss(truth, truth.x0 + i / 100) for i in range(-200, 201))


def compare_rates(truth_a: Truth, truth_b: Truth, design: Design, sims: int, seed: int = 0,
                  tolerance: float = DEFAULT_TOLERANCE) -> dict[str, float]:
    """Over ``sims`` pairs of simulated sweeps of one model before (A, ``truth_a``) and after a change (B,
    ``truth_b``), with their own seeds: how often ``compare`` calls the setup ``same``, ``moved`` and
    ``inconclusive``, how often a width is called moved (Holm), and how often the intervals hold the truth — each
    width's difference, the pooled shift (the true differences weighted as the estimate weights them) and the
    loss difference (NaN when no pair had two seeds to give it an interval). Each width's true optimum departs from the law once per pair (``Truth.departure``) and
    both runs share it: the departure is the model's, the change adds ``truth_b``'s shift to it."""
    rng = np.random.default_rng(seed)
    verdicts = {v: 0 for v in VERDICTS}
    tallies: dict[str, list[int]] = {"width": [0, 0], "shift": [0, 0], "loss": [0, 0]}
    moved_widths = compared = 0
    loss_truth = _best_population_loss(truth_b) - _best_population_loss(truth_a)
    base = design.widths[0]
    for _ in range(sims):
        optima_a = true_optima(truth_a, design, rng)
        optima_b = {w: x + truth_b.optimum(w, base) - truth_a.optimum(w, base) for w, x in optima_a.items()}
        a = simulate(truth_a, design, rng, optima=optima_a).fit
        b = simulate(truth_b, design, rng, optima=optima_b).fit
        rows, row = compare_setup(a, b, tolerance)
        verdicts[row["verdict"]] += 1
        true_shift = {w: optima_b[w] - optima_a[w] for w in optima_a}
        for r in rows:
            compared += 1
            moved_widths += r["moved"]
            _hit(tallies["width"], (r["ci_low"], r["ci_high"]), true_shift[r["width"]])
            if r["loss_ci_low"] == r["loss_ci_low"]:
                _hit(tallies["loss"], (r["loss_ci_low"], r["loss_ci_high"]), loss_truth)
        if row["shift"] == row["shift"]:
            weighted = sum(r["weight"] * true_shift[r["width"]] for r in rows)
            _hit(tallies["shift"], (row["shift_ci_low"], row["shift_ci_high"]), weighted)
    rates = _rates(tallies)
    if not tallies["loss"][1]:
        rates["loss_coverage"] = math.nan
    return {**{v: n / sims for v, n in verdicts.items()}, "width_moved_rate": moved_widths / max(compared, 1), **rates}


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
            width = SimulatedPoint(truth, truth.departed(optimum(point), rng), rng, doublings, seeds)
            sweep_point(width, design, halfwidth)
            rows += [{**point, "setup": "s", "seed": s, "x": x, "loss": loss, "status": status}
                     for x, s, loss, status in width.points]
        law = fit_law(pd.DataFrame(rows), axes, settings)
        if law is None:
            continue
        fitted += 1
        for a in axes:
            lo, hi = law.slope_ci[a]
            hits[a] += lo <= slopes[a] <= hi
        _, (lo, hi) = evaluate_law(law, target, axes)
        predicted += lo <= truth.departed(optimum(target), rng) <= hi
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
    verdicts = dict.fromkeys(Verdict, 0)
    for _ in range(sims):
        out = simulate(truth, design, rng)
        verdicts[out.fit.verdict] += 1
        for opt in out.optima:
            if opt.measured:
                _hit(tallies["width"], opt.ci, out.truth[opt.point])
        if out.fit.slope_ci is not None:
            _hit(tallies["slope"], out.fit.slope_ci, truth.slope)
        if out.fit.slope is not None:
            corrected = truth.slope != 0 if correct_when_truth_drifts else out.fit.verdict != Verdict.TRANSFERS
            forecast = predict(out.fit, target, corrected, 1.0)
            assert forecast.interval is not None
            _hit(tallies["prediction"], forecast.interval,
                 truth.departed(truth.optimum(target, design.widths[0]), rng))
    return {**_rates(tallies), "predicted": tallies["prediction"][1] / sims,
            **{k: v / sims for k, v in verdicts.items()}}


def _point_entry(setup: SetupResult, point: dict[str, int], base: dict[str, int]) -> Optional[PointResult]:
    """A point's result in a setup's summary: from the line of the first axis it lies on through the base point
    (the width line for the base point itself); None for a point off every line (``axes: product``)."""
    for name in point:
        if all(point[other] == base[other] for other in point if other != name):
            return setup.axes[name].points.get(point[name])
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
    verdicts = dict.fromkeys(Verdict, 0)
    for _ in range(sims):
        rows, truths = [], []
        seeds = SharedSeeds(rng)
        for point in points:
            width = SimulatedPoint(truth, truth.departed(optimum(point), rng), rng,
                           sum(math.log2(point[a] / base[a]) for a in axes), seeds)
            sweep_point(width, design, halfwidth)
            truths.append(width.x_true)
            rows += [{**{axis_named(a).column: point[a] for a in axes}, "setup": "s", "seed": s, "search_key": LR_KEY,
                      LR_COLUMN: x, "val_loss": loss, "status": status} for x, s, loss, status in width.points]
        setup = summarize(pd.DataFrame(rows), settings).setups()["s"]
        verdicts[setup.verdict] += 1
        for point, x_true in zip(points, truths):
            entry = _point_entry(setup, point, base)
            if entry is not None and entry.measured and entry.ci is not None:
                _hit(tallies["point"], entry.ci, x_true)
        law = setup.law
        if law is None:
            continue
        for a in axes:
            _hit(tallies[f"{a}_slope"], law.slope_ci[a], slopes[a])
        for name, target in targets.items():
            forecast = law_prediction(setup, target, setup.verdict != Verdict.TRANSFERS, 1.0)
            assert forecast.interval is not None
            _hit(tallies[f"range_{name}"], forecast.interval, truth.departed(optimum(target), rng))
    return {**_rates(tallies), "fitted": tallies[f"{axes[0]}_slope"][1] / sims,
            **{k: v / sims for k, v in verdicts.items()}}
