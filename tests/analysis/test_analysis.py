"""Synthetic loss tables with known optima: the estimator, its flags and the verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mutransfer.analysis.drift import SearchSettings, analyze, drift, verdict
from mutransfer.analysis.optimum import Thresholds, fit_halfwidth, local_optimum, optimum


def bowl(optimum_at: dict[int, float], seeds: int = 1, noise: float = 0.003, curvature: float = 0.05,
         grid: np.ndarray = np.arange(-12.0, 1.0), seed: int = 0, setup: str = "s") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for width, opt in optimum_at.items():
        for s in range(seeds):
            for x in grid:
                loss = 2.0 + curvature * (x - opt) ** 2 + rng.normal(0, noise)
                rows.append({"setup": setup, "point": width, "seed": s, "x": float(x), "loss": loss, "status": "ok"})
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
    """Three seeds each: ``transfers`` needs the seeds' noise measured (one seed gives a resolution bound)."""
    flat = bowl({w: -5.0 for w in WIDTHS}, setup="flat", seeds=3)
    shifted = bowl({w: -5.0 - np.log2(w / 32) for w in WIDTHS}, setup="shift", seed=1)
    result = analyze(pd.concat([flat, shifted]))
    assert result["flat"].verdict == "transfers" and abs(result["flat"].slope) < 0.1
    assert result["shift"].verdict == "drifts"
    assert result["shift"].slope == pytest.approx(-1.0, abs=0.1)
    lo, hi = result["shift"].slope_ci
    assert lo < -1.0 < hi and hi < 0


def test_small_drifts_are_told_apart_like_mup_and_sp() -> None:
    """Measured with three seeds at four widths, a slope of -0.1 is shown to lie inside ±0.25 and one of -1.3
    outside; one seed of a -0.2 slope cannot show it (a resolution bound around a slope near the margin). Three
    widths no longer show -0.1 inside: the between-point scatter σ_b alone leaves the slope ±0.16 at 90 %."""
    mup = bowl({w: -4.5 - 0.1 * np.log2(w / 64) for w in (64, 128, 256, 512)}, seeds=3, setup="mup", seed=3)
    three = analyze(mup[mup["point"] < 512])["mup"]
    assert three.verdict == "inconclusive" and three.between_source == "calibrated"
    sp = bowl({w: -8.0 - 1.3 * np.log2(w / 64) for w in (64, 128, 256)}, seeds=3, setup="sp", seed=4,
              grid=np.arange(-14.0, -3.0))
    near = bowl({w: -4.5 - 0.2 * np.log2(w / 64) for w in (64, 128, 256)}, setup="near", seed=5)
    result = analyze(pd.concat([mup, sp, near]))
    assert result["mup"].verdict == "transfers"
    assert result["sp"].verdict == "drifts"
    assert result["near"].verdict == "inconclusive" and "noise_seeds" in result["near"].fix


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
    """A flat truth measured quietly transfers; measured noisily its interval spans ±0.25 and the verdict is
    inconclusive, saying why; half an octave per doubling measured quietly drifts."""
    flat = {w: -5.0 for w in WIDTHS}
    quiet = analyze(bowl(flat, seeds=2, noise=0.001))["s"]
    noisy = analyze(bowl(flat, seeds=2, noise=0.2, seed=5))["s"]
    width = lambda info: info.slope_ci[1] - info.slope_ci[0]  # noqa: E731
    assert width(noisy) > 2 * width(quiet), "the quiet one carries the between-point scatter σ_b, the noisy more"
    assert quiet.verdict == "transfers", quiet
    assert noisy.verdict == "inconclusive" and "90 % interval" in noisy.reason, noisy
    drifting = analyze(bowl({w: -5.0 - 0.5 * math.log2(w / WIDTHS[0]) for w in WIDTHS}, seeds=2, noise=0.001))["s"]
    assert drifting.verdict == "drifts" and drifting.slope_ci[0] < -0.5 < drifting.slope_ci[1]


def test_verdict_is_an_equivalence_test() -> None:
    """transfers: measured seed noise and the 90 % interval inside ±0.25; drifts: the 90 % interval wholly beyond
    the margin (a slope clear of 0 but possibly inside the margin is not a drift)."""
    assert verdict((-0.1, 0.24), "confidence") == "transfers"
    assert verdict((-0.1, 0.24), "resolution") == "inconclusive"
    assert verdict((-0.2, 0.4), "confidence") == "inconclusive"
    assert verdict((-1.3, -0.7), "confidence") == "drifts"
    assert verdict((-1.3, -0.7), "resolution") == "drifts"
    assert verdict((-1.3, -0.2), "confidence") == "inconclusive"
    assert verdict((-0.5, 0.3), "confidence") == "inconclusive"
    assert verdict((-0.3, -0.1), "confidence") == "inconclusive"
    assert verdict((0.1, 0.45), "confidence", Thresholds(transfer_slope=0.5)) == "transfers"


def test_drift_needs_two_widths() -> None:
    only = optimum(bowl({64: -5.0}), 64, step=1.0)
    assert only is not None
    fit = drift([only])
    assert fit.slope is None and fit.verdict == "inconclusive" and "two widths" in fit.reason


