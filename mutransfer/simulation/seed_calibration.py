"""The seeds' part of the calibration (``measured_calibration``): on a table with a seed study, how far the seeds'
optima shift together, how their shifts correlate across widths, and how their bowls' curvature varies, beyond what
the estimator's own noise explains (checked by simulating seeds)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..analysis.bowl import SeedBowl, seed_bowl
from ..analysis.drift import SearchSettings
from ..analysis.optimum import Thresholds, fit_halfwidth, grid_seeds, optimum_of_arrays
from ..analysis.stats import Z95, chi2_quantile
from ..analysis.trial_table import axis_rows, swept_axes
from ..schema import LR_COLUMN
from .calibration_tables import Curve, Measurement, Table, lr_rows, curves, noise_of

__all__ = ["seed_measurements", "seed_study"]


SEED_STUDY = 8
"""Grid seeds a setup needs at two widths to measure the seed shift and its correlation."""


SIMULATED_SEEDS = 400
"""Simulated seeds per width that measure a seed's vertex and curvature estimation noise."""


SEED_QUANTITIES = ("seed_shift", "seed_correlation", "seed_curvature")


def fisher_interval(r: float, n: int) -> tuple[float, float]:
    """The 95 % interval of a correlation r from n pairs (Fisher's z transform, "On the probable error of a
    coefficient of correlation deduced from a small sample", 1921)."""
    z, half = math.atanh(float(np.clip(r, -0.999999, 0.999999))), Z95 / math.sqrt(max(n - 3, 1))
    return math.tanh(z - half), math.tanh(z + half)


def seed_study(table: Table) -> Optional[tuple[str, list[int]]]:
    """(setup, widths) of a setup with at least ``SEED_STUDY`` common grid seeds at two or more widths at the base
    point of any other axis; None when the table has none."""
    rows = lr_rows(axis_rows(table.trials, swept_axes(table.trials)[0]))
    for setup, part in rows.groupby("setup", sort=True):
        settings = table.settings.get(str(setup), SearchSettings())
        halfwidth = fit_halfwidth(settings.step, settings.log2)
        seeds = {int(w): set(grid_seeds(p[LR_COLUMN].to_numpy(float), p["seed"].to_numpy(int), halfwidth).tolist())
                 for w, p in part.groupby("width")}
        widths = sorted(w for w, s in seeds.items() if len(s) >= SEED_STUDY)
        if len(widths) >= 2 and len(set.intersection(*(seeds[w] for w in widths))) >= SEED_STUDY:
            return str(setup), widths
    return None


@dataclass(frozen=True)
class SeedWidth:
    """At one width of a seed study: each seed's vertex (the analysis's own estimator on that seed alone) and
    log curvature (its bowl), and the spread the estimators alone give (simulated seeds with neither)."""

    vertices: dict[int, float]
    log_curvatures: dict[int, float]
    vertex_noise: float
    curvature_noise: float


def seed_width(rows: pd.DataFrame, settings: SearchSettings, noise: float, rng: np.random.Generator) -> SeedWidth:
    """One width of a seed study (``SeedWidth``); ``noise`` is the per-point loss noise the simulated seeds get."""
    halfwidth = fit_halfwidth(settings.step, settings.log2)
    x, seed, loss = rows[LR_COLUMN].to_numpy(float), rows["seed"].to_numpy(int), rows["val_loss"].to_numpy(float)
    vertices, logs, bowls = {}, {}, []
    grid_of = grid_seeds(x, seed, halfwidth)
    for s in grid_of:
        mine = seed == s
        opt = _seed_vertex(x[mine], loss[mine], settings.step, halfwidth)
        fit = seed_bowl(x[mine], loss[mine])
        if opt is not None:
            vertices[int(s)] = opt
        if fit is not None:
            logs[int(s)] = math.log(fit.curvature)
            bowls.append(fit)
    grid = np.array(sorted(set.intersection(*(set(x[seed == s].tolist()) for s in grid_of))))
    bowl = SeedBowl(float(np.median([b.vertex for b in bowls])), 0.0, float(np.median([b.curvature for b in bowls])),
                float(np.median([b.asymmetry for b in bowls])), np.zeros(0), np.zeros(0), np.zeros(0), ())
    vertex_noise, curvature_noise = _estimator_noise(bowl, grid, noise, settings, rng)
    return SeedWidth(vertices, logs, vertex_noise, curvature_noise)


def _seed_vertex(x: np.ndarray, loss: np.ndarray, step: float, halfwidth: float) -> Optional[float]:
    """One seed's optimum as the analysis measures it (None when censored at a grid edge or not found)."""
    n = len(x)
    opt = optimum_of_arrays(0, x, np.zeros(n, dtype=int), loss, np.ones(n, bool), np.zeros(n, bool), step, halfwidth,
                            Thresholds(), grid=[0])
    return opt.x_star if opt is not None and opt.measured else None


