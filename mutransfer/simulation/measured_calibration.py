"""The real-curve simulator's defaults measured from sweeps' tables (``calibration.CALIBRATED``): the bowls' shape
per point, the noise about them and its growth, spikes, the seeds' shared shifts (``seed_calibration``), and the
optima's departure from their lines; each quantity with how it was measured and from which tables.
``scripts/calibrate_simulator.py`` runs it on the tables kept under docs/data/ (docs/analysis.md, "The real-curve
simulator's calibration")."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..analysis.bowl import WINDOW
from ..analysis.result import AxisFit
from ..analysis.stats import Z95, chi2_quantile
from ..analysis.summary import summarize
from ..analysis.trial_table import swept_axes
from ..schema import LR_KEY
from .calibration import CALIBRATED, FLAT_CURVATURE
from .calibration_tables import (ADAMW, MUON, Curve, Measurement, Table, bowl_kind, curves, load, noise_of,
                                 last_digit, robust_sd, significant, table_names)
from .seed_calibration import seed_measurements, seed_study

__all__ = ["Table", "Curve", "Measurement", "Calibration", "Line", "load", "curves", "shape_measurements",
           "noise_measurements", "seed_measurements", "departure_measurements", "line_of", "lines", "measure",
           "calibrated", "differences", "significant"]


SPIKE_Z = 4.0
"""A standardized residual this many robust standard deviations above its bowl is a loss spike."""


SPIKE_MIN = 3
"""Spikes needed to resolve their rate and size (one or two borderline residuals are the tail, not spikes)."""


def mark_copies(all_curves: Sequence[Curve]) -> list[Curve]:
    """The curves with ``copy_of`` set on each whose bowl was fitted to exactly an earlier one's points."""
    first: dict[tuple[tuple[float, float], ...], str] = {}
    out = []
    for c in all_curves:
        origin = first.setdefault(c.fit.points, f"{c.table}/{c.setup}")
        out.append(replace(c, copy_of=None if origin == f"{c.table}/{c.setup}" else origin))
    return out


def distinct(all_curves: Sequence[Curve]) -> list[Curve]:
    return [c for c in all_curves if c.copy_of is None]


def point_shapes(all_curves: Sequence[Curve]) -> pd.DataFrame:
    """Per (table, setup, point): the median over its grid seeds of the curvature and asymmetry, and which earlier
    point it copies (if its first seed's curve does)."""
    rows = [{"table": c.table, "setup": c.setup, "bowl": c.bowl, **dict(c.point), "seed": c.seed,
             "curvature": c.fit.curvature, "asymmetry": c.fit.asymmetry, "copy_of": c.copy_of} for c in all_curves]
    frame = pd.DataFrame(rows)
    keys = [k for k in frame.columns if k not in ("seed", "curvature", "asymmetry", "copy_of")]
    for column in keys[3:]:
        frame[column] = frame[column].astype("Int64")
    return (frame.groupby(keys, dropna=False, sort=True)
            .agg(curvature=("curvature", "median"), asymmetry=("asymmetry", "median"), seeds=("seed", "size"),
                 copy_of=("copy_of", "first"))
            .reset_index())


def pooled_slopes(shapes: pd.DataFrame, value: str, tables: Mapping[str, Table]) -> dict[str, tuple[float, int]]:
    """The common slope of log2(``value``) against log2 of the swept axis within each (table, setup, axis) line
    through the base point (separate intercepts), and the number of lines: per axis and over all (``all``); a
    slope is 0 without any line."""
    sums: dict[str, list[float]] = {}
    for (name, setup), rows in shapes.groupby(["table", "setup"], sort=True):
        trials = tables[str(name)].trials
        for axis in swept_axes(trials):
            others = {a.column: trials[a.column].min() for a in swept_axes(trials) if a != axis}
            on_line = rows[np.all([rows[c] == v for c, v in others.items()], axis=0)] if others else rows
            if on_line[axis.column].nunique() < 2:
                continue
            x = np.log2(on_line[axis.column].to_numpy(float))
            y = np.log2(on_line[value].to_numpy(float))
            for key in (axis.name, "all"):
                total = sums.setdefault(key, [0.0, 0.0, 0])
                total[0] += float(((x - x.mean()) * (y - y.mean())).sum())
                total[1] += float(((x - x.mean()) ** 2).sum())
                total[2] += 1
    return {key: (sxy / sxx if sxx else 0.0, int(n)) for key, (sxy, sxx, n) in sums.items()}


