"""The precision a number is written at in a file a person reads (a transfer file, YAML or JSON).

A measured η* is known to a tenth of an octave at best, so ``log2_lr: -2.389999999999943`` and
``lr: 0.19078240112007744`` show arithmetic, not knowledge. The rule:

- a log2 value or a count of octaves (log2 η*, its interval, a range's half-width, a slope in octaves per
  doubling, doublings extrapolated, a backtest's median miss): ``OCTAVE_DECIMALS`` decimals, a thousandth of an
  octave;
- a learning rate or another searched value found by a sweep (η*, its range, a predicted decay):
  ``LR_DIGITS`` significant digits, the fewest that carry its log2's thousandth both ways (2^-2.39 is written
  0.19078, whose log2 is -2.39 again: a relative error under 5e-5 moves log2 by under 1e-4 octave);
- any other computed float: ``NOISE_DIGITS`` significant digits, which drops float noise
  (``0.30000000000000004`` → ``0.3``) and keeps every digit the inputs gave.

``written`` applies it to a document by key name; NaN and infinities are kept. Plain data: no numpy."""

from __future__ import annotations

import math
from typing import Any, Callable, Collection

__all__ = ["OCTAVE_DECIMALS", "LR_DIGITS", "NOISE_DIGITS", "OCTAVE_KEYS", "LR_KEYS", "octaves", "lr_digits",
           "without_noise", "written"]

OCTAVE_DECIMALS = 3
LR_DIGITS = 5
NOISE_DIGITS = 12
OCTAVE_KEYS = frozenset({"log2_lr", "interval", "half_width", "extrapolated_doublings", "implied_error_octaves",
                         "extrapolated_octaves", "slopes", "median_miss"})
"""Keys whose values (and every number under them) are log2 values or octaves."""
LR_KEYS = frozenset({"lr", "lr_range"})
"""Keys whose values are learning rates found by a sweep."""

Rule = Callable[[float], float]


def octaves(value: float) -> float:
    """``value`` to ``OCTAVE_DECIMALS`` decimals (``-0.0`` written ``0.0``)."""
    return round(value, OCTAVE_DECIMALS) + 0.0 if math.isfinite(value) else value


def lr_digits(value: float) -> float:
    """``value`` to ``LR_DIGITS`` significant digits."""
    return float(f"{value:.{LR_DIGITS}g}") if math.isfinite(value) else value


def without_noise(value: float) -> float:
    """``value`` to ``NOISE_DIGITS`` significant digits: its float noise dropped."""
    return float(f"{value:.{NOISE_DIGITS}g}") if math.isfinite(value) else value


def written(data: Any, octave_keys: Collection[str] = OCTAVE_KEYS, lr_keys: Collection[str] = LR_KEYS) -> Any:
    """``data`` (dicts and lists walked) with every float at the precision it is written at: under a key of
    ``octave_keys`` ``octaves``, under one of ``lr_keys`` ``lr_digits``, elsewhere ``without_noise``."""
    return _walk(data, without_noise, frozenset(octave_keys), frozenset(lr_keys))


def _walk(data: Any, rule: Rule, octave_keys: frozenset[str], lr_keys: frozenset[str]) -> Any:
    if isinstance(data, float):
        return rule(data)
    if isinstance(data, dict):
        return {key: _walk(value, octaves if key in octave_keys else lr_digits if key in lr_keys else rule,
                           octave_keys, lr_keys) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_walk(value, rule, octave_keys, lr_keys) for value in data]
    return data
