"""What became of each point of a setup: its optimum fitted, at its grid's edge (censored low or high), too few
finished LRs to fit a bowl, every run diverged or failed, or fewer than three LRs tried (an import leaves such a
point out before the analysis). Counted per setup, so no setup's answer (or its absence) is silent, and a setup
without a single fitted point says why in words a user can act on."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterable, Mapping

from .point_result import PointResult

__all__ = ["Fates", "FATE_WORDS", "count_fates", "no_optimum_reason", "combined"]

FATE_WORDS = {"fitted": "fitted", "censored_low": "censored low", "censored_high": "censored high",
              "few_in_window": "too few LRs in the fit window", "all_diverged": "all diverged",
              "all_failed": "all failed", "few_lrs": "fewer than 3 LRs"}
"""How each fate reads in a printout, in ``Fates``' field order."""


@dataclass(frozen=True)
class Fates:
    """How many of a setup's points met each fate (``FATE_WORDS``)."""

    fitted: int = 0
    censored_low: int = 0
    censored_high: int = 0
    few_in_window: int = 0
    """Fewer than three finished LRs to fit a bowl: the point's lowest loss stands for its optimum, with a
    grid-resolution interval (it enters the fits)."""
    all_diverged: int = 0
    all_failed: int = 0
    few_lrs: int = 0
    """Fewer than three distinct LRs tried: left out before the analysis (``importing.convert.MIN_LRS``)."""

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))

    @property
    def measured(self) -> int:
        """The points the fits use: a fitted bowl, or (too few LRs in the fit window) the lowest loss inside the
        LRs. A setup needs a fitted one (``fitted``) to be fitted at all."""
        return self.fitted + self.few_in_window

    def line(self) -> str:
        """``12 points: 9 fitted, 2 censored low, 1 all diverged``."""
        parts = [f"{getattr(self, name)} {word}" for name, word in FATE_WORDS.items() if getattr(self, name)]
        return f"{self.total} points: {', '.join(parts) if parts else 'none'}"

    def to_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Fates":
        return cls(**{f.name: int(data.get(f.name, 0)) for f in fields(cls)})


def count_fates(points: Iterable[PointResult], few_lrs: int = 0) -> Fates:
    """The fates of ``points`` (their flags and censoring), with ``few_lrs`` points left out before the analysis."""
    counts = {name: 0 for name in FATE_WORDS}
    for point in points:
        if point.x_star is None:
            counts["all_diverged" if "all_diverged" in point.flags else "all_failed"] += 1
        elif point.censored:
            counts[f"censored_{point.censored}"] += 1
        elif "few_points" in point.flags:
            counts["few_in_window"] += 1
        else:
            counts["fitted"] += 1
    counts["few_lrs"] = few_lrs
    return Fates(**counts)


def combined(fates: Iterable[Fates]) -> Fates:
    """The fates of several setups' points added up."""
    listed = list(fates)
    return Fates(**{f.name: sum(getattr(one, f.name) for one in listed) for f in fields(Fates)})


def no_optimum_reason(fates: Fates) -> tuple[str, str]:
    """Why no point of a setup has an optimum inside its LRs, and what would fix it: the grids' edge where the
    estimates sit, else what became of the points."""
    if fates.total == 0:
        return "no point to fit", "import or sweep points with three or more LRs each"
    low, high = fates.censored_low, fates.censored_high
    for count, other, edge, fix in ((low, high, "lowest", "extend the grids below"),
                                    (high, low, "highest", "extend the grids above (or check --diverged-above: "
                                                           "runs past it count as diverged)")):
        if count == fates.total:
            return f"every point's optimum is at its {edge} LR", fix
        if count and not other:
            return f"no point's optimum lies inside its LRs: those with an estimate sit at their {edge} LR " \
                   f"({fates.line()})", fix
    if fates.all_diverged == fates.total:
        return ("every run diverged", "lower the LRs, or check --diverged-above and --loss (the loss column's scale)")
    if fates.few_lrs == fates.total:
        return ("every point has fewer than 3 LRs", "check the --axis mapping: an axis that differs per run makes "
                "every run its own point")
    return (f"no point's optimum lies inside its LRs ({fates.line()})",
            "extend each point's grid past the edge its optimum sits at")
