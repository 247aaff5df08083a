"""The optimizer families: for each optimizer a config can name (``optimizer.name``), the update rule it applies to
each role, the weight-decay rules it can apply, how its LR meets the depth multiplier, and the function that builds
it. Plain data, no torch: the builder is named as ``module:function`` and imported when a model is trained.

A new family is one entry here (or ``FAMILIES.register`` from the user's code) and one config
(``configs/optimizer/NAME.yaml``) holding the settings it needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .base import Registry
from .roles import ROLES

__all__ = ["OptimizerFamily", "FAMILIES", "shipped_families"]


@dataclass(frozen=True)
class OptimizerFamily:
    """One optimizer and the rules that come with it."""

    name: str
    """What ``optimizer.name`` says to choose it."""
    exponents: str
    """The column of the abc table's LR exponents it reads (``parametrization.roles.ROLE.c.EXPONENTS``): Adam's for
    AdamW, whose step size ignores the gradient's scale; each family's own otherwise."""
    builder: str
    """``module:function`` that builds it: ``function(groups, opt, lr, stacked)`` → a torch optimizer, where
    ``stacked`` asks for the variant that steps K trials stacked along a leading dimension, each with its own LR."""
    update: str
    """The update rule a role gets when ``updates`` does not name it (nor the role it is ``like``)."""
    updates: Mapping[str, str] = field(default_factory=dict)
    """Update rules by role, where they differ from ``update`` (steepest descent's per-role norms)."""
    decay_rules: tuple[str, ...] = ("lr_scaled", "independent")
    """The weight-decay rules it can apply (``table.decay``); the first is its default."""
    depth_branches: int = 1
    """How many times an in-block update passes the branch multiplier m_L^-α on its way into the residual stream:
    once when the step size ignores the gradient's scale (Adam, Muon), twice when the gradient carries it (SGD)."""
    scaled_eps: bool = False
    """Whether it has an epsilon that the abc table scales per role (Adam)."""
    rules_in_groups: bool = False
    """Whether each parameter group carries its role's update rule and Muon's shape settings."""
    bowl: str = "muon"
    """The loss bowl a dry run's simulator assumes for it (``simulation.calibration.BOWLS``)."""

    def update_of(self, role: str) -> str:
        """The update rule it applies to ``role``: its own, else that of the role ``role`` is like."""
        like = ROLES.named(role).like
        return self.updates.get(role) or (self.updates.get(like, self.update) if like else self.update)


def shipped_families() -> tuple[OptimizerFamily, ...]:
    """SGD, AdamW, and Muon as steepest descent per role (Bernstein & Newhouse, "Old optimizer, new norm"; Su's
    "Above MuP")."""
    return (
        OptimizerFamily("sgd", "sgd", "mutransfer.optim.builders:sgd", update="sgd", decay_rules=("l2",),
                        depth_branches=2),
        OptimizerFamily("adamw", "adam", "mutransfer.optim.builders:adamw", update="adamw", scaled_eps=True,
                        bowl="adamw"),
        OptimizerFamily("muon", "muon", "mutransfer.optim.builders:steepest_descent", update="spectral",
                        updates={"embedding": "row_norm", "hidden": "spectral", "readout": "row_norm", "gain": "sign",
                                 "bias": "rms"}, rules_in_groups=True),
    )


FAMILIES: Registry[OptimizerFamily] = Registry("optimizer", shipped_families())
"""Every optimizer a config can name, by ``optimizer.name``."""