def shape_measurements(all_curves: Sequence[Curve], tables: Mapping[str, Table]) -> list[Measurement]:
    """Curvature and asymmetry of μP + Muon's bowl (medians over distinct points), their slopes along the swept
    axes (every line with its base point), and the AdamW bowls' curvature (the flat bowl). ``all_curves`` carry
    ``mark_copies``'s marks."""
    shapes = point_shapes(all_curves)
    kept = shapes[shapes["copy_of"].isna()]
    muon, adamw = kept[kept["bowl"] == MUON], kept[kept["bowl"] == ADAMW]
    where = f"two-sided parabola within ±{WINDOW:g} octaves of each grid seed's lowest point; median over a " \
            "point's grid seeds, then over"
    out = [Measurement("curvature", float(muon["curvature"].median()),
                       f"{where} the {len(muon)} μP + Muon points (nats per octave², low side)",
                       table_names(muon["table"])),
           Measurement("asymmetry", float(muon["asymmetry"].median()),
                       f"{where} the {len(muon)} μP + Muon points (high-side curvature / low-side)",
                       table_names(muon["table"]))]
    for value in ("curvature", "asymmetry"):
        slopes = pooled_slopes(shapes[shapes["bowl"] == MUON], value, tables)
        slope, lines = slopes.get("all", (0.0, 0))
        each = ", ".join(f"{axis} {s:+.2f} ({n})" for axis, (s, n) in slopes.items() if axis != "all")
        out.append(Measurement(f"{value}_slope", slope, f"common slope of log2 {value} per doubling of the swept "
                               f"axis within each of {lines} μP + Muon lines (by axis, lines: {each})",
                               table_names(muon["table"]), lines > 0))
    out.append(Measurement("flat_curvature", float(adamw["curvature"].median()) if len(adamw) else 0.0,
                           f"as curvature, over the {len(adamw)} AdamW points", table_names(adamw["table"]),
                           len(adamw) > 0))
    return out


def noise_measurements(all_curves: Sequence[Curve]) -> list[Measurement]:
    """The loss noise about each distinct μP + Muon grid seed's bowl, its growth on the high side, and loss
    spikes."""
    used = [c for c in distinct(all_curves) if c.bowl == MUON and c.fit.dof > 0]
    residuals = np.concatenate([c.fit.standardized for c in used])
    offsets = np.concatenate([c.fit.offsets for c in used])
    noise, dof = noise_of(used)
    tables = table_names(used)
    out = [Measurement("noise", noise, f"residual sd about the bowls of {len(used)} μP + Muon grid-seed curves "
                       f"(Σ squared residuals / {dof} dof)", tables)]
    growth = noise_growth(residuals, offsets)
    how = (f"noise sd ∝ 1 + g · max(d, 0), d octaves above the vertex: g = (robust sd of the {growth.above} "
           f"standardized residuals above the vertex / of the {growth.below} below = {growth.ratio:.2f}, − 1) / "
           f"their mean d above {growth.mean_above:.2f}")
    out.append(Measurement("noise_growth", growth.value,
                           how + ("" if growth.resolved else ": the ratio is within 1.96 se of 1, not resolved"),
                           tables, growth.resolved))
    scale = 1.0 + growth.value * np.maximum(offsets, 0.0)
    return out + spike_measurements(residuals / scale, tables)


@dataclass(frozen=True)
class Growth:
    """The noise's growth above the vertex, noise sd ∝ 1 + g · max(d, 0): the robust sd of the residuals above the
    vertex over the one below (``ratio``), g = (ratio − 1) / the mean offset above. Resolved when log(ratio)
    exceeds 1.96 of its standard error (a MAD's log has variance ≈ 1.36 / n for normal residuals)."""

    ratio: float
    above: int
    below: int
    mean_above: float

    @property
    def resolved(self) -> bool:
        return self.ratio > 0 and math.log(self.ratio) > Z95 * math.sqrt(1.36 * (1 / self.above + 1 / self.below))

    @property
    def value(self) -> float:
        return (self.ratio - 1.0) / self.mean_above if self.resolved else 0.0