def _estimator_noise(bowl: SeedBowl, grid: np.ndarray, noise: float, settings: SearchSettings,
                     rng: np.random.Generator) -> tuple[float, float]:
    """The sd of a seed's vertex and of its log curvature over ``SIMULATED_SEEDS`` curves drawn on ``grid`` from
    ``bowl`` with independent N(0, noise²) per point and no seed shift: what the estimators alone scatter."""
    halfwidth = fit_halfwidth(settings.step, settings.log2)
    d = grid - bowl.vertex
    mean = 2.0 + bowl.curvature * np.where(d > 0, bowl.asymmetry, 1.0) * d * d
    vertices, logs = [], []
    for _ in range(SIMULATED_SEEDS):
        loss = mean + rng.normal(0.0, noise, len(grid))
        vertex = _seed_vertex(grid, loss, settings.step, halfwidth)
        fit = seed_bowl(grid, loss)
        if vertex is not None:
            vertices.append(vertex)
        if fit is not None:
            logs.append(math.log(fit.curvature))
    return float(np.std(vertices, ddof=1)), float(np.std(logs, ddof=1))


@dataclass(frozen=True)
class Excess:
    """The seeds' variance pooled over widths (``dof`` = Σ(k − 1)) against what the estimator alone scatters:
    resolved when their ratio exceeds the 95 % point of χ²_dof / dof."""

    observed: float
    own: float
    dof: int

    @property
    def component(self) -> float:
        return max(self.observed - self.own, 0.0)

    @property
    def resolved(self) -> bool:
        return self.own > 0 and self.observed / self.own > chi2_quantile(0.95, self.dof) / self.dof

    def describe(self, what: str) -> str:
        ratio = self.observed / self.own if self.own > 0 else math.inf
        return (f"√(variance of {what} {self.observed:.4f} − the estimator's own {self.own:.4f}); "
                f"ratio {ratio:.2f} against χ²₀.₉₅/ν = {chi2_quantile(0.95, self.dof) / self.dof:.2f} "
                f"at ν = {self.dof}" + ("" if self.resolved else ": not resolved"))


def _excess(values: Sequence[Mapping[int, float]], noise: Sequence[float]) -> Excess:
    dof = sum(len(v) - 1 for v in values)
    observed = sum(np.var(list(v.values()), ddof=1) * (len(v) - 1) for v in values) / dof
    return Excess(float(observed), float(np.mean(np.square(noise))), dof)


def seed_measurements(table: Optional[Table], table_curves: Sequence[Curve] = (), seed: int = 0) -> list[Measurement]:
    """Seed shift (the sd of each seed's vertex beyond what the estimator alone scatters), its correlation across
    two widths (disattenuated for that scatter) and the sd of a seed's log curvature, from a seed study; each 0
    and "not resolved" without one or where the seeds scatter no more than the estimators do. ``table_curves``:
    the table's bowls when already fitted."""
    study = seed_study(table) if table is not None else None
    if table is None or study is None:
        return [Measurement(name, 0.0, f"no table has a setup with {SEED_STUDY} grid seeds at two widths: not "
                            "resolved", (), False) for name in SEED_QUANTITIES]
    setup, widths = study
    rows = lr_rows(axis_rows(table.trials, swept_axes(table.trials)[0]))
    rows = rows[rows["setup"] == setup]
    noise, dof = noise_of([c for c in (table_curves or curves(table)) if c.table == table.name and c.setup == setup])
    rng = np.random.default_rng(seed)
    settings = table.settings.get(setup, SearchSettings())
    per_width = [seed_width(rows[rows["width"] == w], settings, noise, rng) for w in widths[:2]]
    where = f"{setup} at widths {widths[0]} and {widths[1]}; the estimators' scatter simulated at the study's " \
            f"own noise {noise:.4f} ({dof} dof)"
    shift = _excess([p.vertices for p in per_width], [p.vertex_noise for p in per_width])
    out = [Measurement("seed_shift", math.sqrt(shift.component), f"{shift.describe('the seeds’ own vertices')}; "
                       f"{where}", (table.name,), shift.resolved)]
    common = sorted(set(per_width[0].vertices) & set(per_width[1].vertices))
    a = np.array([per_width[0].vertices[s] for s in common])
    b = np.array([per_width[1].vertices[s] for s in common])
    covariance = float(np.cov(a, b, ddof=1)[0, 1])
    raw = covariance / math.sqrt(float(np.var(a, ddof=1) * np.var(b, ddof=1)))
    excess = [float(np.var(v, ddof=1)) - p.vertex_noise**2 for v, p in zip((a, b), per_width)]
    corrected = covariance / math.sqrt(excess[0] * excess[1]) if min(excess) > 0 else 0.0
    lo, hi = fisher_interval(raw, len(common))
    resolved = lo > 0 and corrected > 0
    out.append(Measurement("seed_correlation", float(np.clip(corrected, 0.0, 1.0)),
                           f"correlation of {len(common)} seeds' vertices across the widths, {raw:+.2f} raw (95 % "
                           f"[{lo:+.2f}, {hi:+.2f}], Fisher's z), disattenuated for the estimator's scatter "
                           f"(Spearman), clipped to [0, 1]" + ("" if resolved else ": not resolved") + f"; {where}",
                           (table.name,), resolved))
    curvature = _excess([p.log_curvatures for p in per_width], [p.curvature_noise for p in per_width])
    out.append(Measurement("seed_curvature", math.sqrt(curvature.component),
                           f"{curvature.describe('the seeds’ log curvature')}; {where}", (table.name,),
                           curvature.resolved))
    return out
