"""What a trial costs, from trials that finished: the median of their recorded seconds at each width, and for
other widths seconds = a + b·width^p fitted to those medians. Pure arithmetic, samples in and seconds out;
``sweep.plan.finished`` reads the samples from a run directory's ``trials.csv``.

The fit: for each p on a grid from ``MIN_POWER`` to ``MAX_POWER``, a ≥ 0 and b ≥ 0 by least squares on the
relative error of each width's median; the p with the smallest error wins, and among fits equally good (two widths
fit exactly by a whole range of p) the one nearest ``ASSUMED_POWER``. One width alone gives no p: a = 0 and
p = ``ASSUMED_POWER``, which the basis line states.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

__all__ = ["MIN_POWER", "MAX_POWER", "POWER_STEP", "ASSUMED_POWER", "TrialSeconds", "WidthLaw", "MeasuredCost",
           "fit_width_law", "measured_cost", "duration_text"]

MIN_POWER = 1.0
"""The smallest p the fit tries: a trial's cost grows at least linearly with width beyond its fixed part (the
embedding and the head alone do)."""
MAX_POWER = 3.0
"""The largest p the fit tries: width³ covers a model whose depth grows with its width."""
POWER_STEP = 0.05
ASSUMED_POWER = 2.0
"""p where the trials cannot say (one width measured, or equally good fits): a dense layer's compute per token
grows as width²."""


@dataclass(frozen=True)
class TrialSeconds:
    """One finished trial: its width and the seconds it took (its share, when it trained stacked with others)."""

    width: int
    seconds: float


@dataclass(frozen=True)
class WidthLaw:
    """seconds = a + b·width^p; ``fitted``: p came from two or more widths (else ``ASSUMED_POWER``)."""

    a: float
    b: float
    p: float
    fitted: bool

    def seconds(self, width: float) -> float:
        return self.a + self.b * width ** self.p

    def text(self) -> str:
        """``a + b·width^1.70 fitted (a 0.05 s, b 3.1e-06 s)``, ``a constant 0.05 s fitted`` or the assumption."""
        if not self.fitted:
            return f"b·width^{self.p:g} assumed (one width measured)"
        if self.b == 0.0:
            return f"a constant {self.a:.3g} s fitted (no growth with width)"
        return f"a + b·width^{self.p:.2f} fitted (a {self.a:.3g} s, b {self.b:.3g} s)"


@dataclass(frozen=True)
class MeasuredCost:
    """The seconds a trial costs at any width, from ``trials`` finished trials: their median at each measured
    width (``medians``: (width, seconds), ascending), ``law`` elsewhere."""

    trials: int
    medians: tuple[tuple[int, float], ...]
    law: WidthLaw

    def seconds(self, width: int) -> float:
        return dict(self.medians).get(width, self.law.seconds(width))

    def basis(self) -> str:
        """``from 21 finished trials: median 0.9 s at width 64, 1.6 s at 128; other widths a + b·width^1.70
        fitted (…)``."""
        parts = [f"{duration_text(s)} at {'width ' if i == 0 else ''}{w}" for i, (w, s) in enumerate(self.medians)]
        return f"from {self.trials} finished trials: median {', '.join(parts)}; other widths {self.law.text()}"


def duration_text(seconds: float) -> str:
    """Seconds as a person reads them, to two significant digits: ``0.048 s``, ``3.0 s``, ``12 min``, ``2.5 h``."""
    unit, size = ("s", 1.0) if seconds < 60 else ("min", 60.0) if seconds < 7200 else ("h", 3600.0)
    value = seconds / size
    return f"{value:#.2g}".rstrip(".") + f" {unit}" if value < 100 else f"{value:,.0f} {unit}"


def _least_squares(widths: Sequence[float], medians: Sequence[float], p: float) -> tuple[float, float, float]:
    """(a, b, relative squared error) of a + b·width^p with a, b ≥ 0, each median's error relative to it."""
    xs = [w ** p / m for w, m in zip(widths, medians)]
    ones = [1.0 / m for m in medians]

    def error(a: float, b: float) -> float:
        return sum((a * o + b * x - 1.0) ** 2 for o, x in zip(ones, xs))

    candidates = [(sum(ones) / sum(o * o for o in ones), 0.0), (0.0, sum(xs) / sum(x * x for x in xs))]
    soo, sxx, sox = sum(o * o for o in ones), sum(x * x for x in xs), sum(o * x for o, x in zip(ones, xs))
    det = soo * sxx - sox * sox
    if det > 1e-12 * soo * sxx:
        a = (sxx * sum(ones) - sox * sum(xs)) / det
        b = (soo * sum(xs) - sox * sum(ones)) / det
        if a >= 0 and b >= 0:
            candidates.append((a, b))
    a, b = min(candidates, key=lambda ab: error(*ab))
    return a, b, error(a, b)


def fit_width_law(medians: Sequence[tuple[int, float]]) -> WidthLaw:
    """The law through each width's median seconds (module docstring); one width: b·width^``ASSUMED_POWER``."""
    widths = [float(w) for w, _ in medians]
    seconds = [s for _, s in medians]
    if len(medians) == 1:
        return WidthLaw(0.0, seconds[0] / widths[0] ** ASSUMED_POWER, ASSUMED_POWER, fitted=False)
    steps = round((MAX_POWER - MIN_POWER) / POWER_STEP)
    fits = [(MIN_POWER + i * POWER_STEP, *_least_squares(widths, seconds, MIN_POWER + i * POWER_STEP))
            for i in range(steps + 1)]
    best = min(error for *_, error in fits)
    tied = [fit for fit in fits if fit[3] <= best + 1e-9 * (1.0 + best)]
    p, a, b, _ = min(tied, key=lambda fit: abs(fit[0] - ASSUMED_POWER))
    return WidthLaw(a, b, round(p, 6), fitted=True)


def measured_cost(samples: Sequence[TrialSeconds]) -> Optional[MeasuredCost]:
    """The cost of ``samples`` (finite, positive seconds only); None when none is left."""
    usable = [s for s in samples if math.isfinite(s.seconds) and s.seconds > 0 and s.width > 0]
    if not usable:
        return None
    by_width: dict[int, list[float]] = {}
    for sample in usable:
        by_width.setdefault(sample.width, []).append(sample.seconds)
    medians = tuple((w, statistics.median(by_width[w])) for w in sorted(by_width))
    return MeasuredCost(len(usable), medians, fit_width_law(medians))