def test_an_optimum_past_the_grid_is_censored_and_blocks_the_verdict() -> None:
    """True LR* 2^-12 / 2^-13 / 2^-14 with the grid starting at 2^-11: bounds, never a 'transfers' at slope 0."""
    table = bowl({32: -12.0, 64: -13.0, 128: -14.0}, grid=np.arange(-11.0, -2.0))
    result = analyze(table)["s"]
    assert result.verdict == "inconclusive" and result.slope is None
    assert "low edge" in result.reason and "32, 64, 128" in result.reason
    assert "extend the grid below 2^-11" in result.fix
    assert all(w.censored == "low" and w.ci[0] == -np.inf for w in result.points.values())


def test_one_censored_width_is_left_out_of_the_slope() -> None:
    """Only the largest width past the edge: the slope comes from the others (not biased towards 0 by a
    bound), and the verdict waits for the grid to be extended."""
    table = bowl({32: -9.5, 64: -10.75, 128: -12.0 - 0.5}, grid=np.arange(-12.0, -2.0))
    result = analyze(table)["s"]
    assert result.used == [32, 64] and result.slope == pytest.approx(-1.25, abs=0.15)
    assert result.verdict == "inconclusive" and "128" in result.reason


def test_a_width_where_everything_diverged_stays_in_the_summary() -> None:
    table = bowl({w: -5.0 for w in WIDTHS})
    table.loc[table["point"] == 256, ["status", "loss"]] = ["diverged", np.nan]
    result = analyze(table)["s"]
    assert result.points[256].flags == ["all_diverged"] and result.points[256].x_star is None
    assert result.verdict == "inconclusive" and "256" in result.reason


def test_each_setup_is_analysed_with_its_own_step() -> None:
    fine = bowl({w: -5.3 for w in WIDTHS}, grid=np.arange(-8.0, -2.9, 0.5), setup="fine")
    coarse = bowl({w: -5.3 for w in WIDTHS}, grid=np.arange(-10.0, 0.5, 2.0), setup="coarse", seed=2)
    both = analyze(pd.concat([fine, coarse]), {"fine": SearchSettings(step=0.5), "coarse": SearchSettings(step=2.0)})
    lone = {name: analyze(part, SearchSettings(step=step))[name]
            for name, part, step in (("fine", fine, 0.5), ("coarse", coarse, 2.0))}
    for name in ("fine", "coarse"):
        assert both[name].slope == pytest.approx(lone[name].slope)
    assert both["fine"].points[64].window != both["coarse"].points[64].window


def test_seed_spread_gives_a_confidence_interval_and_one_seed_a_resolution_bound() -> None:
    one = analyze(bowl({w: -5.0 for w in WIDTHS}))["s"]
    three = analyze(bowl({w: -5.0 for w in WIDTHS}, seeds=3))["s"]
    assert one.ci_kind == "resolution" and one.verdict == "inconclusive" and "resolution" in one.reason
    assert {w.ci_kind for w in one.points.values()} == {"resolution"}
    assert {w.dof for w in one.points.values()} == {None}
    assert three.ci_kind == "confidence" and three.dof >= len(WIDTHS) * 2, "Satterthwaite: seeds and σ_b"
    assert all(len(w.seed_vertices) == 3 and w.dof == len(WIDTHS) * 2 for w in three.points.values())


def test_added_points_are_recorded() -> None:
    table = bowl({64: -5.0, 128: -6.0}, grid=np.arange(-9.0, -2.0))
    result = analyze(table, SearchSettings(step=1.0, low=-8.0, high=-3.0))["s"]
    assert result.points[64].added == [-9.0]


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


def test_a_vertex_past_the_window_is_censored_and_counts_at_its_bound() -> None:
    """The grid seed's lowest point is at 2^-8, but the two noise seeds keep falling across the window: their
    vertices lie past the window by more than a spacing. Each counts in the spread at that bound (leaving them out
    would keep only the seeds that happen to agree), and the interval reaches the bound."""
    grid = bowl({64: -8.0}, grid=np.arange(-12.0, -3.0))
    probes = pd.DataFrame([{"setup": "s", "point": 64, "seed": seed, "x": x, "loss": 2.03 - 0.01 * (x + 9) + 0.001 * seed,
                            "status": "ok"} for seed in (1, 2) for x in (-9.0, -8.0, -7.0)])
    opt = optimum(pd.concat([grid, probes]), 64, step=1.0)
    assert opt is not None and opt.window == [-9.0, -8.0, -7.0]
    assert "seed_censored:high" in opt.flags and opt.seed_censored == ["high"]
    assert opt.seed_vertices == pytest.approx([-8.0, -6.0, -6.0], abs=0.02) and opt.ci_kind == "confidence"
    assert opt.se == pytest.approx(np.std([-8.0, -6.0, -6.0], ddof=1) / np.sqrt(3), abs=0.02)
    assert -9.0 <= opt.x_star <= -7.0 and opt.ci[1] >= -6.0


def test_a_failed_lack_of_fit_is_worded_once_for_a_line_and_a_law() -> None:
    from mutransfer.analysis.drift import lack_of_fit_reason

    assert lack_of_fit_reason("the points lie off the law", 0.1234, {"F": 5.678, "p": 0.01234}) == (
        "the points lie off the law more than the seeds' noise and the between-point scatter (σ_b 0.12 octave) "
        "explain: F = 5.7, p = 0.012")