def noise_growth(residuals: np.ndarray, offsets: np.ndarray) -> Growth:
    """``Growth`` of standardized residuals at ``offsets`` octaves from their vertices (none below 3 each side)."""
    high = offsets > 0
    if min(int(high.sum()), int((~high).sum())) < 3:
        return Growth(1.0, max(int(high.sum()), 1), max(int((~high).sum()), 1), 1.0)
    return Growth(robust_sd(residuals[high]) / robust_sd(residuals[~high]), int(high.sum()), int((~high).sum()),
                  float(offsets[high].mean()))


def spike_measurements(residuals: np.ndarray, tables: tuple[str, ...]) -> list[Measurement]:
    """Spikes: standardized residuals (divided by the noise's growth where it grows) more than ``SPIKE_Z`` robust
    sds (1.4826 · median |r|) above their bowl.
    An exponential spike's excess over the threshold is exponential with the same mean (memoryless), so
    size = mean(r − T) and rate = (share above T) · exp(T / size)."""
    threshold = SPIKE_Z * robust_sd(residuals)
    spikes = residuals[residuals > threshold]
    if len(spikes) < SPIKE_MIN:
        return [Measurement(name, 0.0, f"{len(spikes)} of {len(residuals)} standardized residuals above {SPIKE_Z:g} "
                            f"robust sds ({threshold:.3f}), fewer than {SPIKE_MIN}: not resolved", tables, False)
                for name in ("spike_rate", "spike_size")]
    size = float((spikes - threshold).mean())
    rate = min(len(spikes) / len(residuals) * math.exp(threshold / size), 1.0)
    how = f"{len(spikes)} of {len(residuals)} standardized residuals above {SPIKE_Z:g} robust sds ({threshold:.3f})"
    return [Measurement("spike_rate", rate, how + ", their share · exp(threshold / size)", tables),
            Measurement("spike_size", size, how + ", their mean excess over the threshold (nats)", tables)]


@dataclass(frozen=True)
class Line:
    """One setup's per-point optima along one axis against their weighted line."""

    table: str
    setup: str
    bowl: Optional[str]
    axis: str
    points: int
    chi2: float
    excess: float
    """Σ residual² − its expectation from the optima's own errors."""
    weight: float
    """Its expectation per unit of between-point variance."""

    @property
    def dof(self) -> int:
        return self.points - 2

    @property
    def tau2(self) -> float:
        """This line's own between-point variance estimate (may be negative)."""
        return self.excess / self.weight


def line_of(table: str, setup: str, bowl: Optional[str], axis: str, entry: AxisFit) -> Optional[Line]:
    """The lack of fit of a summary entry's measured optima (with se) about the weighted line the analysis fits,
    or None with fewer than three. With y = line + δ + ε, δ ~ N(0, τ²), ε ~ N(0, se²) and r = M y for
    M = I − X (XᵀWX)⁻¹ XᵀW: E[rᵀr] = τ² tr(MMᵀ) + tr(M S Mᵀ), S = diag(se²)."""
    points = [(k, o) for k, o in entry.measured().items() if o.se]
    if len(points) < 3:
        return None
    x = np.log2([k for k, _ in points])
    y = np.array([o.x_star for _, o in points], dtype=float)
    se2 = np.array([o.se for _, o in points], dtype=float) ** 2
    design = np.column_stack([np.ones_like(x), x])
    w = np.diag(1.0 / se2)
    m = np.eye(len(x)) - design @ np.linalg.inv(design.T @ w @ design) @ design.T @ w
    r = m @ y
    return Line(table, setup, bowl, axis, len(points), float((r**2 / se2).sum()),
                float(r @ r - np.trace(m @ np.diag(se2) @ m.T)), float(np.trace(m @ m.T)))


def lines(table: Table) -> list[Line]:
    """Every setup's lines (width, depth, horizon) with three or more measured optima, from the analysis's
    summary of the table."""
    summary = summarize(table.trials, {LR_KEY: dict(table.settings)})
    out = []
    for setup, info in summary.setups().items():
        for axis in swept_axes(table.trials):
            kind = bowl_kind(table.trials[table.trials["setup"] == setup])
            line = line_of(table.name, setup, kind, axis.name, info.judged(axis.name))
            if line is not None:
                out.append(line)
    return out


