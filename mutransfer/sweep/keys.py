"""A sweep's studies as keys: one per (setup, searched key, point, seed), named so that every machine pointing
at one storage with the same prefix shares them. Plain data from the spec: no Optuna, no torch, so a command can
compose every trial's config (and refuse a bad key) before it imports either."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..schema import LR_KEY, TRANSFER_AXES
from .spec import Point, SearchSpec, SweepSpec

if TYPE_CHECKING:
    from .policy import SearchPolicy

__all__ = ["StudyKey", "study_keys", "probe_seeds", "constant_keys"]


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
    stage: Optional[int] = None
    """The study's place in the coordinate rounds of a spec's ``constants`` (at their width); None: not one."""

    @property
    def point(self) -> Point:
        return Point(*(getattr(self, axis.name) for axis in TRANSFER_AXES))

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


def probe_seeds(spec: SweepSpec, search: SearchSpec) -> tuple[int, ...]:
    """The seeds after the spec's own that re-train the fit window (``search.noise_seeds`` of them)."""
    first = max(spec.seeds) + 1
    return tuple(range(first, first + search.noise_seeds))


def study_keys(spec: SweepSpec) -> list[StudyKey]:
    """Every study: each setup's searches at every point and seed; with ``constants``, each setup's coordinate
    rounds at their width (the first seed, its probes) and each constant measured again at the re-check widths."""
    keys = [StudyKey(setup.label, search, seed=seed, probe_seeds=probe_seeds(spec, search) if seed == spec.seeds[0]
                     else (), **point._asdict())
            for setup in spec.setups for search in setup.search for point in spec.points() for seed in spec.seeds]
    return keys + constant_keys(spec)


def constant_keys(spec: SweepSpec) -> list[StudyKey]:
    """The studies of a spec's ``constants``: each setup's stages of the coordinate rounds at ``constants.at``, then
    each constant at every re-check width (empty without ``constants``)."""
    constants = spec.constants
    if constants is None:
        return []
    seed = spec.seeds[0]
    out = []
    for setup in spec.setups:
        lr = next(s for s in setup.search if s.key == LR_KEY)
        for stage, key in enumerate(constants.stages()):
            search = lr if key == LR_KEY else constants.factor_search(key)
            out.append(StudyKey(setup.label, search, width=constants.at, seed=seed,
                                probe_seeds=probe_seeds(spec, search), stage=stage))
        for key in constants.keys:
            search = constants.factor_search(key)
            out += [StudyKey(setup.label, search, width=width, seed=seed, probe_seeds=probe_seeds(spec, search))
                    for width in constants.recheck]
    return out
