"""The weighted regression of per-point optima on log2 of the swept axes, with the scatter of the points about it.
Pure numpy.

The optima carry the seeds' error (se_i, pooled with ν degrees of freedom), but a real law is a line only on
average: each point's true optimum sits off it by a between-point scatter σ_b (optima measured from many seeds
still miss the line). So the fit weighs each point by 1/(se_i² + σ_b²) and every interval carries σ_b:

- **Lack of fit** is Fisher's F: the weighted residual mean square with the seeds' errors alone,
  Q/(n − p), over the pure-error mean square (1 by construction, estimated with ν degrees of freedom); its tail
  p says whether the points sit off the line more than the seeds' noise explains.
- **σ_b** with fewer than ``MIN_POINTS_TO_ESTIMATE`` points per axis is ``BETWEEN_POINT_SD``, measured on this
  project's own sweeps (``scripts/calibrate_simulator.py``, docs/analysis.md) with ``CALIBRATION_DOF`` degrees of
  freedom: one or two residual degrees of freedom cannot estimate it. With more, the data's own estimate
  (DerSimonian and Laird's moment estimator, "Meta-analysis in clinical trials": (Q − E Q)/tr P, P the residual
  projection in the weighted metric) is pooled with the calibration's as variances are pooled, by degrees of
  freedom (n − p and ``CALIBRATION_DOF``), then clipped at 0. Alone, DerSimonian and Laird's estimate from
  four widths (2 degrees of freedom) is 0 too often: the slope's interval then held the truth 83–88 % of the
  time on the real-curve simulator.
- A law **fails** when its residuals exceed what the seeds' noise and σ_b explain (the same F with weights
  1/(se² + σ_b²), p < ``FAIL_P``): the verdict is then ``inconclusive``.
- The degrees of freedom of an interval are Satterthwaite's: the seeds' part of the variance carries ν,
  σ_b's part ``CALIBRATION_DOF`` (plus n − p when pooled).
- ``common_se`` is an error shared by every point (the bowl's asymmetry): it moves the intercept, not a slope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .stats import f_sf, satterthwaite

__all__ = ["Regression", "regress", "BETWEEN_POINT_SD", "MIN_POINTS_TO_ESTIMATE", "FAIL_P", "CALIBRATED_SOURCE",
           "POOLED_SOURCE", "CALIBRATION_DOF"]

BETWEEN_POINT_SD = 0.16
"""Octaves: the scatter of the true optima about a law, measured on this project's μP + Muon lines
(``departure`` of the real-curve calibration)."""
MIN_POINTS_TO_ESTIMATE = 4
"""Points per axis from which σ_b is estimated from the data rather than taken from the calibration."""
FAIL_P = 0.01
"""A law with a known σ_b fails the lack-of-fit test below this p."""
CALIBRATION_DOF = 9
"""The degrees of freedom behind ``BETWEEN_POINT_SD``: 5 lines' residuals (χ² 89.6 on 9)."""
CALIBRATED_SOURCE = "calibrated"
POOLED_SOURCE = "pooled"


@dataclass(frozen=True)
class Regression:
    coefficients: np.ndarray
    covariance: np.ndarray
    """The coefficients' covariance with σ_b and the common error included."""
    dof: Optional[float]
    """Degrees of freedom for the intervals' t quantiles (None: normal)."""
    between_sd: float
    between_source: str
    lack_of_fit: Optional[dict[str, Any]]
    """``{F, dof: [n − p, ν], p}``, None without residual degrees of freedom."""
    fails: bool
    weights: np.ndarray

    def lack_of_fit_line(self) -> str:
        """One line: the F test and the scatter carried."""
        scatter = f"σ_b {self.between_sd:.2f} octave ({self.between_source})"
        if self.lack_of_fit is None:
            return f"lack of fit: no residual degrees of freedom; {scatter}"
        lof = self.lack_of_fit
        den = "∞" if lof["dof"][1] is None else f"{lof['dof'][1]:g}"
        return f"lack of fit: F = {lof['F']:.2f} on ({lof['dof'][0]}, {den}), p = {lof['p']:.3f}; {scatter}"


def _residual_q(design: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """Σ w r² about the weighted fit, and the trace of the residual projection P = W − WX(XᵀWX)⁻¹XᵀW (computed
    without forming P: memory linear in the points)."""
    gram = np.linalg.pinv((design.T * weights) @ design)
    coefficients = gram @ (design.T @ (weights * y))
    residual = y - design @ coefficients
    trace = float(np.sum(weights) - np.trace(gram @ ((design.T * weights**2) @ design)))
    return float(np.sum(weights * residual**2)), trace


def _satterthwaite(design: np.ndarray, covariance: np.ndarray, weights: np.ndarray, se2: np.ndarray, tau2: float,
                   pure_dof: Optional[int], between_dof: Optional[int]) -> Optional[float]:
    """Satterthwaite's degrees of freedom of the coefficients' variance: its seeds' part estimated with
    ``pure_dof``, its between-point part with ``between_dof`` (None: known); None when neither part is estimated."""
    parts = []
    for variance, part_dof in ((se2, pure_dof), (np.full_like(se2, tau2), between_dof)):
        spread = covariance @ ((design.T * (weights**2 * variance)) @ design) @ covariance
        parts.append((float(np.trace(spread)), part_dof))
    return satterthwaite(parts)


def regress(design: np.ndarray, y: np.ndarray, se: np.ndarray, pure_dof: Optional[int], estimate_between: bool,
            common_se: float = 0.0) -> Regression:
    """Weighted least squares of ``y`` on ``design`` (a column of ones first) with σ_b carried; ``se`` the
    points' seed errors (pure error with ``pure_dof`` degrees of freedom, None for resolution bounds)."""
    n, p = design.shape
    se2 = np.maximum(se, 1e-6) ** 2
    resid_dof = n - p
    lack_of_fit = None
    q_pure, trace = _residual_q(design, y, 1.0 / se2)
    if resid_dof > 0:
        f = q_pure / resid_dof
        lack_of_fit = {"F": f, "dof": [resid_dof, pure_dof], "p": f_sf(f, resid_dof, pure_dof)}
    between_dof = CALIBRATION_DOF
    tau2, source = BETWEEN_POINT_SD**2, CALIBRATED_SOURCE
    if estimate_between and resid_dof > 0:
        expected = resid_dof * (pure_dof / (pure_dof - 2) if pure_dof and pure_dof > 2 else 1.0)
        if trace > 0:
            raw = (q_pure - expected) / trace
            tau2 = max(0.0, (CALIBRATION_DOF * tau2 + resid_dof * raw) / (CALIBRATION_DOF + resid_dof))
            between_dof, source = CALIBRATION_DOF + resid_dof, POOLED_SOURCE
    weights = 1.0 / (se2 + tau2)
    covariance = np.linalg.inv(design.T @ (weights[:, None] * design))
    coefficients = covariance @ (design.T @ (weights * y))
    dof = _satterthwaite(design, covariance, weights, se2, tau2, pure_dof, between_dof)
    fails = False
    if resid_dof > 0:
        q_total, _ = _residual_q(design, y, weights)
        fails = f_sf(q_total / resid_dof, resid_dof, dof) < FAIL_P
    covariance = covariance.copy()
    covariance[0, 0] += common_se**2
    return Regression(coefficients, covariance, dof, math.sqrt(tau2), source, lack_of_fit, fails, weights)
