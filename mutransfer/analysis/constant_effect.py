"""Does a tuned constant matter? At its search's point: the best factor's loss (the fitted minimum of its bowl)
against the loss at factor 1, the shipped value (trained with every seed as an anchor), with Welch's 95 % interval
from the seeds. A constant ``matters`` when the loss it gains over factor 1 exceeds both the seeds' noise and a
margin (``--effect-margin``); otherwise it has ``no effect`` worth carrying."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..defaults import EFFECT_MARGIN
from ..words import Effect
from .result import AxisFit, ConstantEffect
from .anchored import gain_over_anchor

__all__ = ["CONSTANT_EFFECTS", "DEFAULT_EFFECT_MARGIN", "constant_effect", "add_constant_effects"]

CONSTANT_EFFECTS = tuple(Effect)
"""``matters``: the best factor's loss is below factor 1's by more than the margin, beyond the seeds' noise (the
gain's interval lies wholly above the margin); ``no effect``: it is not; ``unmeasured``: fewer than two seeds on a
side, so the noise is unknown."""
DEFAULT_EFFECT_MARGIN = EFFECT_MARGIN
"""Nats: a gain smaller than this is not worth a constant that differs from the shipped one."""


def constant_effect(best_loss: Optional[float], seed_best_losses: Sequence[float], at_one: np.ndarray,
                    margin: float = DEFAULT_EFFECT_MARGIN) -> ConstantEffect:
    """One constant's effect from its bowl's fitted minimum (``best_loss``, and each seed's) and the losses at
    factor 1 (one per seed), the anchor (``anchored``)."""
    found = gain_over_anchor(best_loss, seed_best_losses, at_one)
    verdict = (Effect.UNMEASURED if found.ci is None else Effect.MATTERS if found.ci[0] > margin
               else Effect.NO_EFFECT)
    return ConstantEffect(found.anchor, found.anchor_seeds, found.gain, found.ci, verdict)


def add_constant_effects(result: Mapping[str, AxisFit], rows: pd.DataFrame, key: str, axis_column: str = "width",
                         margin: float = DEFAULT_EFFECT_MARGIN) -> None:
    """Set every point's ``constant`` of every setup's fit of one constant (``analyze``'s result) from its trials
    at factor 1 (``rows``: setup, seed, the axis column, the key's factor, val_loss)."""
    for setup, fit in result.items():
        own = rows[(rows["setup"] == setup) & np.isclose(rows[key].astype(float), 1.0)]
        for point, entry in fit.points.items():
            losses = own.loc[own[axis_column] == point].groupby("seed")["val_loss"].mean().to_numpy(float)
            if len(losses):
                entry.constant = constant_effect(entry.best_loss, entry.seed_best_losses, losses, margin)
