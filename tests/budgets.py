"""The test suites' time budgets on CI's machine (2 cores, no GPU), in wall seconds: the one place that states
them. The suite prints its wall time against its budget (``conftest.pytest_terminal_summary``);
``scripts/bench_readme.py --parts ci`` measures every stage of ``.ci/run`` against ``CI_BUDGET_S``; timings are
never asserted by a test (docs/development.md, "Time budgets")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["CI_BUDGET_S", "CI_LIMIT_S", "SUITE_BUDGETS_S", "Budget", "budget_of", "budget_line"]


@dataclass(frozen=True)
class Budget:
    """One suite's budget: the marker expression that selects it, its name as the docs say it, its seconds."""

    markers: str
    name: str
    seconds: float


SUITE_BUDGETS_S = (Budget("not slow and not long", "the default suite (the README's test command)", 720.0),
                   Budget("slow", "the slow suite (`python -m pytest -q -m slow`)", 1200.0))
"""The suites CI runs and the wall seconds each may take on an idle 2-core machine."""
CI_BUDGET_S = 2700.0
"""The whole ``.ci/run`` from a clean clone: 45 minutes, half of ``CI_LIMIT_S``, so growth has room to land."""
CI_LIMIT_S = 5400.0
"""CI's hard limit: a run past 90 minutes does not land."""


def budget_of(markers: str) -> Optional[Budget]:
    """The budget of the suite that ``-m markers`` selects, or None for one CI does not run whole (``long``, a
    custom selection)."""
    wanted = " ".join(markers.split())
    return next((budget for budget in SUITE_BUDGETS_S if budget.markers == wanted), None)


def budget_line(budget: Budget, seconds: float) -> str:
    """The line the suite prints at its end: its wall time against its budget, and what to do when over."""
    share = seconds / budget.seconds
    line = f"suite time: {seconds:.0f} s against {budget.seconds:.0f} s, the budget of {budget.name} ({share:.0%})"
    if share > 1:
        line += (" - OVER BUDGET: make a test cheaper or move one to `long` (docs/development.md, "
                 "\"Time budgets\"), and check with `python -m pytest -q --durations=30`")
    return line
