"""A sweep's studies as keys: one per (setup, searched key, point, seed), named so that every machine pointing
at one storage with the same prefix shares them. Plain data from the spec: no Optuna, no torch, so a command can
compose every trial's config (and refuse a bad key) before it imports either."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..schema import TRANSFER_AXES
from .spec import Point, SearchSpec, SweepSpec

if TYPE_CHECKING:
    from .policy import SearchPolicy

__all__ = ["StudyKey", "study_keys", "probe_seeds"]


@dataclass(frozen=True)
class StudyKey:
    setup: str
    search: SearchSpec
    width: int
    seed: int
    probe_seeds: tuple[int, ...] = ()
    """The noise-probe seeds whose trials live in this study (the primary seed's study only)."""
    depth: Optional[int] = None
    """``model.depth`` of the study's trials when the spec sweeps depths; None: the config's depth."""
    steps: Optional[int] = None
    """``train.steps`` of the study's trials when the spec sweeps horizons; None: the config's."""
    batch: Optional[int] = None
    """``train.batch_size`` of the study's trials when the spec sweeps batch sizes; None: the config's."""
    tokens: Optional[int] = None
    """``train.tokens`` of the study's trials when the spec holds a token budget; None: none."""

    @property
    def point(self) -> Point:
        return Point(*(getattr(self, axis.name) for axis in TRANSFER_AXES))

    def tags(self) -> list[str]:
        """``w64``, ``d8``, ``t300``, ``b16``, ``tok262144``: the point's coordinates on the axes it sets."""
        return [f"{axis.tag}{value}" for axis, value in zip(TRANSFER_AXES, self.point) if value is not None]

    def name(self, prefix: str) -> str:
        return ".".join([prefix, self.setup, self.search.column, *self.tags(), f"s{self.seed}"])

    def off_width(self) -> str:
        """``, depth 8, steps 300, batch 16`` for the axes besides width that the study sets ('' when none)."""
        return "".join(f", {axis.name} {value}" for axis, value in zip(TRANSFER_AXES[1:], self.point[1:])
                       if value is not None)

    def where(self) -> str:
        """The point in words, for progress lines: ``w64`` or ``w64 d8 t300``."""
        return " ".join(self.tags())

    def policy(self) -> "SearchPolicy":
        from .policy import policy_for

        return policy_for(self.search, self.seed, self.probe_seeds)


def probe_seeds(spec: SweepSpec, search: SearchSpec) -> tuple[int, ...]:
    """The seeds after the spec's own that re-train the fit window (``search.noise_seeds`` of them)."""
    first = max(spec.seeds) + 1
    return tuple(range(first, first + search.noise_seeds))


def study_keys(spec: SweepSpec) -> list[StudyKey]:
    return [StudyKey(setup.label, search, seed=seed, probe_seeds=probe_seeds(spec, search) if seed == spec.seeds[0]
                     else (), **point._asdict())
            for setup in spec.setups for search in setup.search for point in spec.points() for seed in spec.seeds]
