"""What ``transfer`` suggests next: ``verify`` at the target when this machine can train its trials within
``VERIFY_BUDGET_S``, estimated from the sweep's own step times (a fixed cost plus a cost per training FLOP, fitted
over the swept widths); otherwise the widest doubling of the swept widths that fits, and the target left to the
machine that will train it. ``verify --dry-run`` measures the time instead of estimating it."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from ..files import TRIALS_FILE
from ..train.flops import training_flops
from ..schema import Config
from ..sweep.estimate import TRIAL_OVERHEAD_S
from ..train.budget import tokens_per_step
from .verify import DEFAULT_SPAN, DEFAULT_STEP

__all__ = ["VERIFY_BUDGET_S", "VERIFY_TRIALS", "StepCost", "VerifyEstimate", "step_cost", "verify_estimate", "next_check"]

VERIFY_BUDGET_S = 3600.0
"""The longest ``verify`` that ``transfer`` suggests running on this machine: one hour."""
VERIFY_TRIALS = round(2 * DEFAULT_SPAN / DEFAULT_STEP) + 1
"""The trials a default ``verify`` trains per target: the lattice ±span around η*."""


@dataclass(frozen=True)
class VerifyEstimate:
    """A default ``verify`` at ``width``: ``seconds`` on this machine, from the sweep's step times."""

    width: int
    seconds: float

    def fits(self) -> bool:
        return self.seconds <= VERIFY_BUDGET_S

    def text(self) -> str:
        minutes = self.seconds / 60
        if minutes < 1:
            return "under a minute"
        return f"about {minutes:,.0f} min" if minutes < 120 else f"about {minutes / 60:,.0f} h"


@dataclass(frozen=True)
class StepCost:
    """Seconds per training step as a fixed cost plus a cost per FLOP, fitted to the sweep's median step times
    at its widths (least squares, both terms ≥ 0)."""

    fixed: float
    per_flop: float

    def seconds(self, flops_per_step: float) -> float:
        return self.fixed + self.per_flop * flops_per_step


def _step_flops(cfg: Config, width: int) -> float:
    return training_flops(replace(cfg, model=replace(cfg.model, width=width)),
                          tokens_per_step(cfg.train.batch_size, cfg.train.seq_len))


def step_cost(run_dir: Path, setup: str, swept: Config) -> Optional[StepCost]:
    """The step cost of ``setup``'s finished trials in ``run_dir``, or None when none recorded its time."""
    path = run_dir / TRIALS_FILE
    if not path.is_file():
        return None
    trials = pd.read_csv(path)
    done = trials[(trials["setup"] == setup) & (trials["status"] == "ok") & (trials["steps"] > 0)]
    done = done.dropna(subset=["seconds"])
    if done.empty:
        return None
    per_step = (done["seconds"] / done["steps"]).groupby(done["width"]).median()
    flops = np.array([_step_flops(swept, int(w)) for w in per_step.index])
    seconds = per_step.to_numpy(dtype=float)
    if len(flops) >= 2:
        slope, fixed = np.polyfit(flops, seconds, 1)
        if slope > 0 and fixed >= 0:
            return StepCost(float(fixed), float(slope))
    return StepCost(0.0, float(seconds[-1] / flops[-1]))


def verify_estimate(cost: StepCost, target: Config, width: Optional[int] = None) -> VerifyEstimate:
    """A default ``verify`` with ``target``'s config (at ``width`` when given)."""
    width = target.model.width if width is None else width
    step = cost.seconds(_step_flops(target, width))
    return VerifyEstimate(width, VERIFY_TRIALS * (target.train.steps * step + TRIAL_OVERHEAD_S))


def next_check(run_dir: Path, setup: str, swept: Config, target_config: Config) -> str:
    """The ``next:`` line ``transfer`` prints: the verify command this machine can run, with its estimate."""
    width = target_config.model.width
    command = f"mutransfer verify --width {{}} --from {shlex.quote(str(run_dir))}"
    cost = step_cost(run_dir, setup, swept)
    if cost is None:
        return f"next: {command.format(width)} measures η* there (--dry-run estimates its time first)"
    target = verify_estimate(cost, target_config)
    if target.fits():
        return (f"next: {command.format(width)} measures η* there ({VERIFY_TRIALS} trials, {target.text()} on this "
                f"machine, from the sweep's step times; --dry-run measures it)")
    largest = int(pd.read_csv(run_dir / TRIALS_FILE)["width"].max())
    fitting = None
    for doubling in range(1, max(1, int(math.log2(width / largest))) + 1):
        check = verify_estimate(cost, target_config, largest * 2**doubling)
        if check.width >= width or not check.fits():
            break
        fitting = check
    head = (f"next: verifying at width {width} takes {target.text()} on this machine ({VERIFY_TRIALS} trials, from "
            f"the sweep's step times): run {command.format(width)} where width {width} trains")
    if fitting is None:
        return head
    return head + (f"; here, {command.format(fitting.width)} checks the transfer at width {fitting.width} "
                   f"({fitting.text()})")
