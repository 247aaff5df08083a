"""Tables of finished runs simulated from a known law, shaped like the ones labs publish and export: one run per
(point, LR) with no seeds, a dense LR grid √2 apart around each point's optimum (not centred on it), several
model sizes × token budgets × batch sizes (``TableDesign``: a factorial grid; ``RealDesign``: the layout published
sweeps have, each size with its own budgets, each cell its own batches, each size its own LR grid), a few percent of runs diverged (an infinite loss, which a CSV writes as `inf`, or an exploding one), and width
and depth chosen per model size. Each run's loss comes from the real-curve simulator (``simulate.SimulatedPoint``:
asymmetric bowls whose shape changes along the axes, each point's true optimum off the law, one seed's shift
shared by every LR of a point). The truth travels with the table, for coverage counts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from ..words import TrialStatus
from .simulate import SharedSeeds, SimulatedPoint, Truth

__all__ = ["TableDesign", "RealDesign", "SimulatedTable", "simulate_table", "simulate_real_table", "LAW_AXES"]

LAW_AXES = ("params", "tokens", "batch")
"""The simulated table's axes, in its law's order; width and depth are columns that move with params."""
BRACKET_MARGIN = 3
"""LR steps a real design's grid holds beyond the spread of its size's true optima (as an experimenter widens a
grid to bracket every cell): with the grid's off-centre shift, a few points still land at its edge."""


@dataclass(frozen=True)
class TableDesign:
    """A simulated table's shape and its true law log2 η* = intercept + Σ slope · log2(value / base)."""

    params: tuple[float, ...] = (2e7, 6e7, 2e8, 6e8)
    tokens: tuple[float, ...] = (1e9, 4e9, 1.6e10)
    batches: tuple[int, ...] = (64, 128, 256, 512)
    lrs: int = 10
    lr_step: float = 0.5
    diverged: float = 0.03
    """The share of runs that diverge besides those far above the optimum (chosen among the upper half)."""
    slopes: Mapping[str, float] = field(default_factory=lambda: {"params": -0.5, "tokens": -0.2, "batch": 0.4})
    intercept: float = -9.0
    seeds: int = 1
    """Runs per (point, LR), each its own seed (1: a table without seeds)."""

    def base(self) -> dict[str, float]:
        return {"params": self.params[0], "tokens": self.tokens[0], "batch": float(self.batches[0])}

    def law(self, at: Mapping[str, float]) -> float:
        """The law's log2 η* at ``at``."""
        base = self.base()
        return self.intercept + sum(self.slopes.get(a, 0.0) * math.log2(at[a] / base[a]) for a in LAW_AXES)


@dataclass
class SimulatedTable:
    table: pd.DataFrame
    truth: dict[tuple[float, float, int], float]
    """Each point's true optimum (log2 η*), keyed by (params, tokens, batch)."""


def _size_shape(params: float) -> tuple[int, int]:
    """Width and depth chosen per model size, as families of models choose them (depth grows with width)."""
    width = int(64 * round(math.sqrt(params / 12 / 8) / 64 + 0.5))
    return width, max(2, int(round(params / (12 * width * width))))


def simulate_table(truth: Truth, design: TableDesign, rng: np.random.Generator) -> SimulatedTable:
    """One table: every (params, tokens, batch) point trained at ``design.lrs`` LRs √2 apart."""
    rows: list[dict[str, object]] = []
    truths: dict[tuple[float, float, int], float] = {}
    seeds = SharedSeeds(rng)
    base = design.base()
    for params in design.params:
        width, depth = _size_shape(params)
        for tokens in design.tokens:
            for batch in design.batches:
                at = {"params": params, "tokens": tokens, "batch": float(batch)}
                x_true = truth.departed(design.law(at), rng)
                doublings = sum(math.log2(at[a] / base[a]) for a in LAW_AXES) / len(LAW_AXES)
                point = SimulatedPoint(truth, x_true, rng, doublings, seeds)
                first = x_true - design.lr_step * (design.lrs - 1) * rng.uniform(0.3, 0.7)
                for seed in range(design.seeds):
                    for i in range(design.lrs):
                        point.train(first + i * design.lr_step, seed)
                truths[(params, tokens, batch)] = x_true
                for x, seed, loss, status in point.points:
                    rows.append({"n_params": params, "width": width, "depth": depth, "tokens": tokens, "bs": batch,
                                 "lr": 2.0**x, "seed": seed,
                                 "val/loss": loss if status == TrialStatus.OK else math.inf})
    table = pd.DataFrame(rows)
    upper = table.index[table["lr"] > table.groupby(["n_params", "tokens", "bs"])["lr"].transform("median")]
    blown = rng.choice(upper, size=int(round(design.diverged * len(table))), replace=False)
    table.loc[blown, "val/loss"] = np.where(rng.random(len(blown)) < 0.5, math.inf, 1e3)
    return SimulatedTable(table, truths)


