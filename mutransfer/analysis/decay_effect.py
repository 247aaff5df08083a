"""Does the best weight decay beat no decay? Per point: the decay's best loss (the fitted minimum of its bowl)
against the loss with decay off (trained with every seed as an anchor), with Welch's 95 % interval from the
seeds. A best decay that does not beat decay off by more than the seeds' noise is ``no effect``, not an optimum."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..words import DecayVerdict
from .result import AxisFit, DecayEffect, PointResult
from .anchored import gain_over_anchor

__all__ = ["EFFECTS", "decay_effect", "add_decay_effects"]

EFFECTS = tuple(DecayVerdict)
"""``effect``: the best decay's loss is below decay off's beyond the seeds' noise (the interval's upper end < 0);
``no effect``: it is not; ``unmeasured``: fewer than two seeds on a side, so the noise is unknown."""


def decay_effect(point: PointResult, off_losses: np.ndarray) -> DecayEffect:
    """One point's effect: decay off's mean loss and its seeds', the best decay's loss minus it, that
    difference's interval, and the verdict (``EFFECTS``)."""
    found = gain_over_anchor(point.best_loss, point.seed_best_losses, off_losses)
    effect = None if found.gain is None else -found.gain
    ci = None if found.ci is None else (-found.ci[1], -found.ci[0])
    verdict = (DecayVerdict.UNMEASURED if ci is None else DecayVerdict.EFFECT if ci[1] < 0
               else DecayVerdict.NO_EFFECT)
    return DecayEffect(found.anchor, found.anchor_seeds, effect, ci, verdict)


def add_decay_effects(result: Mapping[str, AxisFit], off_rows: pd.DataFrame, axis_column: str = "width") -> None:
    """Set every point's ``decay`` of every setup's fit of one decay key (``analyze``'s result) from the trials
    trained with decay off (``off_rows``: setup, seed, the axis column, val_loss); each fit's ``decay_counts``
    counts its points' verdicts."""
    for setup, fit in result.items():
        own = off_rows[off_rows["setup"] == setup]
        for point, entry in fit.points.items():
            losses = own.loc[own[axis_column] == point].groupby("seed")["val_loss"].mean().to_numpy(float)
            entry.decay = decay_effect(entry, losses)
        verdicts = [entry.decay.verdict for entry in fit.points.values() if entry.decay is not None]
        fit.decay_counts = {effect: verdicts.count(effect) for effect in EFFECTS}
