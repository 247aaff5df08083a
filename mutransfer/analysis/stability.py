"""Pure pandas/numpy: width exponents of the coord check's measurements, compared with what a
width-stable, feature-learning model needs (stable and non-trivial updates: Yang & Hu, Tensor Programs IV;
Su, "Above MuP 3"), and a verdict per module.

Input: a tidy table ``width, step, module, quantity, value, seed``. For each (quantity, module, step) the
slope of log2(value) against log2(width) is fitted (seeds averaged in log space); with several seeds the
band is widened by twice the fit's standard error.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Band", "requirement", "fit_slopes", "verdicts", "judge", "DEFAULT_TOL"]

DEFAULT_TOL = 0.2
READOUT_OUTPUTS = ("logits", "*.router")
"""Modules whose output has a fixed size computed from the width, by coordinate-check name: the LM head's logits
and a mixture of experts' router logits (the readout-like roles, initialised ∝ 1/width)."""
LOGIT_UPDATE_BAND = (-0.5, 0.2)
"""The width exponents the logits' update may have (the readout's shrinking init still carries part of it)."""
EDGE_WEIGHT_UPDATE_BANDS: dict[str, tuple[float, float]] = {"embed*.weight": (0.0, 0.6), "lm_head.weight": (0.0, 0.65),
                                                             "blocks.*.router.weight": (0.0, 0.65)}
"""The width exponents of ‖ΔW‖₂ / ‖W₀‖₂ for the embeddings (token, and GPT-2's positions: ``embed_positions``)
and the LM head, by coordinate-check name pattern, set from measurement
(``scripts/coord_check_bands.py``: widths 32–256, 5 steps, 2 seeds, docs/coord-check.md): under correct μP they
grow like width^+0.25…+0.40 for Muon, AdamW and SGD alike (the vocabulary side of these V × d matrices does not
grow, so their spectral norms are not yet in the large-width regime); a readout LR exponent ½ too large (a lazy
readout) gives −0.15…−0.20, ½ too small +0.53…+0.83, an embedding init exponent ½ too large +0.78…+1.16. A
mixture of experts' router (E × d, E fixed) takes the LM head's band by the same argument (docs/moe.md)."""


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    text: str

    def contains(self, slope: float, widen: float = 0.0) -> bool:
        return self.low - widen <= slope <= self.high + widen


def requirement(quantity: str, module: str, step: int, tol: float = DEFAULT_TOL,
                logit_update: tuple[float, float] = LOGIT_UPDATE_BAND) -> Band:
    """The width exponent each measurement needs: Θ(1) everywhere, except that logits (the LM head's and a router's,
    ``READOUT_OUTPUTS``) may shrink (O(1)), their updates are judged in a wider band (the readout's shrinking init
    still carries part of them), and the embedding's and LM head's relative weight updates in the bands measured for
    correct μP."""
    readout = any(fnmatch.fnmatchcase(module, pattern) for pattern in READOUT_OUTPUTS)
    if readout and quantity == "forward":
        return Band(-math.inf, tol, f"≤ {tol:+.1f} (O(1))")
    if readout and quantity == "update":
        return Band(logit_update[0], logit_update[1], f"[{logit_update[0]:+.1f}, {logit_update[1]:+.1f}]")
    edge = next((band for pattern, band in EDGE_WEIGHT_UPDATE_BANDS.items() if fnmatch.fnmatchcase(module, pattern)),
                None)
    if quantity == "weight_update" and edge is not None:
        low, high = edge
        return Band(low, high, f"[{low:+.2f}, {high:+.2f}] (measured, μP)")
    return Band(-tol, tol, f"0 ± {tol:.1f} (Θ(1))")


def fit_slopes(table: pd.DataFrame, axis: str = "width") -> pd.DataFrame:
    """One row per (quantity, module, step): slope against log2 of ``axis`` (the table's width or depth
    column), its standard error and the sizes used (column ``widths`` or ``depths``)."""
    rows = []
    sizes = f"{axis}s"
    blown = table[~np.isfinite(table["value"])]
    for (quantity, module, step), _ in blown.groupby(["quantity", "module", "step"], sort=False):
        rows.append({"quantity": quantity, "module": module, "step": int(step), "slope": math.inf, "stderr": 0.0,
                     sizes: sorted(int(w) for w in table[axis].unique())})
    usable = table[(table["value"] > 0) & np.isfinite(table["value"])]
    usable = usable.merge(blown[["quantity", "module", "step"]].drop_duplicates(), how="left", indicator=True)
    usable = usable[usable["_merge"] == "left_only"].drop(columns="_merge")
    for (quantity, module, step), part in usable.groupby(["quantity", "module", "step"], sort=False):
        per_width = part.assign(logv=np.log2(part["value"])).groupby(axis)["logv"]
        means = per_width.mean()
        if len(means) < 2:
            continue
        x = np.log2(means.index.to_numpy(float))
        y = means.to_numpy(float)
        slope, intercept = np.polyfit(x, y, 1)
        se = 0.0
        n_seeds = part["seed"].nunique()
        if n_seeds > 1:
            spread = per_width.std(ddof=1).fillna(0.0).to_numpy(float) / math.sqrt(n_seeds)
            se = float(math.sqrt(np.sum(spread**2 * (x - x.mean()) ** 2)) / np.sum((x - x.mean()) ** 2))
        rows.append({"quantity": quantity, "module": module, "step": int(step), "slope": float(slope),
                     "stderr": se, sizes: [int(w) for w in means.index]})
    return pd.DataFrame(rows, columns=["quantity", "module", "step", "slope", "stderr", sizes])


def verdicts(slopes: pd.DataFrame, tol: float = DEFAULT_TOL,
             logit_update: tuple[float, float] = LOGIT_UPDATE_BAND) -> dict[str, Any]:
    """Per module: ``stable`` / ``grows`` / ``shrinks`` with the worst offending quantity and its slope."""
    modules: dict[str, Any] = {}
    checks = []
    for row in slopes.itertuples():
        band = requirement(row.quantity, row.module, row.step, tol, logit_update)
        ok = band.contains(row.slope, 2 * row.stderr)
        excess = 0.0 if ok else (row.slope - band.high if row.slope > band.high else row.slope - band.low)
        checks.append({"quantity": row.quantity, "module": row.module, "step": row.step, "slope": row.slope,
                       "stderr": row.stderr, "required": band.text, "ok": bool(ok), "excess": excess})
        entry = modules.setdefault(row.module, {"verdict": "stable", "worst": None, "excess": 0.0})
        if not ok and abs(excess) > abs(entry["excess"]):
            entry.update(verdict="grows" if excess > 0 else "shrinks", excess=excess,
                         worst={"quantity": row.quantity, "step": row.step, "slope": row.slope, "required": band.text})
    return {"modules": modules, "checks": checks, "stable": all(m["verdict"] == "stable" for m in modules.values())}


def judge(table: pd.DataFrame, tol: float = DEFAULT_TOL, axis: str = "width") -> dict[str, Any]:
    """Slopes, checks and a verdict per module for a coord-check table (the ``coord_check.json`` body); across
    depth the same bands apply to the exponents of depth."""
    slopes = fit_slopes(table, axis)
    result = verdicts(slopes, tol)
    result["slopes"] = slopes.to_dict(orient="records")
    return result
