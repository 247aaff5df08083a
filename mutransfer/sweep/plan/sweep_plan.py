"""A sweep's plan: its studies, the order they train in and what each waits for, built once from the spec
(``SweepPlan.of``) and read by everything that runs, estimates or reports the sweep.

**Studies.** One per (setup, searched key, point, seed); the first seed's study also holds the noise probes. With
``constants``, each setup's coordinate rounds at their width (the first seed, its probes), then each constant at
every re-check width.

**Tiers.** The order a sweep trains in, so that an answer exists early and sharpens: a spec's ``constants`` rounds
first; a width-only sweep of more than ``FIRST_LOOK_WIDTHS`` widths then trains its three smallest widths (every
setup's coarse bracket at each, then the refinements and noise probes), then each larger width in turn; any other
sweep is one tier. Within a tier the points go cheapest first and the setups take turns, so every setup has an
optimum at two widths (a first slope) after the cheapest brackets. The end of each tier but the last is a *look*:
where a sweep that stops when decided (``stop: true``, ``sweep.run.stopping``) may stop a setup. The order changes
only when each trial trains, never which trials a study holds: a sweep's trials and results are the same in any
order, and a sweep begun in another order resumes in this one.

**Edges.** What a study waits for (``Wait``): the learning-rate optimum at its point, the earlier stages of the
rounds, its setup's rounds, or the look before its tier (past which it is skipped once its setup has stopped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Sequence

from ...analysis.sequential import Look, looks
from ...schema import LR_KEY, TRANSFER_AXES
from .keys import StudyKey
from ..spec.sweep_spec import Point, SearchSpec, SweepSpec
from ..spec.axes import FIRST_LOOK_WIDTHS

__all__ = ["SweepPlan", "Tier", "Edge", "Wait", "PHASES", "COARSE", "FINE", "point_cost", "width_tiers",
           "width_information"]

COARSE = "coarse"
"""The bracket: the grid and its extension past an edge (a sampler study: its whole budget)."""
FINE = "fine"
"""Everything else a policy asks for: the refinements and the noise probes."""
PHASES = (COARSE, FINE)


class Wait(Enum):
    """What a study waits for before it trains."""

    LR_OPTIMUM = "the learning-rate optimum at its point"
    """A search at the optimum (``search.at: optimum``) or a constant's re-check: the point's learning-rate studies."""
    EARLIER_STAGES = "the earlier stages of its setup's rounds"
    """A stage of a spec's ``constants`` rounds: the stages before it, whose best values it trains at."""
    ROUNDS = "its setup's rounds"
    """Every other study of a spec with ``constants``: the rounds, whose tuned values it trains with."""
    LOOK = "the look before its tier"
    """A study past the first tier of a sweep that stops when decided: skipped once its setup stopped there."""


@dataclass(frozen=True)
class Edge:
    """``study`` waits for ``on`` (``wait`` says why)."""

    study: StudyKey
    wait: Wait
    on: tuple[StudyKey, ...]


@dataclass(frozen=True)
class Tier:
    """Studies trained together: every setup's studies at ``points``, cheapest point first."""

    keys: tuple[StudyKey, ...]
    points: tuple[Point, ...]

    def widths(self) -> tuple[int, ...]:
        return tuple(sorted({p.width for p in self.points}))


@dataclass(frozen=True)
class SweepPlan:
    """The studies as nodes, the tiers and looks as data, the waits as edges (module docstring)."""

    spec: SweepSpec
    studies: tuple[StudyKey, ...]
    tiers: tuple[Tier, ...]
    information: tuple[float, ...]
    """The planned information of the width slope after each tier, as a fraction of the whole design's."""
    looks: tuple[Look, ...]
    """One per tier when the spec stops when decided (``stop: true``) and has more than one tier; else none."""
    edges: tuple[Edge, ...]

    @classmethod
    def of(cls, spec: SweepSpec) -> SweepPlan:
        studies = _studies(spec)
        tiers = _tiers(spec, studies)
        information = tuple(width_information([tier.widths() for tier in tiers]))
        planned_looks = tuple(looks(information)) if spec.stop and len(tiers) > 1 else ()
        return cls(spec, tuple(studies), tuple(tiers), information, planned_looks,
                   tuple(_edges(spec, studies, tiers, bool(planned_looks))))

    @cached_property
    def _waits(self) -> dict[tuple[StudyKey, Wait], tuple[StudyKey, ...]]:
        return {(edge.study, edge.wait): edge.on for edge in self.edges}

    @cached_property
    def _tier_index(self) -> dict[StudyKey, int]:
        return {key: i for i, tier in enumerate(self.tiers) for key in tier.keys}

    def waits(self, key: StudyKey, wait: Wait) -> bool:
        """Whether ``key`` waits for ``wait`` at all."""
        return (key, wait) in self._waits

    def waits_for(self, key: StudyKey, wait: Wait) -> tuple[StudyKey, ...]:
        """The studies ``key`` waits for, for ``wait`` (none when it does not wait for it)."""
        return self._waits.get((key, wait), ())

    def tier_of(self, key: StudyKey) -> int:
        return self._tier_index[key]

    def stages(self, setup: str) -> tuple[StudyKey, ...]:
        """The stages of ``setup``'s constants rounds, in order (none without ``constants``)."""
        return tuple(k for k in self.tiers[0].keys if k.stage is not None and k.setup == setup) if self.rounds else ()

    @property
    def rounds(self) -> bool:
        """Whether the spec tunes ``constants``: its first tier is their rounds."""
        return self.spec.constants is not None

    def by_point(self) -> dict[tuple[str, Point], list[StudyKey]]:
        """The studies by (setup, point), in plan order (a constants round's point is the tuning width)."""
        out: dict[tuple[str, Point], list[StudyKey]] = {}
        for key in self.studies:
            out.setdefault((key.setup, key.point), []).append(key)
        return out

    def names(self, prefix: str) -> list[str]:
        """Every study's name under ``prefix``."""
        return [key.name(prefix) for key in self.studies]


