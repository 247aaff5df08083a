"""Colours every figure uses: readable on white. Pure Python (matplotlib's colormap only when asked).

WCAG 2's contrast ratio between two colours is (L₁ + 0.05) / (L₂ + 0.05), L the relative luminance of the
lighter and the darker; 3:1 is its minimum for graphics a reader must make out ("Web Content Accessibility
Guidelines 2.1", W3C, success criterion 1.4.11). Viridis' yellow end is about 1.2:1 on white.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["contrast_ratio", "readable", "ordered_colors", "MIN_CONTRAST", "WHITE"]

MIN_CONTRAST = 3.0
"""The least contrast ratio against white a line, marker or text colour may have."""
WHITE = (1.0, 1.0, 1.0)
DARKEN_STEP = 0.9
"""Each step toward black multiplies the colour's channels by this."""


def _luminance(rgb: Sequence[float]) -> float:
    """WCAG relative luminance of an sRGB colour with channels in [0, 1]."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(rgb: Sequence[float], background: Sequence[float] = WHITE) -> float:
    """The WCAG contrast ratio (1 … 21) between two sRGB colours."""
    a, b = _luminance(rgb), _luminance(background)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def readable(rgb: Sequence[float], background: Sequence[float] = WHITE) -> tuple[float, float, float]:
    """``rgb`` darkened toward black, hue kept, until its contrast against ``background`` is ``MIN_CONTRAST``."""
    colour = tuple(float(c) for c in rgb[:3])
    while contrast_ratio(colour, background) < MIN_CONTRAST:
        colour = tuple(c * DARKEN_STEP for c in colour)
    return colour  # type: ignore[return-value]


def ordered_colors(count: int, cmap: Any = None) -> list[tuple[float, float, float]]:
    """``count`` colours along viridis (or ``cmap``) from its dark end, each made ``readable`` on white: an
    ordered quantity (width, depth, horizon) reads as a gradient."""
    if cmap is None:
        import matplotlib

        cmap = matplotlib.colormaps["viridis"]
    span = max(1, count - 1)
    return [readable(cmap(0.9 * i / span)) for i in range(count)]
