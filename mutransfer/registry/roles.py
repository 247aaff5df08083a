"""The roles a parameter can play in the abc table: what each one is, besides the rules a preset, an optimizer
config and an optimizer family give it. Plain data, no torch.

A new role is one entry here (or ``ROLES.register`` from the user's code). It may name a shipped role it is
``like``: every table that does not list it (a preset's exponents, an optimizer config's base values, a family's
update rule) then gives it that role's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .base import Registry

__all__ = ["Role", "ROLES", "shipped_roles"]


@dataclass(frozen=True)
class Role:
    name: str
    like: Optional[str] = None
    """The role whose rules it takes wherever a table does not list it; None: a role every table lists."""
    lookup: bool = False
    """A table read by index, stored (vocabulary, width): its (d_out, d_in) in y = x W is (width, vocabulary)."""
    constant_init: bool = False
    """Initialised to its base value (a norm's gain), not drawn from N(0, σ²)."""
    matmul: bool = False
    """A matrix the forward multiplies by every token's activations (counted in the FLOPs per token)."""
    decayed: bool = False
    """Whether weight decay reaches it unless ``optimizer.decayed`` says otherwise."""
    doc: str = ""


def shipped_roles() -> tuple[Role, ...]:
    """Tensor Programs V's roles, with the vectors split into norm gains and biases, and a mixture of experts' two
    (docs/moe.md): each expert's matrices are hidden matrices of their own (both dimensions grow with width at a
    fixed ``expert_ratio``), and the router maps the width to a fixed number of experts, as the LM head maps it to a
    fixed vocabulary. Decay reaches the matrices, not the gains and biases (as is usual), and not the embedding,
    whose rows move only when their token appears while decoupled decay shrinks every row every step
    (docs/weight-decay.md)."""
    return (Role("embedding", lookup=True, doc="input embedding: vocabulary → width"),
            Role("hidden", matmul=True, decayed=True, doc="width → width matrices inside the blocks"),
            Role("readout", matmul=True, decayed=True, doc="LM head: width → vocabulary"),
            Role("gain", constant_init=True, doc="norm gains (vectors of the width)"),
            Role("bias", doc="biases (vectors of the width)"),
            Role("expert", like="hidden", matmul=True, decayed=True,
                 doc="a routed expert's matrices, (experts, out, in): each expert scaled by its own fan-in and fan-out"),
            Role("router", like="readout", matmul=True, decayed=True, doc="MoE router: width → number of experts"))


ROLES: Registry[Role] = Registry("role", shipped_roles())
"""Every role a parameter can play, by name."""
