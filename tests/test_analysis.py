"""Synthetic loss tables with known optima: the estimator, its flags and the verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mutransfer.analysis.drift import analyze, drift, verdict
from mutransfer.analysis.optimum import Thresholds, fit_halfwidth, local_optimum, optimum


def bowl(optimum_at: dict[int, float], seeds: int = 1, noise: float = 0.003, curvature: float = 0.05,
         grid: np.ndarray = np.arange(-12.0, 1.0), seed: int = 0, setup: str = "s") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for width, opt in optimum_at.items():
        for s in range(seeds):
            for x in grid:
                loss = 2.0 + curvature * (x - opt) ** 2 + rng.normal(0, noise)
                rows.append({"setup": setup, "width": width, "seed": s, "x": float(x), "loss": loss, "status": "ok"})
    return pd.DataFrame(rows)


WIDTHS = (32, 64, 128, 256)


@pytest.mark.parametrize("seeds", [1, 2, 4])
def test_recovers_optimum_between_grid_points(seeds: int) -> None:
    table = bowl({64: -5.4}, seeds=seeds)
    opt = optimum(table, 64, step=1.0)
    assert opt is not None
    assert opt.x_star == pytest.approx(-5.4, abs=0.1)
    assert opt.ci[0] < -5.4 < opt.ci[1]
    assert opt.flags == []


def test_no_shift_transfers_and_octave_shift_drifts() -> None:
    flat = bowl({w: -5.0 for w in WIDTHS}, setup="flat")
    shifted = bowl({w: -5.0 - np.log2(w / 32) for w in WIDTHS}, setup="shift", seed=1)
    result = analyze(pd.concat([flat, shifted]), step=1.0)
    assert result["flat"]["verdict"] == "transfers" and abs(result["flat"]["slope"]) < 0.1
    assert result["shift"]["verdict"] == "drifts"
    assert result["shift"]["slope"] == pytest.approx(-1.0, abs=0.1)
    lo, hi = result["shift"]["slope_ci"]
    assert lo < -1.0 < hi and hi < 0


def test_small_drifts_are_told_apart_like_mup_and_sp() -> None:
    mup = bowl({w: -4.5 - 0.2 * np.log2(w / 64) for w in (64, 128, 256)}, setup="mup", seed=3)
    sp = bowl({w: -8.0 - 1.3 * np.log2(w / 64) for w in (64, 128, 256)}, setup="sp", seed=4,
              grid=np.arange(-14.0, -3.0))
    result = analyze(pd.concat([mup, sp]), step=1.0)
    assert result["mup"]["verdict"] == "transfers"
    assert result["sp"]["verdict"] == "drifts"


def test_edge_of_grid_is_flagged_with_direction() -> None:
    low = optimum(bowl({64: -14.0}), 64, step=1.0)
    high = optimum(bowl({64: 3.0}), 64, step=1.0)
    assert low is not None and "edge_of_grid:low" in low.flags
    assert high is not None and "edge_of_grid:high" in high.flags


def test_flat_curve_is_flagged_with_a_wide_interval() -> None:
    opt = optimum(bowl({64: -5.0}, curvature=0.0005, noise=0.0), 64, step=1.0)
    assert opt is not None and "flat" in opt.flags
    assert opt.ci[1] - opt.ci[0] >= 4


def test_diverged_trials_cap_the_optimum() -> None:
    table = bowl({64: -5.0}, grid=np.arange(-10.0, -3.0))
    table.loc[table["x"] >= -4.0, "status"] = "diverged"
    table.loc[table["x"] >= -4.0, "loss"] = np.nan
    opt = optimum(table, 64, step=1.0)
    assert opt is not None and opt.diverged_above == -4.0
    assert opt.ci[1] <= -4.0 and opt.x_star <= -4.0


def test_uncertainty_grows_with_noise_and_drives_the_verdict() -> None:
    quiet = analyze(bowl({w: -5.0 for w in WIDTHS}, seeds=2, noise=0.001), step=1.0)["s"]
    noisy = analyze(bowl({w: -5.0 for w in WIDTHS}, seeds=2, noise=0.2, seed=5), step=1.0)["s"]
    width = lambda info: info["slope_ci"][1] - info["slope_ci"][0]  # noqa: E731
    assert width(noisy) > width(quiet)


def test_verdict_thresholds() -> None:
    assert verdict(0.1, (-0.2, 0.4)) == "transfers"
    assert verdict(-1.0, (-1.4, -0.6)) == "drifts"
    assert verdict(-0.5, (-1.5, 0.5)) == "inconclusive"
    assert verdict(0.1, (-1.0, 1.2)) == "inconclusive"
    assert verdict(0.3, (0.1, 0.5), Thresholds(transfer_slope=0.5)) == "transfers"


def test_drift_needs_two_widths() -> None:
    only = optimum(bowl({64: -5.0}), 64, step=1.0)
    assert only is not None and drift([only]) is None


def test_a_one_octave_window_averages_the_noise_of_a_fine_grid() -> None:
    """On a quarter-step grid with loss noise, the local quadratic over ±1 octave beats the three-point
    parabola, and its residual-based interval covers the truth."""
    grid = np.arange(-10.0, 0.01, 0.25)
    errors: dict[float, list[float]] = {0.25: [], 1.0: []}
    covered = 0
    for seed in range(20):
        table = bowl({64: -5.3}, noise=0.01, grid=grid, seed=seed)
        for half in errors:
            opt = optimum(table, 64, step=0.25, halfwidth=half)
            assert opt is not None
            errors[half].append(abs(opt.x_star + 5.3))
            if half == 1.0:
                covered += opt.ci[0] <= -5.3 <= opt.ci[1]
    assert np.mean(errors[1.0]) < 0.5 * np.mean(errors[0.25])
    assert covered >= 17


def test_fit_window_is_at_least_an_octave_on_log2_scales() -> None:
    assert fit_halfwidth(0.25, log2=True) == 1.0 and fit_halfwidth(2.0, log2=True) == 2.0
    assert fit_halfwidth(0.05, log2=False) == 0.05
    x_star, nearest = local_optimum({float(x): (x + 3.1) ** 2 for x in range(-8, 1)}, 1.0)
    assert x_star == pytest.approx(-3.1) and nearest == -3.0


def test_the_interval_holds_the_estimate_even_below_a_diverged_point() -> None:
    """A diverged LR below the fitted optimum (divergence is not always monotone) caps the interval, but
    never above the estimate itself; a fine grid is not called flat for rising little over one step."""
    table = bowl({64: -5.0}, grid=np.arange(-8.0, -2.9, 0.25))
    table.loc[table["x"] == -5.5, ["status", "loss"]] = ["diverged", np.nan]
    opt = optimum(table, 64, step=0.25, halfwidth=1.0)
    assert opt is not None and opt.diverged_above == -5.5
    assert opt.ci[0] <= opt.x_star <= opt.ci[1] and opt.x_star == pytest.approx(-5.0, abs=0.1)
    assert "flat" not in opt.flags
