"""What a sweep searches: one hyperparameter's grid (``SearchSpec``), its spec mapping parsed and validated, and
the rule that a grid holds enough points to place an optimum."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from ...errors import UserError, check_keys, did_you_mean
from ...schema import LR_KEY, searched_column
from ...table.decay import DECAY_OFF_VALUES

__all__ = ["SearchSpec", "parse_search", "base_searches", "search_name", "check_grid", "spec_number", "SAMPLERS",
           "SCALES", "PRUNERS", "SEARCH_KEYS", "STAGES", "STAGED_SAMPLERS", "OFF_X", "MIN_GRID_POINTS",
           "MAX_GRID_POINTS"]

SAMPLERS = ("grid", "tpe", "gp", "refine")
SCALES = ("log2", "linear")
PRUNERS = ("none", "median", "halving")
SEARCH_KEYS = ("key", "scale", "log2_min", "log2_max", "min", "max", "step", "sampler", "n_trials", "pruner", "extend",
               "extend_max", "noise_seeds", "at")
STAGES = ("base", "optimum")
"""Where an extra key is searched (``search.at``): at the config's learning rate, or at each point's measured LR
optimum (the learning-rate studies at that point finish first)."""
STAGED_SAMPLERS = ("grid", "refine")
"""Samplers that can wait for the learning-rate stage: the queued ones."""
OFF_X = -1000.0
"""The searched value that stands for weight decay off (λ = 0, no timescale): trained with every seed as an anchor
of a decay search whose grid does not hold it, the reference a decay must beat."""
MIN_GRID_POINTS = 3
"""Grid points a search needs (the same at every width): the best one and a neighbour either side of it."""
MAX_GRID_POINTS = 1000
"""More grid points than this at one point is a mistake (a step written in the wrong units), not a sweep."""


@dataclass(frozen=True)
class SearchSpec:
    """One searched hyperparameter. ``scale='log2'``: min/max/step are in log2 units of the value."""

    key: str = LR_KEY
    scale: str = "log2"
    min: float = -10.0
    max: float = -2.0
    step: float = 1.0
    sampler: str = "grid"
    n_trials: Optional[int] = None
    pruner: str = "none"
    extend: bool = True
    """Queue points one step past an edge of the grid while a width's best point sits on it."""
    extend_max: float = 4.0
    """How far (in search units: octaves for log2) the grid may grow past each end."""
    noise_seeds: int = 2
    """Extra seeds that re-train each width's fit window, so the seed-to-seed spread of the optimum is measured."""
    anchors: tuple[float, ...] = ()
    """Points trained with every seed (the study's and the noise probes') besides the grid: ``verify``'s
    predicted η*, a decay search's ``OFF_X`` (not a YAML key). A search with anchors places its optimum from
    points on the grid only."""
    at: str = "base"
    """``STAGES``: searched at the config's learning rate, or at each point's measured LR optimum."""

    @property
    def column(self) -> str:
        return searched_column(self.key)

    def grid(self, step: Optional[float] = None) -> list[float]:
        """Grid points (in search units: log2 for a log2 scale) from min to max inclusive."""
        step = step or self.step
        count = int(math.floor((self.max - self.min) / step + 1e-9)) + 1
        return [round(self.min + i * step, 10) for i in range(count)]

    def value(self, x: float) -> float:
        """The config value of searched value ``x`` (``OFF_X``: the decay key's value with decay off)."""
        if x == OFF_X and self.key in DECAY_OFF_VALUES:
            return DECAY_OFF_VALUES[self.key]
        return 2.0**x if self.scale == "log2" else x

    def is_off(self, x: float) -> bool:
        """Whether ``x`` trains with weight decay off (``OFF_X``, or a decay key's off value on a linear grid)."""
        return self.key in DECAY_OFF_VALUES and self.value(x) == DECAY_OFF_VALUES[self.key]

    def budget(self) -> int:
        return self.n_trials if self.n_trials is not None else len(self.grid())

    def on_grid(self, x: float) -> bool:
        """Whether ``x`` lies on the grid's lattice (min + k·step, extensions included)."""
        k = (x - self.min) / self.step
        return abs(k - round(k)) < 1e-6


