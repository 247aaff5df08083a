"""Horizons from one trunk: under ``schedule: wsd`` every horizon trains the same steps up to its decay, so one
run per (learning rate, seed) — the trunk — serves them all, each horizon's decay branched off it.

A trunk is checkpointed on disk after each horizon's ``cooldown_start`` (its branch points); a run at horizon S
starts from the latest checkpoint at or before its own branch point, trains on (checkpointing the branch points
it passes) and then decays. The checkpoint holds everything the next step reads — weights, optimizer state, the
batch sampler's generator and torch's RNG — and the run's record so far, so a branch is the from-scratch run
of its horizon step for step (``tests/train/test_trunk.py`` holds them equal). Checkpoints are written atomically, so
a killed run resumes from the last one written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from ..files import atomic_path
from ..fingerprint import fingerprint_of
from ..optim.schedule import cooldown_start, warmup_steps
from ..schema import Config, TrainConfig
from ..table.record import config_data

__all__ = ["Trunk", "trunk_for", "trunk_problem", "branch_points", "trained_steps", "TRUNK_DIR"]

TRUNK_DIR = "trunks"
"""The run directory's folder of trunk checkpoints, one folder per trunk."""


def branch_points(cfg: TrainConfig, horizons: Sequence[int]) -> tuple[int, ...]:
    """The step after which each horizon's decay starts, for the horizons ``horizons`` (``cfg``'s other keys)."""
    return tuple(sorted({cooldown_start(replace(cfg, steps=int(s), tokens=None)) for s in horizons}))


def trained_steps(cfg: TrainConfig, horizons: Sequence[int]) -> int:
    """The steps a run at ``cfg.steps`` trains itself when the horizons run shortest first: from the branch point
    of the next shorter horizon (whose run checkpointed it) to its end; all of them at the shortest horizon."""
    shorter = [b for s, b in zip(sorted(horizons), branch_points(cfg, sorted(horizons))) if s < cfg.steps]
    return cfg.steps - max(shorter, default=0)


def trunk_problem(cfg: TrainConfig, horizons: Sequence[int]) -> Optional[tuple[str, str]]:
    """Why horizons ``horizons`` cannot share a trunk under ``cfg`` ((message, fix)), or None when they can."""
    if cfg.schedule != "wsd":
        return None
    if cfg.warmup_steps is None and cfg.warmup_frac > 0:
        return (f"train.schedule=wsd shares one trunk between the horizons, but the warm-up is "
                f"train.warmup_frac={cfg.warmup_frac:g} of each horizon's steps",
                "set train.warmup_steps=N (the same warm-up for every horizon), or trunks=false")
    first = min(branch_points(cfg, horizons))
    if warmup_steps(cfg) > first:
        return (f"train.warmup_steps={warmup_steps(cfg)} runs past the shortest horizon's decay (step {first})",
                f"set train.warmup_steps to at most {first}")
    return None


def _key(cfg: Config) -> str:
    """The trunk's name: the config without its horizon."""
    data = config_data(cfg)
    data["train"].pop("steps")
    data["train"].pop("tokens", None)
    return fingerprint_of(data)


@dataclass(frozen=True)
class Trunk:
    """One trunk's checkpoints: its folder and the steps it is checkpointed after."""

    directory: Path
    branches: tuple[int, ...]

    def path(self, step: int) -> Path:
        return self.directory / f"step{step:09d}.pt"

    def latest(self, until: int) -> Optional[tuple[int, Path]]:
        """The last checkpoint written at or before step ``until``: (its step, its path), or None."""
        for step in sorted((b for b in self.branches if b <= until), reverse=True):
            if self.path(step).is_file():
                return step, self.path(step)
        return None

    def save(self, step: int, state: dict[str, Any]) -> None:
        with atomic_path(self.path(step)) as tmp:
            torch.save(state, tmp)

    def load(self, path: Path) -> dict[str, Any]:
        return torch.load(path, map_location="cpu", weights_only=False)


def trunk_for(cfg: Config, root: Path, horizons: Sequence[int]) -> Trunk:
    """The trunk ``cfg`` belongs to among the horizons ``horizons``, its checkpoints under ``root``."""
    return Trunk(root / _key(cfg), branch_points(cfg.train, horizons))