@dataclass(frozen=True)
class RealDesign:
    """A table laid out as published sweeps are (not factorial): each model size trains its own token budgets (a few
    tokens-per-parameter ratios, so the budgets grow with the size and the smallest belongs to the smallest size
    alone), each (size, budget) cell its own run of batch sizes (moving up the ladder with the budget), and each size
    one LR grid √2 apart that brackets that size's optimum, shifted off its centre, so a few points of the size's
    other cells find their optimum at the grid's edge (censored). The true law is ``TableDesign``'s."""

    params: tuple[float, ...] = (2e7, 6e7, 2e8, 6e8, 2e9)
    ratios: tuple[float, ...] = (5.0, 10.0, 20.0, 40.0)
    """Tokens per parameter; each size keeps 3 or 4 of them (one dropped at random, or none)."""
    ladder: tuple[int, ...] = tuple(2**k for k in range(5, 14))
    batches_per_cell: tuple[int, int] = (3, 5)
    """How many neighbouring rungs of ``ladder`` each cell trains (inclusive range)."""
    lrs: tuple[int, int] = (6, 10)
    """How many LRs each size's grid holds (inclusive range; real tables: 4–12)."""
    lr_step: float = 0.5
    diverged: float = 0.06
    slopes: Mapping[str, float] = field(default_factory=lambda: {"params": -0.6, "tokens": 0.0, "batch": 0.3})
    intercept: float = -9.0

    def base(self) -> dict[str, float]:
        return {"params": self.params[0], "tokens": self.params[0] * self.ratios[0], "batch": float(self.ladder[0])}

    def law(self, at: Mapping[str, float]) -> float:
        """The law's log2 η* at ``at``."""
        base = self.base()
        return self.intercept + sum(self.slopes.get(a, 0.0) * math.log2(at[a] / base[a]) for a in LAW_AXES)

    def cells(self, rng: np.random.Generator) -> list[tuple[float, float, tuple[int, ...]]]:
        """Every (params, tokens, batches) cell of one table: the smallest size keeps the smallest ratio."""
        out = []
        for index, params in enumerate(self.params):
            ratios = list(self.ratios)
            if len(ratios) > 3 and rng.random() < 0.7:
                ratios.pop(int(rng.integers(0 if index else 1, len(ratios))))
            for r, ratio in enumerate(ratios):
                count = int(rng.integers(self.batches_per_cell[0], self.batches_per_cell[1] + 1))
                first = min(index + r + int(rng.integers(0, 2)), len(self.ladder) - count)
                out.append((params, params * ratio, tuple(self.ladder[first:first + count])))
        return out


def simulate_real_table(truth: Truth, design: RealDesign, rng: np.random.Generator) -> SimulatedTable:
    """One table of ``design``'s layout, with ``simulate_table``'s columns and runs."""
    rows: list[dict[str, object]] = []
    truths: dict[tuple[float, float, int], float] = {}
    seeds = SharedSeeds(rng)
    base = design.base()
    cells = design.cells(rng)
    for params in design.params:
        width, depth = _size_shape(params)
        own = [c for c in cells if c[0] == params]
        optima = [design.law({"params": params, "tokens": t, "batch": float(b)}) for _, t, batches in own
                  for b in batches]
        centre = float(np.mean(optima))
        spans = int(math.ceil((max(optima) - min(optima)) / design.lr_step)) + BRACKET_MARGIN
        count = min(design.lrs[1], max(spans, int(rng.integers(design.lrs[0], design.lrs[1] + 1))))
        first = centre - design.lr_step * (count - 1) * rng.uniform(0.3, 0.7)
        for _, tokens, batches in own:
            for batch in batches:
                at = {"params": params, "tokens": tokens, "batch": float(batch)}
                x_true = truth.departed(design.law(at), rng)
                doublings = sum(math.log2(at[a] / base[a]) for a in LAW_AXES) / len(LAW_AXES)
                point = SimulatedPoint(truth, x_true, rng, doublings, seeds)
                for i in range(count):
                    point.train(first + i * design.lr_step, 0)
                truths[(params, tokens, batch)] = x_true
                for x, _, loss, status in point.points:
                    rows.append({"n_params": params, "width": width, "depth": depth, "tokens": tokens, "bs": batch,
                                 "lr": 2.0**x, "val/loss": loss if status == TrialStatus.OK else math.inf})
    table = pd.DataFrame(rows)
    upper = table.index[table["lr"] > table.groupby(["n_params", "tokens", "bs"])["lr"].transform("median")]
    already = int(table["val/loss"].isna().sum())
    extra = max(0, int(round(design.diverged * len(table))) - already)
    blown = rng.choice(upper, size=min(extra, len(upper)), replace=False)
    table.loc[blown, "val/loss"] = np.where(rng.random(len(blown)) < 0.5, math.inf, 1e3)
    return SimulatedTable(table, truths)
