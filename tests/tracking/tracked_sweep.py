"""A sweep small enough to log to a tracker in a unit test, and how to compare its answer with an import's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import yaml

from mutransfer.analysis.result import Summary
from mutransfer.files import SUMMARY_FILE

GRID = 2 * 4
"""2 widths × 4 learning rates."""


def write_tracked_spec(folder: Path, text_file: Path, log: Optional[dict[str, Any]] = None, steps: int = 12,
                       name: str = "tracked", trainer: Optional[dict[str, Any]] = None,
                       batch_trials: int | str = "auto", widths: tuple[int, ...] = (32, 64),
                       log2: tuple[int, int] = (-6, 0), search: Optional[dict[str, Any]] = None) -> Path:
    """One setup (μP + Muon) at widths 32 and 64, log2 η in -6, -4, -2, 0 (the optimum inside), ``log``: the
    spec's ``log:`` section; ``batch_trials`` learning rates stacked as one model. ``widths``, ``log2`` (the grid's
    ends) and ``search`` (over the spec's ``search:``, which has no extension and no probes) change it."""
    spec: dict[str, Any] = {
        "name": name,
        "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                "search": {"log2_min": log2[0], "log2_max": log2[1]}}},
        "widths": list(widths), "seeds": [0], "batch_trials": batch_trials,
        "search": {"step": 2, "extend": False, "noise_seeds": 0, **(search or {})},
        "overrides": ["model.depth=1", "parametrization.base_width=32", f"train.steps={steps}",
                      "train.batch_size=4", "train.seq_len=32", "train.eval_every=4", "train.eval_batches=2",
                      "data=text", f"data.path={text_file}"],
    }
    if log is not None:
        spec["log"] = log
    if trainer is not None:
        spec["trainer"] = trainer
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def answer(run_dir: Path) -> list[tuple[Any, ...]]:
    """What the summary table prints: each setup's verdict, slope and interval, and each width's log2 η*, its
    interval and best loss, at the printed digits."""
    summary = Summary.from_json(json.loads((run_dir / SUMMARY_FILE).read_text()))
    rows: list[tuple[Any, ...]] = []
    for label, result in summary.setups().items():
        fit = result.judged("width")
        rows.append((label, str(fit.verdict), round(fit.slope, 2) if fit.slope is not None else None,
                     tuple(round(v, 2) for v in fit.slope_ci) if fit.slope_ci else None))
        for point, optimum in sorted(fit.points.items()):
            rows.append((label, point, round(optimum.x_star, 2) if optimum.x_star is not None else None,
                         tuple(round(v, 2) for v in optimum.ci) if optimum.ci else None, optimum.ci_kind,
                         round(optimum.best_loss, 4) if optimum.best_loss is not None else None,
                         tuple(optimum.flags)))
    return rows