def spec_number(where: str, value: Any, integer: bool = False, positive: bool = False) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not math.isfinite(value):
        raise UserError(f"{where}={value!r} must be a finite {'integer' if integer else 'number'}", "fix the spec")
    if positive and value <= 0:
        raise UserError(f"{where}={value} must be > 0", "fix the spec")
    return value


def parse_search(where: str, raw: Any, base: Optional[SearchSpec] = None) -> SearchSpec:
    """A spec's ``search`` mapping (over ``base``, a setup's narrowing of the spec's) → a validated ``SearchSpec``."""
    raw = check_keys(raw, where, SEARCH_KEYS, "search: {log2_min: -10, log2_max: -4, step: 1}")
    values = dataclasses.asdict(base) if base else {}
    for src, dst in (("log2_min", "min"), ("log2_max", "max")):
        if src in raw:
            values[dst] = raw[src]
            values["scale"] = "log2"
    values.update({k: v for k, v in raw.items() if k not in ("log2_min", "log2_max")})
    spec = SearchSpec(**values)
    if not isinstance(spec.key, str) or "." not in spec.key:
        raise UserError(f"{where}.key={spec.key!r} must be a dotted config key", "e.g. optimizer.lr")
    if spec.scale not in SCALES:
        raise UserError(f"unknown {where}.scale '{spec.scale}'", f"{did_you_mean(str(spec.scale), SCALES)}choose one "
                        f"of: {', '.join(SCALES)}")
    if spec.sampler not in SAMPLERS:
        raise UserError(f"unknown sampler '{spec.sampler}'",
                        f"{did_you_mean(str(spec.sampler), SAMPLERS)}choose one of: {', '.join(SAMPLERS)}")
    if spec.pruner not in PRUNERS:
        raise UserError(f"unknown pruner '{spec.pruner}'",
                        f"{did_you_mean(str(spec.pruner), PRUNERS)}choose one of: {', '.join(PRUNERS)}")
    lo, hi = spec_number(f"{where}.min", spec.min), spec_number(f"{where}.max", spec.max)
    spec_number(f"{where}.step", spec.step, positive=True)
    if lo > hi:
        raise UserError(f"{where}: min {lo} > max {hi}", "swap them or widen the range")
    if spec.n_trials is not None:
        spec_number(f"{where}.n_trials", spec.n_trials, integer=True, positive=True)
    if not isinstance(spec.extend, bool):
        raise UserError(f"{where}.extend={spec.extend!r} must be true or false", "e.g. search.extend=false")
    spec_number(f"{where}.extend_max", spec.extend_max, positive=True)
    if spec.extend and spec.extend_max < spec.step - 1e-9:
        raise UserError(f"{where}.extend_max={spec.extend_max} is less than one grid step ({spec.step})",
                        f"give at least {spec.step:g}, or search.extend=false")
    spec_number(f"{where}.noise_seeds", spec.noise_seeds, integer=True)
    if spec.noise_seeds < 0:
        raise UserError(f"{where}.noise_seeds={spec.noise_seeds} must be >= 0", "e.g. search.noise_seeds=2 (0: none)")
    if spec.key == LR_KEY and spec.scale != "log2":
        raise UserError(f"{where}: the learning rate is searched in log2", "use log2_min / log2_max")
    _check_stage(where, spec)
    if spec.key in DECAY_OFF_VALUES and not any(spec.is_off(x) for x in (*spec.grid(), *spec.anchors)):
        spec = dataclasses.replace(spec, anchors=(*spec.anchors, OFF_X))
    return spec


def _check_stage(where: str, spec: SearchSpec) -> None:
    if spec.at not in STAGES:
        raise UserError(f"unknown {where}.at '{spec.at}'", f"{did_you_mean(str(spec.at), STAGES)}choose one of: "
                        f"{', '.join(STAGES)}")
    if spec.at == "base":
        return
    if spec.key == LR_KEY:
        raise UserError(f"{where}: at: optimum searches another key at each point's learning-rate optimum; the "
                        "learning rate itself cannot wait for its own optimum", f"remove {where}.at")
    if spec.sampler not in STAGED_SAMPLERS:
        raise UserError(f"{where}: sampler {spec.sampler} cannot run two stages (at: optimum waits for the LR "
                        "studies)", f"use sampler {' or '.join(STAGED_SAMPLERS)} with at: optimum")


