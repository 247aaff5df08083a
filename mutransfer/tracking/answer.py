"""A summary as a parent run's metrics and tags: each setup's verdict, slope (and interval) and log2 η* per
point on the width axis."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..analysis.result import Summary
from .records import SweepAnswer

__all__ = ["sweep_answer", "verify_answer"]


def _name(point: object) -> str:
    return "_".join(map(str, point)) if isinstance(point, tuple) else str(point)


def sweep_answer(summary: Summary, step: int, files: Sequence[Path] = (), final: bool = False) -> SweepAnswer:
    """The answer of ``summary`` at ``step`` trials: ``SETUP.slope``, ``SETUP.slope_lo``/``_hi``,
    ``SETUP.log2_eta.width_W`` and the tag ``SETUP.verdict``."""
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    for label, result in summary.setups().items():
        fit = result.judged("width")
        tags[f"{label}.verdict"] = str(fit.verdict)
        if fit.slope is not None:
            metrics[f"{label}.slope"] = fit.slope
        if fit.slope_ci is not None:
            metrics[f"{label}.slope_lo"], metrics[f"{label}.slope_hi"] = fit.slope_ci
        for point, optimum in fit.points.items():
            if optimum.x_star is not None:
                metrics[f"{label}.log2_eta.width_{_name(point)}"] = optimum.x_star
    finite = {k: float(v) for k, v in metrics.items() if math.isfinite(v)}
    return SweepAnswer(step=step, metrics=finite, tags=tags, files=tuple(files), final=final)


def verify_answer(document: Mapping[str, Any], files: Sequence[Path]) -> SweepAnswer:
    """A verification (verify.json) for its parent run: each target's numbers as ``SETUP.width_W.NAME``, whether
    it passed as a tag, and the files."""
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {"passed": str(document.get("passed"))}
    for target in document.get("targets", []):
        where = f"{target.get('setup')}.width_{target.get('width')}"
        for name, value in target.items():
            if isinstance(value, bool):
                tags[f"{where}.{name}"] = str(value)
            elif isinstance(value, (int, float)) and name != "width" and math.isfinite(value):
                metrics[f"{where}.{name}"] = float(value)
    return SweepAnswer(step=len(document.get("targets", [])), metrics=metrics, tags=tags, files=tuple(files),
                       final=True)
