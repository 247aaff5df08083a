"""`mutransfer compare`: two real smoke sweeps that differ on purpose, a run against itself, the committed
baseline, the refusals, and the verdict's error rate measured by simulation from a known truth."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.analysis.compare import config_changes, difference_interval
from mutransfer.cli import app
from mutransfer.sweep.simulate import Design, Truth
from mutransfer.sweep.simulated_rates import compare_rates
from mutransfer.sweep.spec import load_spec
from mutransfer.sweep.trial import sweep_record

BASELINE = Path(__file__).parent / "baselines" / "smoke"
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


def test_a_changed_exponent_moves_the_optimum_at_the_width_where_it_differs(runs: dict[str, Path]) -> None:
    out = runs["root"] / "ab"
    code, output = cli("compare", str(runs["a"]), str(runs["b"]), "--out", str(out))
    assert code == 0, output
    report = json.loads((out / "compare.json").read_text())
    muon = report["setups"]["mup_muon"]
    assert muon["verdict"] == "moved" and muon["moved_widths"] == [64]
    assert muon["widths"]["32"]["difference"] == 0.0 and not muon["widths"]["32"]["moved"]
    assert abs(muon["widths"]["64"]["difference"] - 2.0) < 0.1
    assert muon["widths"]["64"]["ci_low"] > 1.5
    assert report["setups"]["sp_adamw"]["verdict"] == "same"
    assert report["moved"] is True
    assert {"where": "mup_muon", "key": "parametrization.roles.hidden.c.muon", "a": 0.0, "b": 2.0} in \
        report["config_changes"]
    text = (out / "compare.md").read_text()
    assert "**mup_muon: moved at width 64 (+2.00 octaves).**" in text
    assert "| 64 |" in text and "**sp_adamw: same" in text
    assert (out / "compare.png").stat().st_size > 20_000
    assert "mup_muon: moved at width 64" in output
    code, _ = cli("compare", str(runs["a"]), str(runs["b"]), "--out", str(out), "--strict")
    assert code == 1


def test_a_run_compared_with_itself_is_the_same_with_zero_differences(runs: dict[str, Path]) -> None:
    code, output = cli("compare", str(runs["a"]), str(runs["a"]), "--strict")
    assert code == 0, output
    report = json.loads((runs["a"] / "compare.json").read_text())
    assert report["moved"] is False
    for setup in report["setups"].values():
        assert setup["verdict"] == "same"
        for width in setup["widths"].values():
            assert width["difference"] == 0.0 and width["loss_difference"] == 0.0
            assert width["ci_low"] < 0 < width["ci_high"]
    assert report["config_changes"] == []


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


def test_runs_that_share_no_setup_or_swept_other_keys_are_refused(runs: dict[str, Path]) -> None:
    other = relabel(runs["a"], runs["root"] / "other_setup", "setup", "rmsnorm_muon")
    code, output = cli("compare", str(runs["a"]), str(other), "--out", str(runs["root"] / "x"))
    assert code == 2 and "share no setup" in output and len(output.strip().splitlines()) == 1, output
    keyed = relabel(runs["a"], runs["root"] / "other_key", "search_key", "optimizer.weight_decay")
    code, output = cli("compare", str(runs["a"]), str(keyed), "--out", str(runs["root"] / "x"))
    assert code == 2 and "swept optimizer.lr but" in output and len(output.strip().splitlines()) == 1, output
    assert not (runs["root"] / "x").exists()


def test_difference_interval_welch_combined_and_open() -> None:
    a = {"log2_lr_star": -4.0, "ci": [-4.3, -3.7], "se": 0.1, "dof": 4, "ci_kind": "confidence",
         "censored": None, "diverged_above": None}
    b = {**a, "log2_lr_star": -3.0, "ci": [-3.3, -2.7]}
    d, (lo, hi), kind = difference_interval(a, b)
    assert kind == "welch" and d == 1.0 and lo == pytest.approx(2.0 - hi)
    assert 1.0 - lo == pytest.approx(2.306 * math.sqrt(0.02), rel=0.01)
    one_seed = {**b, "ci_kind": "resolution", "dof": None}
    d, (lo, hi), kind = difference_interval(a, one_seed)
    assert kind == "combined" and lo == pytest.approx(1.0 - math.hypot(0.3, 0.3))
    censored = {**b, "log2_lr_star": -1.0, "ci": [-1.0, math.inf], "censored": "high"}
    d, (lo, hi), kind = difference_interval(a, censored)
    assert kind == "bound" and hi == math.inf and lo == pytest.approx(3.0 - math.hypot(0.0, 0.3))


def test_config_changes_lists_what_differs() -> None:
    a = {"spec": {"name": "x", "widths": [32, 64], "setups": []},
         "setups": {"s": {"model": {"width": 32, "depth": 2}, "optimizer": {"lr": 0.1, "beta2": 0.95}}}}
    b = {"spec": {"name": "y", "widths": [32, 128], "setups": []},
         "setups": {"s": {"model": {"width": 64, "depth": 2}, "optimizer": {"lr": 0.2, "beta2": 0.99}}}}
    assert config_changes(a, b) == [{"where": "spec", "key": "widths", "a": [32, 64], "b": [32, 128]},
                                    {"where": "s", "key": "optimizer.beta2", "a": 0.95, "b": 0.99}]


@pytest.mark.parametrize("noise_seeds", [2, 0])
def test_same_truth_rarely_moves_and_a_real_shift_is_found(noise_seeds: int) -> None:
    """The verdict's error rates, from simulated pairs of sweeps: per width, an unchanged optimum is called
    moved at most about 5 % of the time (the intervals are 95 %), and an optimum moved by one octave is found."""
    design = Design(noise_seeds=noise_seeds)
    same = compare_rates(Truth(curvature=0.2, noise=0.02), Truth(curvature=0.2, noise=0.02), design, 200)
    assert same["width_moved_rate"] <= 0.09
    assert same["difference_coverage"] >= 0.90, "95 % intervals, 600 simulated pairs of widths (Monte-Carlo sd 0.01)"
    shifted = compare_rates(Truth(curvature=0.2, noise=0.02), Truth(x0=-4.0, curvature=0.2, noise=0.02), design, 100)
    assert shifted["setup_moved_rate"] >= 0.95
    assert shifted["difference_coverage"] >= 0.90
