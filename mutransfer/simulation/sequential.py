"""Stopping when decided, simulated: each simulated sweep is judged at every look of the group-sequential rule
(``analysis.sequential``) on the widths trained by then, and at the end as the fixed design judges it, so the two
designs' verdicts and costs come from the same trials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..analysis.sequential import Look, decided_at, looks
from ..analysis.thresholds import Thresholds
from ..sweep.plan.sweep_plan import width_information, width_tiers
from .simulate import Design, Truth, analyse, simulate_points

__all__ = ["SequentialOutcome", "simulate_sequential", "design_looks", "tier_odds"]


@dataclass(frozen=True)
class SequentialOutcome:
    """One simulated sweep under both designs: the verdicts, the trials each trained, the look that stopped."""

    fixed: str
    sequential: str
    fixed_trials: int
    sequential_trials: int
    stopped_at: Optional[int]
    """The look (0-based) that stopped the sweep early; None when it ran the whole design."""
    trained: dict[int, int]
    """Points trained per width by the fixed design."""
    widths: tuple[int, ...]
    """The widths the sequential design trained."""

    def seconds(self, per_trial: dict[int, float]) -> tuple[float, float]:
        """(fixed, sequential) training seconds at ``per_trial`` seconds per trial of each width."""
        return (sum(n * per_trial[w] for w, n in self.trained.items()),
                sum(self.trained[w] * per_trial[w] for w in self.widths))


def design_looks(design: Design) -> tuple[list[tuple[int, ...]], list[Look]]:
    """The tiers of a simulated design's widths and its planned looks."""
    groups = width_tiers(design.widths)
    return groups, looks(width_information(groups))


def simulate_sequential(truth: Truth, design: Design, rng: np.random.Generator,
                        th: Thresholds = Thresholds()) -> SequentialOutcome:
    """One simulated sweep judged at each look and at the end (the fixed design)."""
    points, truths, trained = simulate_points(truth, design, rng, th)
    groups, planned = design_looks(design)
    full = analyse(points, truths, trained, design, th)
    total = sum(trained.values())
    done: list[int] = []
    for index, (group, look) in enumerate(zip(groups[:-1], planned[:-1])):
        done += list(group)
        part = analyse({w: points[w] for w in done}, {w: truths[w] for w in done}, {w: trained[w] for w in done},
                       design, th)
        decided = decided_at(part.fit, look, th)
        if decided is not None:
            return SequentialOutcome(full.fit.verdict, decided, total, sum(trained[w] for w in done), index,
                                     dict(trained), tuple(done))
    return SequentialOutcome(full.fit.verdict, full.fit.verdict, total, total, None, dict(trained),
                             tuple(design.widths))


def tier_odds(truth: Truth, design: Design, sims: int, seed: int = 0) -> list[float]:
    """How often each tier of ``design``'s widths is trained under the sequential rule, over ``sims`` simulated
    sweeps (the first: always)."""
    groups, _ = design_looks(design)
    rng = np.random.default_rng(seed)
    counts = [0] * len(groups)
    for _ in range(sims):
        outcome = simulate_sequential(truth, design, rng)
        last = len(groups) - 1 if outcome.stopped_at is None else outcome.stopped_at
        for index in range(last + 1):
            counts[index] += 1
    return [count / sims for count in counts]
