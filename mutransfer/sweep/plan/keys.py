"""A sweep's study as a key: one per (setup, searched key, point, seed), named so that every machine pointing at
one storage with the same prefix shares it. Plain data: no Optuna, no torch, so a command can compose every
trial's config (and refuse a bad key) before it imports either. ``sweep.plan.sweep_plan`` lists a spec's keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ...schema import TRANSFER_AXES
from ..spec.sweep_spec import Point, SearchSpec

if TYPE_CHECKING:
    from .policy import SearchPolicy

__all__ = ["StudyKey"]


@dataclass(frozen=True)
class StudyKey:
    setup: str
    search: SearchSpec
    point: Point
    """Where the study's trials train: its width, and the other axes the spec sets (None: the config's)."""
    seed: int
    probe_seeds: tuple[int, ...] = ()
    """The noise-probe seeds whose trials live in this study (the primary seed's study only)."""
    stage: Optional[int] = None
    """The study's place in the coordinate rounds of a spec's ``constants`` (at their width); None: not one."""

    @property
    def width(self) -> int:
        return self.point.width

    def tags(self) -> list[str]:
        """``w64``, ``d8``, ``t300``, ``b16``, ``tok262144``: the point's coordinates on the axes it sets."""
        return [f"{axis.tag}{value}" for axis, value in zip(TRANSFER_AXES, self.point) if value is not None]

    def name(self, prefix: str) -> str:
        stage = [f"c{self.stage}"] if self.stage is not None else []
        return ".".join([prefix, self.setup, self.search.column, *self.tags(), *stage, f"s{self.seed}"])

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
