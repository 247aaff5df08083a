"""One training run's outcome: status, losses, curve, evaluations and cost. Plain data (no torch), so that a
trial run by a user's own trainer reports the same record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..words import TrialStatus

__all__ = ["TrainResult"]


@dataclass
class TrainResult:
    status: TrialStatus
    """``OK``, ``DIVERGED`` or ``STOPPED`` (a sweep pruned it)."""
    val_loss: Optional[float]
    train_loss: Optional[float]
    initial_loss: float
    steps: int
    seconds: float
    tokens_per_s: float
    optimizer_fraction: float
    peak_memory_mb: float
    message: str = ""
    curve: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    noise_scale: Optional[float] = None
    """The gradient noise scale in sequences (``train.noise_scale``): a ratio of averages over the evaluations
    in the second half of the run; None when not measured or not positive."""
    branched_at: int = 0
    """The trunk step this run started from (``train.trunk``); 0: from scratch. ``seconds`` and ``tokens_per_s``
    count only the steps it trained itself."""
    compiled: bool = False
    """Whether the training steps ran through ``torch.compile`` (``train.compile``)."""

    @property
    def noise_measured(self) -> bool:
        """Whether the run measured the gradient noise scale (its evaluations carry ``noise_g2``)."""
        return any("noise_g2" in e for e in self.evals)

    def summary(self) -> dict[str, Any]:
        """The run's scalars; ``noise_scale`` only when it was measured, ``branched_at`` only for a branch."""
        keys = ("status", "val_loss", "train_loss", "initial_loss", "steps", "seconds", "tokens_per_s",
                "optimizer_fraction", "peak_memory_mb", "compiled", "message")
        keys += ("noise_scale",) * self.noise_measured + ("branched_at",) * bool(self.branched_at)
        return {k: getattr(self, k) for k in keys}
