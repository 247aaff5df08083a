"""The defaults the command line shows and the library's functions take, in one place: plain numbers, no imports,
so ``mutransfer --help`` can print them without loading the modules that use them."""

from __future__ import annotations

__all__ = ["BATCH_TOLERANCE", "EFFECT_MARGIN", "COMPARE_TOLERANCE", "TRANSFER_TOLERANCE", "VERIFY_SPAN", "VERIFY_STEP",
           "VERIFY_TOLERANCE", "INTERVAL_LEVEL", "INTERVAL_LEVELS", "option_text"]

BATCH_TOLERANCE = 0.01
"""Relative loss: a batch within this of the best batch's loss is as good (the critical batch's threshold)."""
EFFECT_MARGIN = 0.005
"""Nats: a tuned constant matters when its gain over factor 1 (the shipped value) exceeds this beyond the noise."""
COMPARE_TOLERANCE = 0.25
"""Octaves: ``compare`` calls a pooled shift whose 90 % interval lies inside ±this ``same``."""
TRANSFER_TOLERANCE = 1.0
"""Octaves: ``transfer`` warns when the predicted range at the target is wider than this."""
VERIFY_SPAN = 1.5
"""Octaves each side of the predicted η* that ``verify`` trains."""
VERIFY_STEP = 0.5
"""Octaves between ``verify``'s grid points."""
VERIFY_TOLERANCE = 0.5
"""Octaves of |measured − predicted| log2 η* that ``verify`` passes."""
INTERVAL_LEVEL = 95
"""Percent: the level of every interval a sweep's tables and notes print, and ``transfer``'s."""
INTERVAL_LEVELS = (95, 90)
"""The levels ``sweep --level`` prints: 90 % is the level the verdict reads the slope's interval at."""


def option_text(value: float) -> str:
    """A default as the command line shows and parses it (``1`` rather than ``1.0``)."""
    return f"{value:g}"
