"""The test a searched setting's effect rests on: the loss at its fitted minimum (the bowl's, and each seed's)
against the losses at an anchor trained with every seed (a constant's shipped value, decay off), with Welch's 95 %
interval from the seeds (``stats.welch_difference``). ``constant_effect`` and ``decay_effect`` word the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .stats import welch_difference

__all__ = ["AnchoredGain", "gain_over_anchor"]


@dataclass(frozen=True)
class AnchoredGain:
    """The anchor's mean loss and its seeds' (finite ones), and the gain of the fitted minimum over the anchor
    (anchor − best: positive when the searched setting is better) with its 95 % interval; the gain is None without
    a fitted minimum or a finite anchor loss, its interval None with fewer than two seeds on a side."""

    anchor: Optional[float]
    anchor_seeds: list[float]
    gain: Optional[float] = None
    ci: Optional[tuple[float, float]] = None


def gain_over_anchor(best_loss: Optional[float], seed_best_losses: Sequence[float],
                     anchor_losses: np.ndarray) -> AnchoredGain:
    finite = anchor_losses[np.isfinite(anchor_losses)]
    seeds = [float(v) for v in finite]
    if best_loss is None or not len(finite):
        return AnchoredGain(float(np.mean(finite)) if len(finite) else None, seeds)
    anchor = float(np.mean(finite))
    gain = anchor - float(best_loss)
    ci = welch_difference(np.asarray(seed_best_losses, dtype=float), finite, gain)
    return AnchoredGain(anchor, seeds, gain, None if ci is None else (float(ci[0]), float(ci[1])))
