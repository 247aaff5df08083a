"""The analysis checked by simulation from a known truth (pure numpy, seeded): do the 95 % intervals hold
the true optimum and slope as often as they claim, and how often is each verdict wrong?

Each cell simulates 1000 sweeps through the real policies (grid, extension, noise probes) and the real
analysis; ``python -m pytest -m slow`` runs the wider table, ``scripts/bench_coverage.py`` prints it."""

from __future__ import annotations

import pytest

from mutransfer.sweep.simulate import Design, Truth
from mutransfer.sweep.simulated_rates import coverage, law_coverage

SIMS = 1000
PROBES = Design()
THREE_SEEDS = Design(seeds=3, noise_seeds=0)
QUARTER = Design(step=0.25)


@pytest.mark.parametrize("noise, design", [(0.005, PROBES), (0.04, PROBES), (0.005, THREE_SEEDS),
                                           (0.04, THREE_SEEDS), (0.04, QUARTER)],
                         ids=["probes-0.005", "probes-0.04", "3seeds-0.005", "3seeds-0.04", "quarter-0.04"])
def test_intervals_cover_the_truth_on_symmetric_bowls(noise: float, design: Design) -> None:
    result = coverage(Truth(curvature=0.2, noise=noise), design, SIMS)
    assert result["width_coverage"] >= 0.9, result
    assert result["slope_coverage"] >= 0.9, result


def test_the_slope_interval_covers_the_truth_on_asymmetric_bowls() -> None:
    """The high side 4× steeper and diverging past it: every width's vertex is biased alike, the slope not."""
    result = coverage(Truth(curvature=0.2, asymmetry=4.0, diverge_after=1.5, noise=0.02), PROBES, SIMS)
    assert result["slope_coverage"] >= 0.9, result
    assert result["width_coverage"] < 0.5, "a biased vertex must show up here, or this test checks nothing"


def test_a_flat_truth_transfers() -> None:
    assert coverage(Truth(curvature=0.2, noise=0.02), PROBES, SIMS)["transfers"] >= 0.8


@pytest.mark.parametrize("curvature", [0.2, 0.05])
def test_a_drift_of_half_an_octave_almost_never_transfers(curvature: float) -> None:
    result = coverage(Truth(slope=-0.5, curvature=curvature, noise=0.04), PROBES, SIMS)
    assert result["transfers"] <= 0.05, result


def test_an_optimum_past_the_edge_never_transfers_without_extension() -> None:
    """True LR* 2^-9.5 … 2^-10.5 with the grid starting at 2^-8 and no extension: every width is censored."""
    result = coverage(Truth(x0=-9.5, slope=-0.5), Design(extend=False), SIMS)
    assert result["transfers"] == 0.0 and result["inconclusive"] == 1.0


def test_the_extension_brackets_an_optimum_past_the_edge() -> None:
    result = coverage(Truth(x0=-9.5, slope=-0.5), PROBES, SIMS)
    assert result["drifts"] >= 0.95 and result["slope_coverage"] >= 0.9, result


@pytest.mark.slow
@pytest.mark.parametrize("noise", [0.005, 0.01, 0.02, 0.04])
@pytest.mark.parametrize("design", [PROBES, THREE_SEEDS, QUARTER, Design(step=0.25, seeds=3, noise_seeds=0)],
                         ids=["probes", "3seeds", "quarter", "quarter-3seeds"])
def test_coverage_table_at_curvature_0_2(noise: float, design: Design) -> None:
    result = coverage(Truth(curvature=0.2, noise=noise), design, 3 * SIMS, seed=7)
    assert result["width_coverage"] >= 0.9 and result["slope_coverage"] >= 0.9, result
    assert result["transfers"] >= 0.8, result


@pytest.mark.parametrize("slope", [0.0, -0.5])
def test_the_predicted_range_at_4096_holds_the_truth(slope: float) -> None:
    """From widths 32–128 to 4096: the plain η* range (slope 0) and the drift-corrected one (slope −0.5)."""
    assert coverage(Truth(slope=slope, curvature=0.2, noise=0.02), PROBES, SIMS)["prediction_coverage"] >= 0.9


AXES_POINTS = [{"width": 32, "depth": 2, "steps": 150}, {"width": 64, "depth": 2, "steps": 150},
               {"width": 128, "depth": 2, "steps": 150}, {"width": 32, "depth": 4, "steps": 150},
               {"width": 32, "depth": 2, "steps": 300}]


@pytest.mark.parametrize("noise", [0.005, 0.02])
def test_the_law_covers_every_slope_and_its_prediction_far_from_the_points(noise: float) -> None:
    """sweeps/axes.yaml's design (widths 32–128, depths 2–4, steps 150–300, one axis at a time), a truth with a
    depth and a horizon slope, the prediction at width 256, depth 8, steps 600 with every slope applied."""
    slopes = {"width": 0.0, "depth": -0.5, "steps": -0.3}
    result = law_coverage(Truth(curvature=0.2, noise=noise), slopes, AXES_POINTS, PROBES, 400,
                          {"width": 256, "depth": 8, "steps": 600})
    assert result["fitted"] >= 0.95, result
    assert min(result[f"{axis}_coverage"] for axis in slopes) >= 0.9, result
    assert result["prediction_coverage"] >= 0.9, result
