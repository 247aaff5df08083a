"""The order a sweep trains in, so that an answer exists early and sharpens: its points in tiers, cheapest first.

A spec's ``constants`` go first (their coordinate rounds at one width, ``spec_constants``). A width-only sweep of
four or more widths then trains its three smallest widths (every setup's coarse bracket at each, then the refinements and noise probes), then each larger width in turn; any other sweep is one tier.
Within a tier the points go cheapest first and the setups take turns, so every setup has an optimum at two widths
(a first slope) after the cheapest brackets. The end of each tier but the last is a *look*: where a sweep that
stops when decided (``stop: true``, ``sweep.stopping``) may stop a setup. The order changes only when each trial
trains, never which trials a study holds: a sweep's trials and results are the same in any order, and a sweep
begun in another order resumes in this one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .keys import StudyKey, study_keys
from .spec import Point, SweepSpec

__all__ = ["Tier", "PHASES", "COARSE", "FINE", "FIRST_LOOK_WIDTHS", "tiers", "point_cost", "information", "width_tiers",
           "width_information"]

COARSE = "coarse"
"""The bracket: the grid and its extension past an edge (a sampler study: its whole budget)."""
FINE = "fine"
"""Everything else a policy asks for: the refinements and the noise probes."""
PHASES = (COARSE, FINE)
FIRST_LOOK_WIDTHS = 3
"""Widths in the first tier: the fewest whose optima leave a line a residual, so a slope's interval rests on more
than two points."""


@dataclass(frozen=True)
class Tier:
    """Studies trained together: every setup's studies at ``points``, cheapest point first."""

    keys: tuple[StudyKey, ...]
    points: tuple[Point, ...]

    def widths(self) -> tuple[int, ...]:
        return tuple(sorted({p.width for p in self.points}))


def point_cost(point: Point) -> float:
    """A point's relative cost per trial: width² (parameters) × depth × steps × batch, the axes the spec leaves at
    the config's counting 1."""
    return float(point.width) ** 2 * math.prod(v for v in (point.depth, point.steps, point.batch) if v is not None)


def tiers(spec: SweepSpec) -> list[Tier]:
    """The sweep's tiers in training order (module docstring)."""
    every = study_keys(spec)
    keys = [k for k in every if k.stage is None]
    chain = sorted((k for k in every if k.stage is not None), key=lambda k: (k.stage, k.setup))
    setups = {s.label: i for i, s in enumerate(spec.setups)}
    points = sorted(dict.fromkeys(k.point for k in keys), key=lambda p: (point_cost(p), p))
    groups = [points]
    if spec.swept() == ("width",):
        by_width = {p.width: p for p in points}
        groups = [[by_width[w] for w in widths] for widths in width_tiers(list(by_width))]
    order = {p: i for i, p in enumerate(points)}
    out = [Tier(tuple(chain), tuple(dict.fromkeys(k.point for k in chain)))] if chain else []
    for group in groups:
        chosen = sorted((k for k in keys if k.point in group), key=lambda k: (order[k.point], setups[k.setup]))
        out.append(Tier(tuple(chosen), tuple(group)))
    return out


def width_tiers(widths: Sequence[int]) -> list[tuple[int, ...]]:
    """The widths of each tier of a width-only sweep: the ``FIRST_LOOK_WIDTHS`` smallest, then one at a time."""
    ordered = sorted(widths)
    if len(ordered) <= FIRST_LOOK_WIDTHS:
        return [tuple(ordered)]
    return [tuple(ordered[:FIRST_LOOK_WIDTHS]), *((w,) for w in ordered[FIRST_LOOK_WIDTHS:])]


def width_information(groups: Sequence[Sequence[int]]) -> list[float]:
    """The planned information of the width slope after each group of widths, as a fraction of the whole design's:
    Σ(log2 w − mean)² over the widths trained so far over that of every width (equal noise at each width)."""
    def spread(widths: list[int]) -> float:
        x = [math.log2(w) for w in widths]
        mean = sum(x) / len(x)
        return sum((v - mean) ** 2 for v in x)

    done: list[int] = []
    fractions = []
    total = spread([w for group in groups for w in group])
    for group in groups:
        done += list(group)
        fractions.append(spread(done) / total if total > 0 else 1.0)
    return fractions


def information(spec: SweepSpec) -> list[float]:
    """``width_information`` over the sweep's tiers."""
    return width_information([tier.widths() for tier in tiers(spec)])
