"""The real-curve simulator's calibration (``scripts/calibrate_simulator.py``): the tables kept under docs/data/
reproduce ``CALIBRATED`` and ``FLAT_CURVATURE``, and its estimators recover a known truth from simulated sweeps."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from conftest import load_script
from mutransfer.analysis.drift import SearchSettings
from mutransfer.analysis.result import AxisFit, PointResult
from mutransfer.schema import LR_KEY
from mutransfer.simulation.calibration import CALIBRATED, FLAT_CURVATURE
from mutransfer.simulation.calibration_tables import last_digit
from mutransfer.simulation.simulate import SharedSeeds, SimulatedPoint, Truth

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def calibration() -> ModuleType:
    """The measurement (``mutransfer.simulation.measured_calibration``)."""
    import mutransfer.simulation.measured_calibration as measured

    return measured


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """``scripts/calibrate_simulator.py``: the kept tables and the command line."""
    return load_script("calibrate_simulator")


def test_the_committed_tables_reproduce_the_defaults(calibration: ModuleType, script: ModuleType) -> None:
    tables = [calibration.load(d) for d in script.TABLES]
    values, flat = calibration.calibrated(calibration.measure(tables).measurements)
    assert calibration.differences(values, flat) == [], \
        "rerun python scripts/calibrate_simulator.py and copy its CALIBRATED into mutransfer/simulation/calibration.py"
    assert set(values) == set(CALIBRATED)


def test_a_calibrated_value_may_move_one_unit_of_its_last_digit_and_no_more(calibration: ModuleType) -> None:
    """Another CPU's BLAS rounds a measurement on a rounding boundary the other way: one unit of the last
    significant digit is the same calibration, two are a different one."""
    name, value = next((k, v) for k, v in CALIBRATED.items() if v)
    one, two = dict(CALIBRATED), dict(CALIBRATED)
    one[name], two[name] = value + 0.9 * last_digit(value), value + 2 * last_digit(value)
    assert calibration.differences(one, FLAT_CURVATURE) == []
    assert [line.split(":")[0] for line in calibration.differences(two, FLAT_CURVATURE)] == [name]
    assert calibration.differences(CALIBRATED, FLAT_CURVATURE - 2 * last_digit(FLAT_CURVATURE))


def test_check_exits_zero_on_the_committed_tables(script: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert script.main(["--check"]) == 0
    assert "CALIBRATED = " in capsys.readouterr().out


def simulated_table(calibration: ModuleType, truth: Truth, seeds: int, widths: tuple[int, ...] = (32, 64)) -> object:
    """A seed study drawn from ``truth``: every seed trains the whole half-octave grid 2^-8 … 2^-2 at each width."""
    rng = np.random.default_rng(0)
    shared = SharedSeeds(rng)
    rows = []
    for w in widths:
        width = SimulatedPoint(truth, truth.optimum(w, widths[0]), rng, math.log2(w / widths[0]), shared)
        for seed in range(seeds):
            for x in np.arange(-8.0, -1.99, 0.5):
                width.train(float(x), seed)
        rows += [{"setup": "mup_muon", "parametrization": "mup", "optimizer": "muon", "width": w, "seed": s,
                  "search_key": LR_KEY, "log2_lr": x, "val_loss": loss, "status": status, "seconds": 1.0}
                 for x, s, loss, status in width.points]
    return calibration.Table("simulated", pd.DataFrame(rows), {"mup_muon": SearchSettings(step=0.5)})


def test_the_estimators_recover_a_known_truth(calibration: ModuleType) -> None:
    """Asymmetry 2, seed shift 0.3 octaves correlated 0.7 across widths, seed curvature 0.3, 200 seeds."""
    truth = Truth(x0=-5.0, curvature=0.2, asymmetry=2.0, noise=0.01, seed_shift=0.3, seed_correlation=0.7,
                  seed_curvature=0.3)
    table = simulated_table(calibration, truth, seeds=200)
    curves = calibration.curves(table)
    shapes = {m.name: m for m in calibration.shape_measurements(curves, {"simulated": table})}
    assert shapes["asymmetry"].value == pytest.approx(2.0, abs=0.25)
    assert shapes["curvature"].value == pytest.approx(0.2, abs=0.03)
    noise = {m.name: m for m in calibration.noise_measurements(curves)}
    assert noise["noise"].value == pytest.approx(0.01, abs=0.002)
    assert not noise["noise_growth"].resolved and not noise["spike_rate"].resolved
    seeds = {m.name: m for m in calibration.seed_measurements(table)}
    assert all(m.resolved for m in seeds.values()), seeds
    assert seeds["seed_shift"].value == pytest.approx(0.3, abs=0.05)
    assert seeds["seed_correlation"].value == pytest.approx(0.7, abs=0.15)
    assert seeds["seed_curvature"].value == pytest.approx(0.3, abs=0.08)


def test_independent_seeds_show_no_correlation(calibration: ModuleType) -> None:
    table = simulated_table(calibration, Truth(x0=-5.0, curvature=0.2, noise=0.01, seed_shift=0.3), seeds=60)
    seeds = {m.name: m for m in calibration.seed_measurements(table)}
    assert seeds["seed_shift"].resolved and not seeds["seed_correlation"].resolved
    assert not seeds["seed_curvature"].resolved


@pytest.mark.parametrize("truth, expected", [
    (Truth(x0=-5.0, curvature=0.2, noise=0.01, seed_shift=0.1, noise_growth=1.0), {"noise_growth": 1.0}),
    (Truth(x0=-5.0, curvature=0.2, noise=0.01, seed_shift=0.1, spike_rate=0.05, spike_size=0.1),
     {"spike_rate": 0.05, "spike_size": 0.1})], ids=["noise-growth", "spikes"])
def test_noise_growth_and_spikes_are_found_when_present(calibration: ModuleType, truth: Truth,
                                                       expected: dict[str, float]) -> None:
    """Each found and within a factor of two of the truth (the bowl fit absorbs part of each: biased low)."""
    found = {m.name: m for m in calibration.noise_measurements(calibration.curves(
        simulated_table(calibration, truth, seeds=100)))}
    for name in ("noise_growth", "spike_rate", "spike_size"):
        assert found[name].resolved == (name in expected), found[name]
    for name, value in expected.items():
        assert value / 2 <= found[name].value <= 2 * value, found[name]


def width_line(optima: dict[int, float], se: float = 0.15) -> AxisFit:
    """A width line whose points hold the measured optima ``optima`` (width → x*), each with standard error ``se``."""
    return AxisFit(axis="width", verdict="inconclusive", ci_kind="confidence",
                   points={w: PointResult(w, x, None, se=se, censored=None) for w, x in optima.items()})


def test_the_departure_is_the_optima_scatter_beyond_their_own_errors(calibration: ModuleType) -> None:
    """400 lines of four optima each, off their line by N(0, 0.3²) plus their own N(0, se²), se = 0.15."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(400):
        optima = {w: -4.0 - 0.2 * math.log2(w) + rng.normal(0, 0.3) + rng.normal(0, 0.15) for w in (32, 64, 128, 256)}
        entry = width_line({w: x for w, x in optima.items()})
        lines.append(calibration.line_of("simulated", f"s{i}", "muon", "width", entry))
    departure = calibration.departure_measurements(lines)[0]
    assert departure.resolved and departure.value == pytest.approx(0.3, abs=0.03)
    exact = [calibration.line_of("simulated", "s", "muon", "width", width_line({
        w: -4.0 + rng.normal(0, 0.15) for w in (32, 64, 128)})) for _ in range(400)]
    assert calibration.departure_measurements(exact)[0].value < 0.06
