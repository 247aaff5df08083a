"""The parametrization and optimizer a trial's row in ``trials.csv`` names: the ones its setup trained with.

The built-in loop and a trainer with ``model.factory`` (whose plan the tool computes) train with the config's
preset and optimizer, whether the spec named them or took the defaults. A trainer command without a model runs
the user's own model and optimizer: the config's names are then the spec's only where its overrides chose them
(``parametrization=sp``, ``optimizer=adamw``), and blank elsewhere, never the built-in defaults. Plain data."""

from __future__ import annotations

from typing import Optional

from ...schema import Config
from .sweep_spec import SweepSpec

__all__ = ["setup_names", "chooses"]


def chooses(overrides: tuple[str, ...], group: str) -> bool:
    """Whether ``overrides`` choose the ``group``'s preset (``optimizer=adamw``, ``optimizer.name=adamw``)."""
    return any(word.split("=", 1)[0].strip().lstrip("+~") in (group, f"{group}.name") for word in overrides)


def setup_names(spec: SweepSpec, label: str, cfg: Config) -> tuple[tuple[str, Optional[str]], ...]:
    """``(("parametrization", name), ("optimizer", name))`` for a trial of setup ``label`` trained with ``cfg``:
    None for a name a model-less trainer command's spec does not choose."""
    names = (("parametrization", cfg.parametrization.name), ("optimizer", cfg.optimizer.name))
    if spec.trainer is None or spec.model is not None:
        return names
    own = next((s.overrides for s in spec.setups if s.label == label), ())
    words = (*spec.overrides, *own)
    return tuple((group, name if chooses(words, group) else None) for group, name in names)
