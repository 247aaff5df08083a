"""Intervals for a table without seeds: one run per (point, LR), as most published and exported sweeps hold.

A single run's bowl cannot show how far its optimum would move under another seed: every LR of the point
shares the seed (its init and, usually, its batches), so the fit's residuals measure only the run-to-run noise
around the curve, not the shift of the whole curve. What does show it is the scatter of the points' optima about
the law: each point's estimate sits off the law by its own departure plus its seed's shift plus the fit's
noise. So, without seeds:

- the law (and a single axis's line) estimates its between-point scatter σ_b from its residuals whatever the
  number of values per axis (pooled with the calibrated prior, as ``analysis.regression`` does), so the slopes
  and the range at a target carry the seeds' shift inside σ_b;
- each point's interval is its resolution bound widened by σ_b (x* ± √(half² + (1.96 σ_b)²) on each side): the
  seed shift the residuals miss is at most σ_b, so this errs wide;
- ``Noise`` says so in summary.json, and whether the intervals are calibrated: simulation
  (``scripts/import_coverage.py``, docs/import.md) measured ≥ 0.90 coverage of the truth when the law's σ_b rests
  on at least ``MIN_RESIDUAL_DOF`` residual degrees of freedom; with fewer the intervals are marked uncalibrated and
  every verdict stays ``inconclusive``.
"""

from __future__ import annotations

import math
from typing import Optional

from ..words import Verdict
from .result import AxisFit, Judgement, Noise, PointResult, SetupResult
from .stats import Z95

__all__ = ["RESIDUALS", "SEEDS", "MIN_RESIDUAL_DOF", "UNCALIBRATED", "no_seed_noise", "widen_point", "seeded_noise",
           "residual_dof"]

SEEDS = "seeds"
RESIDUALS = "residuals"
MIN_RESIDUAL_DOF = 40
"""The law's residual degrees of freedom (points − coefficients) from which a table without seeds has calibrated
intervals: in simulation every design from 44 on covered ≥ 0.91 under every truth tried, while designs with 20 and
23 fell to 0.88–0.90 when the points scatter off the law twice as much as calibrated, and those with 2 and 6 to
0.75–0.86 on AdamW's flat bowls (docs/import.md, computed by scripts/import_coverage.py)."""


def widen_point(point: PointResult, between_sd: float) -> None:
    """``point``'s interval widened by the between-point scatter (each side: √(half² + (1.96 σ_b)²))."""
    if point.x_star is None or point.ci is None:
        return
    low, high = point.ci
    extra = (Z95 * between_sd) ** 2
    below = math.sqrt((point.x_star - low) ** 2 + extra) if math.isfinite(low) else math.inf
    above = math.sqrt((high - point.x_star) ** 2 + extra) if math.isfinite(high) else math.inf
    point.ci = (point.x_star - below, point.x_star + above)
    point.se = math.sqrt((point.se or 0.0) ** 2 + between_sd**2)


def residual_dof(setup: SetupResult) -> int:
    """The residual degrees of freedom the setup's σ_b rests on: its law's points less its coefficients, or its
    line's measured points less 2."""
    law = setup.law
    if law is not None:
        return law.points_used - (len(law.axes) + 1)
    line = setup.line or next(iter(setup.axes.values()), None)
    return max(len(line.used) - 2, 0) if line is not None else 0


def _scatter(setup: SetupResult) -> float:
    law = setup.law
    line = setup.line or next(iter(setup.axes.values()), None)
    return float((law.between_sd if law is not None else line.between_sd if line is not None else 0.0) or 0.0)


UNCALIBRATED = Judgement(
    Verdict.INCONCLUSIVE, "one run per point and LR (no seeds) and too few points to measure the seeds' shift from the "
    f"law's residuals (fewer than {MIN_RESIDUAL_DOF} residual degrees of freedom): the intervals are uncalibrated",
    "import a table with a seed column, or with more points (sizes, budgets, batches)")
"""The verdict every fit of an uncalibrated table without seeds gets."""


def _undecided(fit: AxisFit) -> None:
    if fit.verdict != Verdict.INCONCLUSIVE:
        fit.verdict, fit.reason, fit.fix = UNCALIBRATED.verdict, UNCALIBRATED.reason, UNCALIBRATED.fix


def no_seed_noise(setups: dict[str, SetupResult]) -> Noise:
    """Widen every point's interval of a table without seeds by its setup's between-point scatter; the
    ``Noise`` record, and ``inconclusive`` for every verdict where the intervals are uncalibrated."""
    dofs = []
    for setup in setups.values():
        between = _scatter(setup)
        for fit in setup.axes.values():
            for point in fit.points.values():
                widen_point(point, between)
        for law_point in (setup.law.points if setup.law is not None else []):
            widen_point(law_point.result, between)
        dof = residual_dof(setup)
        dofs.append(dof)
        if dof < MIN_RESIDUAL_DOF:
            for fit in setup.axes.values():
                _undecided(fit)
            if setup.law is not None:
                setup.law.verdicts = {name: UNCALIBRATED if judged.verdict != Verdict.INCONCLUSIVE else judged
                                      for name, judged in setup.law.verdicts.items()}
            _undecided_setup(setup)
    fewest: Optional[int] = min(dofs) if dofs else None
    calibrated = fewest is not None and fewest >= MIN_RESIDUAL_DOF
    return Noise(RESIDUALS, calibrated,
                 f"no seeds: each point's bowl-fit residuals plus the between-point scatter about the law (σ_b from "
                 f"{fewest} residual degrees of freedom; calibrated from {MIN_RESIDUAL_DOF})")


def _undecided_setup(setup: SetupResult) -> None:
    if setup.verdict != Verdict.INCONCLUSIVE:
        setup.verdict, setup.reason, setup.fix = UNCALIBRATED.verdict, UNCALIBRATED.reason, UNCALIBRATED.fix


def seeded_noise() -> Noise:
    """The record of a table whose seeds were told apart: the seeds' own spread, calibrated as a sweep's is."""
    return Noise(SEEDS, True, "the spread of the seeds' own optima at each point, pooled over the points")
