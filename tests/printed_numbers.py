"""A page's printed numbers against the ones a script recomputes from a kept table, equal within one unit of the
last printed digit: another CPU's BLAS (another instruction set, another summation order) moves a value that sits
on a rounding boundary by one unit of its last digit, and the page is still right."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["NUMBER", "missing_lines", "same_print"]

NUMBER = re.compile(r"[+\-−]?\d+(?:\.\d+)?(?:[eE][+\-]?\d+)?")
"""A printed number: an optional sign (ASCII or the typographic minus), digits, decimals, an exponent."""


def _value(token: str) -> float:
    return float(token.replace("−", "-"))


def _unit(token: str) -> float:
    """One unit of ``token``'s last printed digit (``-0.04`` → 0.01, ``2.104`` → 0.001, ``1e-05`` → 1e-05)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def same_print(expected: str, shown: str) -> bool:
    """Whether ``shown`` is ``expected`` with each number at most one unit of its last printed digit away (and
    printed to as many digits), every other character the same."""
    if NUMBER.split(expected) != NUMBER.split(shown):
        return False
    wanted, printed = NUMBER.findall(expected), NUMBER.findall(shown)
    return len(wanted) == len(printed) and all(
        _unit(a) == _unit(b) and abs(_value(a) - _value(b)) <= _unit(b) * (1 + 1e-9) for a, b in zip(wanted, printed))


def missing_lines(lines: Iterable[str], text: str) -> list[str]:
    """The non-empty ``lines`` that no line of ``text`` prints the same (``same_print``; indentation aside)."""
    shown = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line.strip() and line.strip() not in shown
            and not any(same_print(line.strip(), s) for s in shown)]
