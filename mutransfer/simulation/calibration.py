"""The real-curve simulator's defaults: how this project's own sweeps depart from the ideal bowl, as measured by
``scripts/calibrate_simulator.py`` from the run tables kept in ``docs/data/`` (docs/analysis.md says how each
number was measured). ``real_truth`` is the simulator at these values; ``departures()`` names each departure so a
study can switch them on one at a time."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..analysis.bowl import TYPICAL_ASYMMETRY
from ..analysis.regression import BETWEEN_POINT_SD
from .simulate import Truth

__all__ = ["CALIBRATED", "FLAT_CURVATURE", "BOWLS", "departures", "real_truth", "one_departure"]

CALIBRATED: dict[str, float] = {
    "curvature": 0.41,
    "asymmetry": TYPICAL_ASYMMETRY,
    "noise": 0.028,
    "seed_shift": 0.094,
    "seed_correlation": 0.0,
    "seed_curvature": 0.0,
    "curvature_slope": -0.065,
    "asymmetry_slope": 0.25,
    "departure": BETWEEN_POINT_SD,
    "noise_growth": 0.73,
    "spike_rate": 0.0,
    "spike_size": 0.0,
}
"""``Truth`` fields at the values ``scripts/calibrate_simulator.py`` measures on μP + Muon's curves in docs/data/
(two significant digits; ``--check`` and tests/simulation/test_calibration.py hold them to it). A quantity the tables cannot
resolve stays 0: the seeds' correlation across widths and their own curvature (8 seeds), loss spikes (none seen).
On these short runs the bowl is steeper below the optimum than above it (asymmetry < 1); ``FLAT_CURVATURE`` is
AdamW's bowl. ``departure`` and ``asymmetry`` are the analysis's own between-point scatter and the asymmetry it
assumes where it cannot measure one, kept in one place (``analysis.regression.BETWEEN_POINT_SD``,
``analysis.bowl.TYPICAL_ASYMMETRY``)."""

FLAT_CURVATURE = 0.13
"""The curvature of the AdamW bowls (nats per octave², low side), measured like ``CALIBRATED['curvature']``."""

BOWLS = ("muon", "adamw")
"""The calibrated bowls: μP + Muon's (``CALIBRATED``) and AdamW's flatter one (``FLAT_CURVATURE``)."""


def departures() -> dict[str, dict[str, float]]:
    """Each departure from the ideal simulator: the ``Truth`` fields that make it, at their calibrated values."""
    c = CALIBRATED
    return {"asymmetry": {"asymmetry": c["asymmetry"]},
            "shape along the axes": {"curvature_slope": c["curvature_slope"], "asymmetry_slope": c["asymmetry_slope"]},
            "seed shift": {"seed_shift": c["seed_shift"]},
            "correlated seeds": {"seed_shift": c["seed_shift"], "seed_correlation": c["seed_correlation"]},
            "seed curvature": {"seed_curvature": c["seed_curvature"]},
            "off the law": {"departure": c["departure"]},
            "noise growth, spikes": {"noise_growth": c["noise_growth"], "spike_rate": c["spike_rate"],
                                     "spike_size": c["spike_size"]},
            "flat bowl": {"curvature": FLAT_CURVATURE}}


def real_truth(bowl: str = "muon", **changes: Any) -> Truth:
    """The simulator at the calibrated values, with μP + Muon's bowl or AdamW's flatter one; ``changes`` override
    fields (e.g. ``slope=-0.5``)."""
    if bowl not in BOWLS:
        raise ValueError(f"bowl {bowl!r} is not one of {BOWLS}")
    curvature = {"curvature": FLAT_CURVATURE} if bowl == "adamw" else {}
    return replace(Truth(**CALIBRATED), **{**curvature, **changes})


def one_departure(name: str, **changes: Any) -> Truth:
    """The ideal simulator with one departure (a key of ``departures()``) at its calibrated value."""
    return replace(Truth(), **{**departures()[name], **changes})