def check_grid(where: str, search: SearchSpec) -> None:
    """Refuse a search whose grid has fewer than ``MIN_GRID_POINTS`` points, naming its bounds and the values they
    stand for; a positive log2 bound below 1 (LR values written where exponents belong) gets the exponents. Steps
    are counted before a grid is built (a tiny step makes a huge one)."""
    if search.key == LR_KEY and search.scale == "log2" and (search.min >= 0 or 0 < search.max < 1):
        _refuse_learning_rate_values(where, search)
    steps = (search.max - search.min) / search.step + 1e-9
    if steps >= MAX_GRID_POINTS:
        raise UserError(f"{where}: step {search.step:g} from {search.min:g} to {search.max:g} gives more than "
                        f"{MAX_GRID_POINTS} grid points", "raise the step (log2 scales: 1 is one octave, e.g. step: 1)")
    if steps >= MIN_GRID_POINTS - 1:
        return
    count = len(search.grid())
    low, high = ("log2_min", "log2_max") if search.scale == "log2" else ("min", "max")
    name = "LR" if search.key == LR_KEY else search.key
    values = " … ".join(dict.fromkeys(f"{search.value(x):.3g}" for x in (search.min, search.max)))
    message = (f"{where}: {low}={search.min:g}, {high}={search.max:g} with step {search.step:g} gives {count} grid "
               f"point{'s' if count > 1 else ''} ({name} {values})")
    if search.scale == "log2" and 0 < search.min < 1:
        raise UserError(message, f"log2 bounds are exponents: for {name} {search.min:g} … {search.max:g} write "
                                 f"{low}: {math.log2(search.min):.3g}, {high}: {math.log2(search.max):.3g}")
    example = (f"step: {(search.max - search.min) / (MIN_GRID_POINTS - 1):g}" if search.max > search.min else
               f"{high}: {search.min + (MIN_GRID_POINTS - 1) * search.step:g}")
    raise UserError(message, f"a grid needs at least {MIN_GRID_POINTS} points to place an optimum: widen the bounds "
                             f"or lower the step, e.g. {example}")


def _refuse_learning_rate_values(where: str, search: SearchSpec) -> None:
    """A log2 LR range wholly at or above 0 (LRs ≥ 1), or a bound strictly between 0 and 1, is LR values written
    where exponents belong. Refused with the exponents those values would be, or an example range. (A range that
    only reaches above 0 from below, as SGD's and Muon's may, is allowed.)"""
    message = (f"{where}: log2_min={search.min:g}, log2_max={search.max:g} are log2 of the LR (LRs "
               f"{search.value(search.min):.3g} … {search.value(search.max):.3g})")
    if search.min > 0 and search.max > 0 and min(search.min, search.max) < 1:
        raise UserError(message, f"log2 bounds are exponents: for LR {search.min:g} … {search.max:g} write "
                                 f"log2_min: {math.log2(search.min):.3g}, log2_max: {math.log2(search.max):.3g}")
    raise UserError(message, "give exponents, e.g. log2_min: -10, log2_max: -4 (LR 2^-10 … 2^-4)")


def search_name(index: int, count: int) -> str:
    """How a message names one of the spec's searches: ``search``, or ``search[1]`` in a list."""
    return f"search[{index}]" if count > 1 else "search"


def base_searches(raw: Any) -> tuple[SearchSpec, ...]:
    """The spec's ``search``: one mapping or a list of them, each key searched once."""
    searches = raw if isinstance(raw, list) else [raw]
    base = tuple(parse_search(search_name(i, len(searches)), s) for i, s in enumerate(searches))
    if len({s.key for s in base}) != len(base):
        raise UserError("search lists a key twice", "search each key once")
    return base
