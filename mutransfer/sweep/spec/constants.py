"""A spec's ``constants`` section: the per-role constants to tune with the learning rate at one width, by
coordinate rounds of 1-D bowls, before the learning-rate stage at every swept width runs with them, and the
widths where each constant that matters is measured again. Plain data in, a validated ``ConstantsSpec`` out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ...errors import UserError, did_you_mean
from ...schema import LR_KEY
from ...table.constants import coordinate_stages, parse_constant
from .search import SearchSpec, spec_number

__all__ = ["ConstantsSpec", "CONSTANTS_KEYS", "parse_constants"]

CONSTANTS_KEYS = ("keys", "at", "rounds", "recheck", "log2_min", "log2_max", "step", "noise_seeds")
FACTOR_RANGE = (-3.0, 3.0)
"""The log2 factors searched by default: an eighth to eight times the shipped value."""


@dataclass(frozen=True)
class ConstantsSpec:
    """The constants searched (keys), the width they are tuned at (``at``), the coordinate rounds, the widths where
    a constant that matters is measured again, and each constant's grid of log2 factors with its noise seeds."""

    keys: tuple[str, ...]
    at: int
    rounds: int = 2
    recheck: tuple[int, ...] = ()
    low: float = FACTOR_RANGE[0]
    high: float = FACTOR_RANGE[1]
    step: float = 1.0
    noise_seeds: int = 2

    def stages(self) -> list[str]:
        """The key each stage of the coordinate rounds searches (``table.constants.coordinate_stages``)."""
        return coordinate_stages(self.keys, self.rounds)

    def factor_search(self, key: str) -> SearchSpec:
        """The 1-D search of one constant's log2 factor: factor 1 an anchor every seed trains."""
        return SearchSpec(key=key, min=self.low, max=self.high, step=self.step, noise_seeds=self.noise_seeds,
                          anchors=(0.0,))


def parse_constants(raw: Any, widths: Sequence[int], searched: Sequence[str]) -> Optional[ConstantsSpec]:
    """The ``constants`` section (None when absent); every refusal is one line."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise UserError("constants must be a mapping", "e.g. constants: {keys: [optimizer.lr_mult.readout], at: 64}")
    unknown = sorted(set(raw) - set(CONSTANTS_KEYS), key=str)
    if unknown:
        raise UserError(f"unknown key 'constants.{unknown[0]}'",
                        f"{did_you_mean(str(unknown[0]), CONSTANTS_KEYS)}use {', '.join(CONSTANTS_KEYS)}")
    if LR_KEY not in searched:
        raise UserError("constants are tuned with the learning rate, and this spec does not search it",
                        f"add {{key: {LR_KEY}}} to search")
    keys = raw.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise UserError("constants.keys must be a list of per-role constants",
                        "e.g. keys: [optimizer.lr_mult.readout, optimizer.multiplier.readout]")
    for key in keys:
        parse_constant(key)
    at = raw.get("at", sorted(widths)[len(widths) // 2])
    spec_number("constants.at", at, integer=True, positive=True)
    if at not in widths:
        raise UserError(f"constants.at={at} is not one of the widths {list(widths)}", "tune at a swept width")
    rounds = raw.get("rounds", 2)
    spec_number("constants.rounds", rounds, integer=True)
    if rounds < 1:
        raise UserError(f"constants.rounds={rounds} must be at least 1",
                        "one round searches the LR, then each constant, then the LR again")
    recheck = raw.get("recheck", [w for w in widths if w != at])
    if not isinstance(recheck, list) or any(w not in widths or w == at for w in recheck):
        raise UserError(f"constants.recheck={recheck!r} must list swept widths other than constants.at={at}",
                        f"choose from {[w for w in widths if w != at]}")
    low, high = (raw.get(name, default) for name, default in (("log2_min", FACTOR_RANGE[0]),
                                                               ("log2_max", FACTOR_RANGE[1])))
    step = raw.get("step", 1.0)
    for name, value in (("log2_min", low), ("log2_max", high), ("step", step)):
        spec_number(f"constants.{name}", value, positive=name == "step")
    if not low < 0 < high:
        raise UserError(f"constants.log2_min={low:g}, log2_max={high:g} must hold factor 1 (log2 0) inside",
                        "e.g. log2_min: -3, log2_max: 3")
    noise_seeds = raw.get("noise_seeds", 2)
    spec_number("constants.noise_seeds", noise_seeds, integer=True, positive=True)
    return ConstantsSpec(keys=tuple(keys), at=int(at), rounds=int(rounds), recheck=tuple(sorted(recheck)),
                         low=float(low), high=float(high), step=float(step), noise_seeds=int(noise_seeds))
