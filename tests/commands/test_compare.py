"""`mutransfer compare`: two real smoke sweeps that differ on purpose, a run against itself, the committed
baseline, the refusals, and the verdict's error rate measured by simulation from a known truth."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.analysis.compare import config_changes
from mutransfer.cli import app
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.simulate import Design
from mutransfer.simulation.simulated_rates import compare_rates
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.plan.trial import sweep_record

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke"
LR_TIMES_WIDTH_SQUARED = ["parametrization.roles.embedding.c.muon=2", "parametrization.roles.hidden.c.muon=2",
                          "parametrization.roles.readout.c.muon=3", "parametrization.roles.gain.c.muon=2",
                          "parametrization.roles.bias.c.muon=2"]
"""Every Muon learning-rate exponent raised by 2: at the base width (32) nothing changes, at width 64 every LR is
divided by 4, so without weight decay the loss curve in log2 η moves right by exactly 2 octaves."""


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The smoke sweep as shipped (A) and with the Muon LR exponents changed (B), side by side on one core each."""
    root = tmp_path_factory.mktemp("compare")
    sweeps = [subprocess.Popen([sys.executable, "-m", "mutransfer", "sweep", "smoke", "--out", str(root / name),
                                "--workers", "1", "--threads", "1", *extra], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
              for name, extra in (("a", []), ("b", LR_TIMES_WIDTH_SQUARED))]
    for sweep in sweeps:
        output, _ = sweep.communicate(timeout=600)
        assert sweep.returncode == 0, output
    return {"a": root / "a", "b": root / "b", "root": root}


@pytest.mark.slow  # two smoke sweeps (75 s): CI's second stage
def test_a_changed_exponent_moves_the_optimum_at_the_width_where_it_differs(runs: dict[str, Path]) -> None:
    out = runs["root"] / "ab"
    code, output = cli("compare", str(runs["a"]), str(runs["b"]), "--out", str(out))
    assert code == 0, output
    report = json.loads((out / "compare.json").read_text())
    muon = report["setups"]["mup_muon"]
    assert muon["verdict"] == "moved" and muon["moved_widths"] == [64]
    assert muon["widths"]["32"]["difference"] == 0.0 and not muon["widths"]["32"]["moved"]
    assert abs(muon["widths"]["64"]["difference"] - 2.0) < 0.1
    assert muon["widths"]["64"]["ci_low"] > 0 and muon["widths"]["64"]["p_holm"] < 0.05
    assert muon["shift"] == pytest.approx(sum(w["weight"] * w["difference"] for w in muon["widths"].values()))
    assert report["setups"]["sp_adamw"]["verdict"] != "moved"
    assert report["moved"] is True and report["verdict"] == "moved" and report["tolerance"] == 0.25
    assert {"where": "mup_muon", "key": "parametrization.roles.hidden.c.muon", "a": 0.0, "b": 2.0} in \
        report["config_changes"]
    text = (out / "compare.md").read_text()
    assert "**mup_muon: moved — pooled shift" in text and "widths that moved (Holm): 64 (+2.00)" in text
    assert "| 64 |" in text and "**sp_adamw: " in text
    assert (out / "compare.png").stat().st_size > 20_000
    assert "mup_muon: moved" in output
    code, _ = cli("compare", str(runs["a"]), str(runs["b"]), "--out", str(out), "--strict")
    assert code == 1


@pytest.mark.slow  # two smoke sweeps (75 s): CI's second stage
def test_a_run_compared_with_itself_is_not_moved_and_same_within_a_margin_it_resolves(runs: dict[str, Path]) -> None:
    """The smoke grid's 2-octave step resolves the optimum to about ±1 octave: against itself a run has every
    difference 0 but cannot show that it lies within ±0.25 octave (inconclusive); within ±2 it can (same)."""
    code, output = cli("compare", str(runs["a"]), str(runs["a"]), "--strict")
    assert code == 0, output
    report = json.loads((runs["a"] / "compare.json").read_text())
    assert report["moved"] is False and report["verdict"] == "inconclusive"
    for setup in report["setups"].values():
        assert setup["verdict"] == "inconclusive" and "90 % interval" in setup["reason"]
        assert setup["shift"] == 0.0 and setup["shift_ci_low"] < 0 < setup["shift_ci_high"]
        for width in setup["widths"].values():
            assert width["difference"] == 0.0 and width["loss_difference"] == 0.0
            assert width["ci_low"] < 0 < width["ci_high"]
    assert report["config_changes"] == [] and report["only_in_a"] == report["only_in_b"] == []
    code, output = cli("compare", str(runs["a"]), str(runs["a"]), "--tolerance", "2", "--out", str(runs["root"] / "t2"))
    report = json.loads((runs["root"] / "t2" / "compare.json").read_text())
    assert code == 0 and report["verdict"] == "same" and report["tolerance"] == 2.0, output


@pytest.mark.slow  # two smoke sweeps (75 s): CI's second stage
def test_the_committed_baseline_is_a_smoke_sweep_of_the_shipped_spec(runs: dict[str, Path]) -> None:
    record = yaml.safe_load((BASELINE / "config.yaml").read_text())
    shipped = json.loads(json.dumps(sweep_record(load_spec("smoke"), {})["spec"], default=str))
    assert record["spec"] == shipped, \
        "sweeps/smoke.yaml changed: regenerate the baseline with bash scripts/ci_artifacts.sh --update-baseline"
    out = runs["root"] / "baseline"
    code, output = cli("compare", str(BASELINE), str(runs["a"]), "--out", str(out))
    assert code == 0, output
    report = json.loads((out / "compare.json").read_text())
    assert set(report["setups"]) == {"sp_adamw", "mup_muon"}
    assert all(set(s["widths"]) == {"32", "64"} for s in report["setups"].values())


def relabel(source: Path, target: Path, column: str, value: str) -> Path:
    """A copy of a sweep whose trials all say ``column = value`` (a searched key gets a column of values)."""
    shutil.copytree(source, target)
    trials = pd.read_csv(target / "trials.csv")
    trials[column] = value
    if column == "search_key":
        trials[value] = trials["lr"]
    trials.to_csv(target / "trials.csv", index=False)
    (target / "config.yaml").unlink()
    return target


@pytest.mark.slow  # two smoke sweeps (75 s): CI's second stage
def test_runs_that_share_no_setup_or_swept_other_keys_are_refused(runs: dict[str, Path]) -> None:
    other = relabel(runs["a"], runs["root"] / "other_setup", "setup", "rmsnorm_muon")
    code, output = cli("compare", str(runs["a"]), str(other), "--out", str(runs["root"] / "x"))
    assert code == 2 and "share no setup" in output and len(output.strip().splitlines()) == 1, output
    keyed = relabel(runs["a"], runs["root"] / "other_key", "search_key", "optimizer.weight_decay")
    code, output = cli("compare", str(runs["a"]), str(keyed), "--out", str(runs["root"] / "x"))
    assert code == 2 and "swept optimizer.lr but" in output and len(output.strip().splitlines()) == 1, output
    assert not (runs["root"] / "x").exists()


@pytest.mark.slow  # two smoke sweeps (75 s): CI's second stage
def test_a_setup_only_one_run_swept_is_listed_not_dropped(runs: dict[str, Path]) -> None:
    target = runs["root"] / "renamed"
    shutil.copytree(runs["a"], target)
    trials = pd.read_csv(target / "trials.csv")
    trials["setup"] = trials["setup"].replace({"mup_muon": "mup_muon_v2"})
    trials.to_csv(target / "trials.csv", index=False)
    out = runs["root"] / "renamed_cmp"
    code, output = cli("compare", str(runs["a"]), str(target), "--out", str(out))
    assert code == 0, output
    report = json.loads((out / "compare.json").read_text())
    assert set(report["setups"]) == {"sp_adamw"}
    assert report["only_in_a"] == [{"key": "optimizer.lr", "setup": "mup_muon"}]
    assert report["only_in_b"] == [{"key": "optimizer.lr", "setup": "mup_muon_v2"}]
    assert "only in A (not compared): mup_muon" in output and "only in B (not compared): mup_muon_v2" in output
    assert "- only in A (not compared): mup_muon" in (out / "compare.md").read_text()


def test_config_changes_lists_what_differs() -> None:
    a = {"spec": {"name": "x", "widths": [32, 64], "setups": []},
         "setups": {"s": {"model": {"width": 32, "depth": 2}, "optimizer": {"lr": 0.1, "beta2": 0.95}}}}
    b = {"spec": {"name": "y", "widths": [32, 128], "setups": []},
         "setups": {"s": {"model": {"width": 64, "depth": 2}, "optimizer": {"lr": 0.2, "beta2": 0.99}}}}
    assert config_changes(a, b) == [{"where": "spec", "key": "widths", "a": [32, 64], "b": [32, 128]},
                                    {"where": "s", "key": "optimizer.beta2", "a": 0.95, "b": 0.99}]


def recorded(overrides: list[str]) -> dict:
    """The config.yaml record of the smoke spec with ``overrides``, as a sweep writes and compare reads it."""
    return yaml.safe_load(yaml.safe_dump(json.loads(json.dumps(sweep_record(load_spec("smoke", overrides), {}),
                                                                default=str))))


def test_config_changes_cover_the_spec_grid_range_step_seeds_and_axes() -> None:
    a = recorded([])
    b = recorded(["search.step=1", "search.noise_seeds=3", "seeds=[0,1]", "widths=[32,128]"])
    changes = {(c["where"], c["key"]): (c["a"], c["b"]) for c in config_changes(a, b)}
    assert changes[("spec", "seeds")] == ([0], [0, 1]) and changes[("spec", "widths")] == ([32, 64], [32, 128])
    for setup in ("sp_adamw", "mup_muon"):
        assert changes[(setup, "spec.search.optimizer.lr.step")] == (2.0, 1.0)
        assert changes[(setup, "spec.search.optimizer.lr.noise_seeds")] == (2, 3)
    wider = recorded(["setups.mup_muon.search.log2_max=-0.5"])
    changes = {(c["where"], c["key"]): (c["a"], c["b"]) for c in config_changes(a, wider)}
    assert changes == {("mup_muon", "spec.search.optimizer.lr.max"): (-1.0, -0.5)}


PAIRS_IN_CI = 100
SLACK = 2 * (0.05 * 0.95 / PAIRS_IN_CI) ** 0.5
"""Two binomial standard errors of a 5 % rate over ``PAIRS_IN_CI`` pairs: a rate's room at a quarter of the pairs."""


@pytest.mark.slow
def test_compare_rates_on_real_curves_at_a_quarter_of_the_pairs() -> None:
    """The verdict's two headline rates over 100 simulated pairs on the real-curve simulator, each target widened by
    two binomial standard errors: no change is rarely called moved, half an octave almost always is."""
    design, truth = Design(), real_truth()
    null = compare_rates(truth, truth, design, PAIRS_IN_CI, seed=2)
    assert null["moved"] <= 0.05 + SLACK and null["shift_coverage"] >= 0.90 - SLACK, null
    half = compare_rates(truth, replace(truth, x0=truth.x0 + 0.5), design, PAIRS_IN_CI, seed=2)
    assert half["moved"] >= 0.90 - SLACK and half["shift_coverage"] >= 0.90 - SLACK, half


@pytest.mark.long
def test_compare_rates_on_real_curves_meet_the_targets() -> None:
    """The verdict's rates over 400 simulated pairs of the default sweep (four widths, 1-octave grid, noise
    probes) on the real-curve simulator (μP + Muon's calibrated bowl): docs/compare.md's table.

    Covered in CI by `tests/commands/test_compare.py::test_compare_rates_on_real_curves_at_a_quarter_of_the_pairs`."""
    design, truth = Design(), real_truth()
    null = compare_rates(truth, truth, design, 400, seed=1)
    assert null["moved"] <= 0.05 and null["same"] >= 0.30, null
    assert null["shift_coverage"] >= 0.90 and null["loss_coverage"] >= 0.90, null
    half = compare_rates(truth, replace(truth, x0=truth.x0 + 0.5), design, 400, seed=1)
    assert half["moved"] >= 0.90 and half["shift_coverage"] >= 0.90, half
    quarter = compare_rates(truth, replace(truth, x0=truth.x0 + 0.25), design, 400, seed=1)
    assert quarter["same"] <= 0.05 and quarter["shift_coverage"] >= 0.90, quarter
    slope = compare_rates(truth, replace(truth, slope=truth.slope + 0.25), design, 400, seed=1)
    assert slope["moved"] >= 0.40 and slope["shift_coverage"] >= 0.90, slope
