"""verify's parts without training: the grid around the prediction, the anchor in the policy, the error and
regret estimates, and their intervals' coverage checked by simulation from a known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mutransfer.analysis.fidelity import measure_fidelity
from mutransfer.sweep.plan.policy import GridPolicy
from mutransfer.simulation.simulate import Truth
from mutransfer.simulation.simulated_rates import verify_coverage
from mutransfer.sweep.spec.sweep_spec import SearchSpec
from mutransfer.transfer.verify import VerifyRequest, verify_search

REQUEST = VerifyRequest(widths=(512,))


@pytest.mark.parametrize("p", [-4.15, -8.649, -3.0, 0.26])
def test_the_grid_sits_on_the_lattice_around_the_prediction(p: float) -> None:
    search = verify_search(SearchSpec(noise_seeds=2), p, REQUEST)
    grid = search.grid()
    assert len(grid) == 7 and all(abs(x / 0.5 - round(x / 0.5)) < 1e-9 for x in grid)
    assert abs((grid[0] + grid[-1]) / 2 - p) <= 0.25 + 1e-9
    assert search.anchors == (round(p, 10),) and search.extend and search.noise_seeds == 2
    assert search.on_grid(p) == (abs(p / 0.5 - round(p / 0.5)) < 1e-6)


def test_a_plain_and_a_corrected_prediction_share_the_lattice() -> None:
    a, b = verify_search(SearchSpec(), -4.15, REQUEST), verify_search(SearchSpec(), -4.02, REQUEST)
    assert set(a.grid()) == set(b.grid()) and a.anchors != b.anchors


def test_the_anchor_is_trained_by_every_seed_and_never_places_the_optimum() -> None:
    p = -4.3
    search = verify_search(SearchSpec(noise_seeds=2), p, REQUEST)
    policy = GridPolicy(search, 0, (1, 2))
    first = policy.initial_points()
    assert [(x, s) for x, s in first if x == round(p, 10)] == [(round(p, 10), 0), (round(p, 10), 1), (round(p, 10), 2)]
    assert policy.budget() == 7 + 5 * 2 + 3
    bowl = {x: 3.0 + 0.2 * (x + 4.5) ** 2 for x in search.grid()}   # the grid's optimum at -4.5: inside
    finished = [(x, 0, loss) for x, loss in bowl.items()] + [(round(p, 10), 0, 0.0)]   # a freak low at the anchor
    probes = policy.next_points(finished)
    assert probes and {x for x, _ in probes} == {-5.5, -5.0, -4.5, -4.0, -3.5} and {s for _, s in probes} == {1, 2}
    edge = {x: 3.0 - 0.1 * x for x in search.grid()}   # best at the high edge: the grid extends past it
    assert policy.next_points([(x, 0, loss) for x, loss in edge.items()]) == [(search.max + 0.5, 0)]


def _bowl(x: np.ndarray, seed: np.ndarray, centre: float, offsets: dict[int, float]) -> np.ndarray:
    return 2.0 + np.array([offsets[s] for s in seed]) + 0.2 * (x - centre) ** 2


def test_error_and_regret_of_a_known_bowl() -> None:
    p, centre = -4.0, -5.0
    grid = np.arange(-5.5, -2.49, 0.5)
    window = np.array([-6.0, -5.5, -5.0, -4.5, -4.0])
    x = np.concatenate([grid, [-6.0], window, window])
    seed = np.array([0] * (len(grid) + 1) + [1] * 5 + [2] * 5)
    offsets = {0: 0.0, 1: 0.05, 2: -0.03}
    loss = _bowl(x, seed, centre, offsets)
    fidelity = measure_fidelity(512, x, seed, loss, np.array(["ok"] * len(x)), p, 0, 0.5)
    assert fidelity.measured is not None and fidelity.measured.censored is None
    assert fidelity.error == pytest.approx(-1.0, abs=1e-6)
    assert fidelity.regret is not None and fidelity.regret.seeds == 3
    assert fidelity.regret.nats == pytest.approx(0.2, abs=1e-6)   # 0.2 nats/octave² × 1 octave², offsets cancel
    assert fidelity.regret.nats_ci == pytest.approx((0.2, 0.2), abs=1e-6)
    assert fidelity.within(1.01) and not fidelity.within(0.99)


def test_a_diverged_prediction_has_no_regret_and_says_why() -> None:
    p = -2.0
    x = np.arange(-5.0, -1.9, 0.5)
    seed = np.zeros(len(x), int)
    status = np.where(x >= p, "diverged", "ok")
    loss = np.where(status == "ok", 2.0 + 0.2 * (x + 4.0) ** 2, math.nan)
    fidelity = measure_fidelity(512, x, seed, loss, status, p, 0, 0.5)
    assert fidelity.regret is None and "diverged" in fidelity.note and fidelity.error == pytest.approx(-2.0, abs=0.2)


@pytest.mark.parametrize("error", [0.0, 0.4, 1.2])
def test_intervals_cover_the_truth_in_simulation(error: float) -> None:
    """A symmetric bowl with seed noise in both the optimum and the loss level: the error's and the regret's
    95 % intervals hold the true values about 95 % of the time (400 simulated verifies per case)."""
    truth = Truth(x0=-4.0, curvature=0.2, noise=0.015, seed_shift=0.1, loss_offset=0.02)
    p = truth.x0 - error
    result = verify_coverage(truth, verify_search(SearchSpec(noise_seeds=2), p, REQUEST), p, sims=400, seed=7)
    assert 0.9 <= result["error_coverage"] <= 0.99, result
    assert 0.9 <= result["regret_coverage"] <= 0.99, result
    assert abs(result["error_bias"]) < 0.03 and abs(result["regret_bias"]) < 0.005, result
