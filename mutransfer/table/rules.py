"""The rules the abc table evaluates: base-value shape rules, matrix orientation, the update rule of each
role per optimizer family and Muon's shape factor. Pure math, no torch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..schema import ROLES
from ..registry.families import OptimizerFamily

__all__ = ["INIT_RULES", "UPDATE_RULES", "MUON_SCALES", "DEPTH_ALPHAS", "DepthExponents", "matrix_dims", "base_value", "muon_scale", "depth_exponents", "check_depth_alpha"]

INIT_RULES: tuple[str, ...] = ("1/sqrt(fan_in)", "1/fan_in", "spectral")
UPDATE_RULES: tuple[str, ...] = ("spectral", "row_norm", "sign", "rms")
MUON_SCALES: tuple[str, ...] = ("naive", "keller", "mup", "moonlight", "scheduled")
DEPTH_ALPHAS = (0.5, 1.0)
"""The range of a residual-branch exponent α that is on (0 is off): depth-μP (Yang et al., "Tensor Programs VI")
to CompleteP (Dey et al., "Don't be lazy: CompleteP enables compute-efficient deep transformers")."""


@dataclass(frozen=True)
class DepthExponents:
    """Depth factors of a parameter inside a residual block, as exponents of m_L = depth / base_depth:
    LR × m_L^lr, Adam eps × m_L^eps, init std × m_L^init, and the branch output × m_L^branch."""

    lr: float = 0.0
    eps: float = 0.0
    init: float = 0.0
    branch: float = 0.0


def matrix_dims(role: str, shape: Sequence[int], transposed: bool = False, blocks: int = 1) -> tuple[int, int]:
    """(dout, din) of one logical block of a parameter in the math sense y = x W: torch layout (dout, din),
    except that an embedding table (V, d) maps a one-hot of size V to d, a ``transposed`` weight is stored
    (din, dout) (GPT-2's ``Conv1D``), and a fused weight holds ``blocks`` equal blocks stacked along dout
    (GPT-2's q|k|v); vectors are (d, 1)."""
    if len(shape) == 1:
        dout, din = int(shape[0]), 1
    elif ROLES.named(role).lookup or transposed:
        dout, din = int(shape[-1]), int(shape[-2])
    else:
        dout, din = int(shape[-2]), int(shape[-1])
    if dout % blocks:
        raise ValueError(f"a parameter of shape {tuple(shape)} cannot hold {blocks} equal blocks along its "
                         f"output dimension {dout}")
    return dout // blocks, din


def base_value(text: str, dout: int, din: int) -> float:
    """A number, or a shape rule from INIT_RULES evaluated at (dout, din), or either scaled: ``0.5*1/fan_in``
    (a tuned constant, ``table.constants.scaled``)."""
    head, star, rule = text.partition("*")
    if star:
        try:
            factor = float(head)
        except ValueError:
            raise ValueError(f"'{text}' is not FACTOR*RULE with a number before the '*'") from None
        return factor * base_value(rule, dout, din)
    if text == "1/sqrt(fan_in)":
        return 1.0 / math.sqrt(din)
    if text == "1/fan_in":
        return 1.0 / din
    if text == "spectral":
        return math.sqrt(dout / din) / (math.sqrt(din) + math.sqrt(dout))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"'{text}' is neither a number nor one of {INIT_RULES}") from None


def muon_scale(rule: str, dout: int, din: int, tau: float = 1.0) -> float:
    """Muon's shape factor α for a ``(dout, din)`` weight (update = α · msign(M)); the variants follow Su,
    "Why does the official Muon have an extra max(1, ·)?": ``scheduled`` moves from √max(1, ratio) to
    √ratio as τ decays from 1 to 0."""
    ratio = dout / din
    if rule == "naive":
        return 1.0
    if rule == "keller":
        return math.sqrt(max(1.0, ratio))
    if rule == "mup":
        return math.sqrt(ratio)
    if rule == "moonlight":
        return 0.2 * math.sqrt(max(dout, din))
    if rule == "scheduled":
        return math.sqrt(max(tau, ratio))
    raise ValueError(f"unknown Muon scale rule {rule!r}; choose one of {', '.join(MUON_SCALES)}")


def check_depth_alpha(alpha: float) -> None:
    """0 (off) or within ``DEPTH_ALPHAS``; a ValueError otherwise."""
    low, high = DEPTH_ALPHAS
    if not (alpha == 0.0 or low <= alpha <= high):
        raise ValueError(f"depth_alpha={alpha:g} is neither 0 (off) nor in [{low:g}, {high:g}]")


def depth_exponents(family: OptimizerFamily, alpha: float) -> DepthExponents:
    """The depth rules for an in-block parameter (GUIDE's summary of Tensor Programs VI, CompleteP and
    EleutherAI's nanoGPT-mup): each block's output enters the residual stream × m_L^-α; so that the sum of L
    blocks' updates stays Θ(1), the LR goes × m_L^(k·α − 1) with k = ``family.depth_branches`` (Adam and
    Muon: m_L^(α−1), none at α = 1; SGD: m_L^(2α−1), none at α = ½); Adam's eps follows the in-block gradients
    × m_L^-α; no depth factor on init. α = 0: every factor is 1 (no residual scaling). Parameters outside the
    blocks (embedding, final norm, LM head) never get a depth factor."""
    check_depth_alpha(alpha)
    if alpha == 0.0:
        return DepthExponents()
    return DepthExponents(lr=family.depth_branches * alpha - 1.0, eps=-alpha if family.scaled_eps else 0.0,
                          init=0.0, branch=-alpha)
