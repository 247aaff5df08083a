"""The batch size and token budget of a transfer's target: where the law reads them, what the target config
trains, and what a user should know when the batch leaves the swept range or passes the critical batch."""

from __future__ import annotations

import math
from typing import Any, Optional

from ..analysis.result import SetupResult
from ..errors import UserError
from ..schema import Config
from ..train.budget import budget_problem, budget_steps, tokens_per_step

__all__ = ["Horizon", "target_horizon", "batch_warnings", "BATCH_REACH"]

BATCH_REACH = 2.0
"""How far past the swept batch sizes (a factor either side) the law's batch slope is carried without a warning:
past the critical batch the optimal LR stops following the batch, so a batch slope does not extrapolate far."""


class Horizon:
    """The target's batch size and horizon: ``steps`` and, for a budget, ``tokens`` (None: trained by steps)."""

    def __init__(self, batch: int, steps: int, tokens: Optional[int]) -> None:
        self.batch, self.steps, self.tokens = batch, steps, tokens

    def point(self, seq_len: int) -> dict[str, int]:
        """The target's coordinates on the batch, steps and tokens axes."""
        return {"batch": self.batch, "steps": self.steps,
                "tokens": self.tokens if self.tokens is not None else self.steps * tokens_per_step(self.batch, seq_len)}


def target_horizon(base: Config, batch: Optional[int], tokens: Optional[int], steps: Optional[int]) -> Horizon:
    """The target's batch (``--batch-size``, else the swept base point's) and horizon: ``--tokens`` (a budget), or
    ``--steps``, else the base point's budget when it had one, its steps otherwise."""
    for flag, value, example in (("--batch-size", batch, "256"), ("--tokens", tokens, "1000000000"),
                                 ("--steps", steps, "100000")):
        if value is not None and value <= 0:
            raise UserError(f"{flag} {value} must be positive", f"e.g. {flag} {example}")
    if tokens is not None and steps is not None:
        raise UserError("--tokens and --steps both set the horizon", "give one: --tokens D (a budget) or --steps S")
    size = base.train.batch_size if batch is None else batch
    seq_len = base.train.seq_len
    budget = tokens if tokens is not None else (base.train.tokens if steps is None else None)
    if budget is None:
        return Horizon(size, base.train.steps if steps is None else steps, None)
    problem = budget_problem(budget, size, seq_len, "--tokens" if tokens is not None else "the swept budget")
    if problem is not None:
        raise UserError(*problem)
    return Horizon(size, budget_steps(budget, size, seq_len), budget)


def batch_warnings(label: str, info: SetupResult, batch: int, swept: int, tokens: int,
                   in_law: bool) -> list[str]:
    """What to know about the batch ``batch`` at ``tokens``: outside the swept batches by more than
    ``BATCH_REACH``, past the critical batch measured at the budget nearest ``tokens``, or a batch the sweep
    did not vary at all."""
    if not in_law:
        if batch == swept:
            return []
        return [f"batch {batch} differs from the swept batch {swept}: the LR is kept — assumed, not measured; below "
                "the critical batch Adam's optimum grows about as √B (Malladi et al.) and SGD's as B (Goyal et al.); "
                "sweep batch_sizes: [...] to measure it"]
    swept_sizes = sorted(int(b) for b in info.axes["batch"].points) if "batch" in info.axes else [swept]
    warnings = []
    if batch > BATCH_REACH * swept_sizes[-1] or batch < swept_sizes[0] / BATCH_REACH:
        warnings.append(f"batch {batch} is more than {BATCH_REACH:g}× outside the swept batches {swept_sizes[0]}–"
                        f"{swept_sizes[-1]}: past the critical batch the optimal LR stops following the batch, so "
                        "the fitted batch slope may not hold there")
    critical = _critical_near(info, tokens)
    if critical is not None and critical.get("batch") and batch > critical["batch"] and critical["status"] != "bound":
        warnings.append(f"batch {batch} is past the critical batch measured at {critical['tokens']:,} tokens "
                        f"(≈ {critical['batch']:.3g}, {critical['status']}): each token buys less there, and the "
                        "LR's batch slope was measured mostly below it")
    return warnings


def _critical_near(info: SetupResult, tokens: int) -> Optional[dict[str, Any]]:
    """The critical batch measured at the swept budget nearest ``tokens`` (in log2), with that budget."""
    budgets = (info.batch or {}).get("budgets") or {}
    if not budgets:
        return None
    nearest = min(budgets, key=lambda d: abs(math.log2(int(d)) - math.log2(tokens)))
    critical = budgets[nearest].get("critical")
    return {**critical, "tokens": int(nearest)} if critical else None