def probe_seeds(spec: SweepSpec, search: SearchSpec) -> tuple[int, ...]:
    """The seeds after the spec's own that re-train the fit window (``search.noise_seeds`` of them)."""
    first = max(spec.seeds) + 1
    return tuple(range(first, first + search.noise_seeds))


def _studies(spec: SweepSpec) -> list[StudyKey]:
    keys = [StudyKey(setup.label, search, point, seed, probe_seeds(spec, search) if seed == spec.seeds[0] else ())
            for setup in spec.setups for search in setup.search for point in spec.points() for seed in spec.seeds]
    return keys + _constant_studies(spec)


def _constant_studies(spec: SweepSpec) -> list[StudyKey]:
    """Each setup's stages of the coordinate rounds at ``constants.at``, then each constant at every re-check width
    (none without ``constants``)."""
    constants = spec.constants
    if constants is None:
        return []
    seed = spec.seeds[0]
    out = []
    for setup in spec.setups:
        lr = next(s for s in setup.search if s.key == LR_KEY)
        for stage, key in enumerate(constants.stages()):
            search = lr if key == LR_KEY else constants.factor_search(key)
            out.append(StudyKey(setup.label, search, Point(constants.at), seed, probe_seeds(spec, search), stage))
        for key in constants.keys:
            search = constants.factor_search(key)
            out += [StudyKey(setup.label, search, Point(width), seed, probe_seeds(spec, search))
                    for width in constants.recheck]
    return out


def point_cost(point: Point) -> float:
    """A point's relative cost per trial: each axis's value to its ``Axis.cost`` (width² × depth × steps × batch),
    the axes the spec leaves at the config's counting 1."""
    width, *others = zip(TRANSFER_AXES, point)
    return float(width[1]) ** width[0].cost * math.prod(value ** axis.cost for axis, value in others
                                                          if value is not None and axis.cost)


def _tiers(spec: SweepSpec, studies: list[StudyKey]) -> list[Tier]:
    keys = [k for k in studies if k.stage is None]
    rounds = sorted((k for k in studies if k.stage is not None), key=lambda k: (k.stage, k.setup))
    setups = {s.label: i for i, s in enumerate(spec.setups)}
    points = sorted(dict.fromkeys(k.point for k in keys), key=lambda p: (point_cost(p), p))
    groups = [points]
    if spec.swept() == ("width",):
        by_width = {p.width: p for p in points}
        groups = [[by_width[w] for w in widths] for widths in width_tiers(list(by_width))]
    order = {p: i for i, p in enumerate(points)}
    out = [Tier(tuple(rounds), tuple(dict.fromkeys(k.point for k in rounds)))] if rounds else []
    for group in groups:
        chosen = sorted((k for k in keys if k.point in group), key=lambda k: (order[k.point], setups[k.setup]))
        out.append(Tier(tuple(chosen), tuple(group)))
    return out


def _edges(spec: SweepSpec, studies: list[StudyKey], tiers: list[Tier], stops: bool) -> list[Edge]:
    lr_studies: dict[tuple[str, Point], list[StudyKey]] = {}
    for key in studies:
        if key.stage is None and key.search.key == LR_KEY:
            lr_studies.setdefault((key.setup, key.point), []).append(key)
    constants = spec.constants
    out = []
    for key in studies:
        if key.stage is not None:
            earlier = tuple(k for k in studies if k.setup == key.setup and k.stage is not None and k.stage < key.stage)
            out.append(Edge(key, Wait.EARLIER_STAGES, earlier))
            continue
        if constants is not None:
            out.append(Edge(key, Wait.ROUNDS, tuple(k for k in studies if k.setup == key.setup and k.stage is not None)))
        recheck = constants is not None and key.search.key in constants.keys
        if key.search.at == "optimum" or recheck:
            out.append(Edge(key, Wait.LR_OPTIMUM, tuple(lr_studies.get((key.setup, key.point), ()))))
    if stops:
        for index, tier in enumerate(tiers[1:], start=1):
            before = tuple(k for t in tiers[:index] for k in t.keys)
            out += [Edge(key, Wait.LOOK, before) for key in tier.keys]
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
