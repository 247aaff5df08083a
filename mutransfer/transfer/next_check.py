"""What ``transfer`` suggests next: ``verify`` at the target when this machine can train its trials within
``VERIFY_BUDGET_S``, estimated from the sweep's own finished trials (``trials.csv``'s seconds: the median at a
swept width, a + b·width^p fitted over the swept widths elsewhere, ``sweep.plan.measured_cost``), whatever trained them,
the built-in GPT or the user's command; otherwise the widest doubling of the swept widths that fits, and the target
left to the machine that will train it. ``verify --dry-run`` gives the same estimate per setup and trial."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..schema import Config
from ..sweep.plan.estimate import TRIAL_OVERHEAD_S
from ..sweep.plan.finished import SetupCost, read_finished
from .verify import DEFAULT_SPAN, DEFAULT_STEP

__all__ = ["VERIFY_BUDGET_S", "VERIFY_TRIALS", "VerifyEstimate", "verify_estimate", "horizon_factor", "next_check"]

VERIFY_BUDGET_S = 3600.0
"""The longest ``verify`` that ``transfer`` suggests running on this machine: one hour."""
VERIFY_TRIALS = round(2 * DEFAULT_SPAN / DEFAULT_STEP) + 1
"""The trials a default ``verify`` trains per target: the lattice ±span around η*."""


@dataclass(frozen=True)
class VerifyEstimate:
    """A default ``verify`` at ``width``: ``seconds`` on this machine, from the sweep's finished trials."""

    width: int
    seconds: float

    def fits(self) -> bool:
        return self.seconds <= VERIFY_BUDGET_S

    def text(self) -> str:
        minutes = self.seconds / 60
        if minutes < 1:
            return "under a minute"
        return f"about {minutes:,.0f} min" if minutes < 120 else f"about {minutes / 60:,.0f} h"


def verify_estimate(cost: SetupCost, width: int, horizon: float = 1.0) -> VerifyEstimate:
    """A default ``verify`` at ``width``: its trials at ``cost``'s seconds there, × ``horizon`` (the target's steps
    over the sweep's), plus each trial's bookkeeping."""
    return VerifyEstimate(width, VERIFY_TRIALS * (cost.seconds(width) * horizon + TRIAL_OVERHEAD_S))


def horizon_factor(swept: Config, target: Config) -> float:
    """The target's training steps over the sweep's (1 when either is unknown)."""
    return target.train.steps / swept.train.steps if swept.train.steps and target.train.steps else 1.0


def next_check(run_dir: Path, setup: str, swept: Config, target_config: Config) -> str:
    """The ``next:`` line ``transfer`` prints: the verify command this machine can run, with its estimate and the
    finished trials it comes from."""
    width = target_config.model.width
    command = f"mutransfer verify --width {{}} --from {shlex.quote(str(run_dir))}"
    cost = read_finished(run_dir).cost(setup)
    if cost is None:
        return f"next: {command.format(width)} measures η* there (--dry-run estimates its time first)"
    horizon = horizon_factor(swept, target_config)
    basis = f"time per trial {cost.basis()}" + (f", × {horizon:.3g} for the target's steps" if horizon != 1 else "")
    target = verify_estimate(cost, width, horizon)
    if target.fits():
        return (f"next: {command.format(width)} measures η* there ({VERIFY_TRIALS} trials, {target.text()} on this "
                f"machine; {basis})")
    largest = cost.cost.medians[-1][0]
    fitting = None
    for doubling in range(1, max(1, int(math.log2(width / largest))) + 1):
        check = verify_estimate(cost, largest * 2**doubling, horizon)
        if check.width >= width or not check.fits():
            break
        fitting = check
    head = (f"next: verifying at width {width} takes {target.text()} on this machine ({VERIFY_TRIALS} trials): run "
            f"{command.format(width)} where width {width} trains")
    here = "" if fitting is None else (f"; here, {command.format(fitting.width)} checks the transfer at width "
                                       f"{fitting.width} ({fitting.text()})")
    return f"{head}{here} ({basis})"