def pooled_departure(all_lines: Sequence[Line]) -> tuple[float, float, int]:
    """(τ², Σ χ², Σ dof) over ``all_lines``: τ² = Σ excess / Σ weight, the moment estimator of the
    between-point variance (DerSimonian and Laird, "Meta-analysis in clinical trials", 1986)."""
    weight = sum(line.weight for line in all_lines)
    tau2 = sum(line.excess for line in all_lines) / weight if weight else 0.0
    return tau2, sum(line.chi2 for line in all_lines), sum(line.dof for line in all_lines)


def departure_measurements(all_lines: Sequence[Line]) -> list[Measurement]:
    """τ, the sd of each point's optimum off its line, pooled over the μP + Muon lines (``departure``) and over the
    AdamW lines (``flat_departure``), clipped at 0; each resolved when its lines' pooled χ² exceeds its 95 % point.
    The bowls are not pooled together: their lines' own τ² differ by two orders of magnitude."""
    out = []
    for name, bowl, label in (("departure", MUON, "μP + Muon"), ("flat_departure", ADAMW, "AdamW")):
        mine = [line for line in all_lines if line.bowl == bowl]
        tau2, chi2, dof = pooled_departure(mine)
        resolved = tau2 > 0 and dof > 0 and chi2 > chi2_quantile(0.95, dof)
        how = (f"between-point variance of the optima about their weighted lines beyond their own se², pooled "
               f"over the {len(mine)} {label} lines with ≥ 3 optima; χ² {chi2:.1f} on {dof} dof against "
               f"χ²₀.₉₅ = {chi2_quantile(0.95, max(dof, 1)):.1f}" + ("" if resolved else ": not resolved"))
        out.append(Measurement(name, math.sqrt(max(tau2, 0.0)), how, table_names(mine), resolved))
    tau2, chi2, dof = pooled_departure(all_lines)
    out[0] = replace(out[0], how=out[0].how + f" (all {len(all_lines)} lines pooled: τ = "
                     f"{math.sqrt(max(tau2, 0.0)):.2f}, χ² {chi2:.1f} on {dof} dof)")
    return out


@dataclass(frozen=True)
class Calibration:
    """Every calibrated quantity, with the per-point bowls and the optima's lines they came from."""

    measurements: list[Measurement]
    shapes: pd.DataFrame
    lines: list[Line]


def measure(tables: Sequence[Table], seed: int = 0) -> Calibration:
    """Every calibrated quantity from the tables (a seed study among them for the seed quantities); ``seed``
    seeds the simulated estimator scatter, so the result is deterministic."""
    all_curves = mark_copies([c for t in tables for c in curves(t)])
    all_lines = [line for t in tables for line in lines(t)]
    study = next((t for t in tables if seed_study(t) is not None), None)
    measurements = (shape_measurements(all_curves, {t.name: t for t in tables}) + noise_measurements(all_curves)
                    + seed_measurements(study, all_curves, seed) + departure_measurements(all_lines))
    return Calibration(measurements, point_shapes(all_curves), all_lines)


def calibrated(measurements: Sequence[Measurement]) -> tuple[dict[str, float], float]:
    """(``CALIBRATED``, ``FLAT_CURVATURE``) as the measurements give them, two significant digits; a quantity not
    resolved stays 0."""
    values = {m.name: significant(m.value) if m.resolved else 0.0 for m in measurements}
    return {name: values[name] for name in CALIBRATED}, values["flat_curvature"]


def _apart(committed: float, measured: float) -> bool:
    """Further apart than one unit of the committed value's last significant digit (a measurement on a rounding
    boundary rounds either way on another CPU's BLAS)."""
    return not abs(committed - measured) <= last_digit(committed) * (1 + 1e-9) + 1e-12


def differences(measured: Mapping[str, float], flat: float) -> list[str]:
    """Where the committed ``CALIBRATED`` and ``FLAT_CURVATURE`` differ from the measured values by more than one
    unit of their last significant digit."""
    out = [f"{k}: committed {CALIBRATED.get(k)}, measured {v}" for k, v in measured.items()
           if _apart(CALIBRATED.get(k, math.nan), v)]
    if _apart(FLAT_CURVATURE, flat):
        out.append(f"FLAT_CURVATURE: committed {FLAT_CURVATURE}, measured {flat}")
    return out
