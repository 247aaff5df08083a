"""The thresholds every verdict of the analysis reads: what counts as "stays put", a flat curve, the noise a
resolution bound assumes, the fit window's least width, and a batch as good as the best."""

from __future__ import annotations

from dataclasses import dataclass

from ..defaults import BATCH_TOLERANCE, EFFECT_MARGIN

__all__ = ["Thresholds"]


@dataclass(frozen=True)
class Thresholds:
    transfer_slope: float = 0.25
    """Equivalence margin: |LR* slope| in octaves per width doubling that counts as "stays put"."""
    flat_tol: float = 0.01
    """Nats: a curve that rises less than this across the fit window is flat."""
    noise_floor: float = 0.01
    """Nats: the loss noise a resolution bound assumes."""
    fit_octaves: float = 1.0
    """The fit window's minimum half-width on log2 scales."""
    batch_tolerance: float = BATCH_TOLERANCE
    """Relative loss: a batch within this of the best batch's loss is as good (the critical batch's threshold)."""
    effect_margin: float = EFFECT_MARGIN
    """Nats: a tuned constant matters when its gain over factor 1 exceeds this beyond the seeds' noise."""
