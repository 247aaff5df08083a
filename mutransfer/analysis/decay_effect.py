"""Does the best weight decay beat no decay? Per point: the decay's best loss (the fitted minimum of its bowl)
against the loss with decay off (trained with every seed as an anchor), with Welch's 95 % interval from the
seeds. A best decay that does not beat decay off by more than the seeds' noise is ``no effect``, not an optimum."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from .stats import welch_difference

__all__ = ["EFFECTS", "decay_effect", "add_decay_effects"]

EFFECTS = ("effect", "no effect", "unmeasured")
"""``effect``: the best decay's loss is below decay off's beyond the seeds' noise (the interval's upper end < 0);
``no effect``: it is not; ``unmeasured``: fewer than two seeds on a side, so the noise is unknown."""


def decay_effect(entry: Mapping[str, Any], off_losses: np.ndarray) -> dict[str, Any]:
    """The effect fields of one point's entry: decay off's mean loss and its seeds', the best decay's loss minus
    it, that difference's interval, and the verdict (``EFFECTS``)."""
    off_losses = off_losses[np.isfinite(off_losses)]
    best = entry.get("best_loss")
    if best is None or not len(off_losses):
        return {"off_loss": float(np.mean(off_losses)) if len(off_losses) else None,
                "off_seed_losses": [float(v) for v in off_losses], "effect": None, "effect_ci": None,
                "decay_effect": "unmeasured"}
    off = float(np.mean(off_losses))
    effect = float(best) - off
    ci = welch_difference(off_losses, np.asarray(entry.get("seed_best_losses") or [], dtype=float), effect)
    verdict = "unmeasured" if ci is None else "effect" if ci[1] < 0 else "no effect"
    return {"off_loss": off, "off_seed_losses": [float(v) for v in off_losses], "effect": effect,
            "effect_ci": list(ci) if ci is not None else None, "decay_effect": verdict}


def add_decay_effects(result: dict[str, Any], off_rows: pd.DataFrame, axis_column: str = "width",
                      points: str = "widths") -> None:
    """Add ``decay_effect`` fields to every point of every setup of one decay key's analysis (``analyze``'s
    result, whose points are under ``points``), from the trials trained with decay off (``off_rows``: setup,
    seed, the axis column, val_loss); each setup's ``decay_effect`` counts its points' verdicts."""
    for setup, info in result.items():
        own = off_rows[off_rows["setup"] == setup]
        for point, entry in info.get(points, {}).items():
            losses = own.loc[own[axis_column] == int(point)].groupby("seed")["val_loss"].mean().to_numpy(float)
            entry.update(decay_effect(entry, losses))
        verdicts = [entry["decay_effect"] for entry in info.get(points, {}).values()]
        info["decay_effect"] = {effect: verdicts.count(effect) for effect in EFFECTS}
