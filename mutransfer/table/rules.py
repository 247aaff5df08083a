"""The rules the abc table evaluates: base-value shape rules, matrix orientation, the update rule of each
role per optimizer family and Muon's shape factor. Pure math, no torch."""

from __future__ import annotations

import math
from typing import Sequence

from ..schema import ROLES

__all__ = ["INIT_RULES", "UPDATE_RULES", "UPDATE_BY_FAMILY", "MUON_SCALES", "matrix_dims", "base_value",
           "muon_scale"]

INIT_RULES: tuple[str, ...] = ("1/sqrt(fan_in)", "1/fan_in", "spectral")
UPDATE_RULES: tuple[str, ...] = ("spectral", "row_norm", "sign", "rms")
UPDATE_BY_FAMILY: dict[str, dict[str, str]] = {
    "muon": {"embedding": "row_norm", "hidden": "spectral", "readout": "row_norm", "gain": "sign", "bias": "rms"},
    "adam": {role: "adamw" for role in ROLES},
    "sgd": {role: "sgd" for role in ROLES},
}
MUON_SCALES: tuple[str, ...] = ("naive", "keller", "mup", "moonlight", "scheduled")


def matrix_dims(role: str, shape: Sequence[int]) -> tuple[int, int]:
    """(dout, din) of a parameter in the math sense y = x W: torch layout (dout, din), except that an
    embedding table (V, d) maps a one-hot of size V to d; vectors are (d, 1)."""
    if len(shape) == 1:
        return int(shape[0]), 1
    if role == "embedding":
        return int(shape[-1]), int(shape[-2])
    return int(shape[-2]), int(shape[-1])


def base_value(text: str, dout: int, din: int) -> float:
    """A number, or a shape rule from INIT_RULES evaluated at (dout, din)."""
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
