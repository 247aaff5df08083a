"""A key searched at each point's measured LR optimum (``search.at: optimum``), weight decay off as the anchor a
decay must beat, and the ``decay_effect`` verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.cli import app
from mutransfer.analysis.decay_effect import decay_effect
from mutransfer.analysis.result import PointResult, Summary, measured_point
from mutransfer.analysis.summary import read_summary
from mutransfer.sweep.spec.search import OFF_X
from mutransfer.sweep.spec.sweep_spec import load_spec, spec_from_dict

TAU = "optimizer.weight_decay_timescale"


def two_stage_spec(folder: Path, text_file: Path, **search: object) -> Path:
    spec = {"name": "stages", "widths": [32, 64], "seeds": [0],
            "setups": {"mup_adamw": {"overrides": ["parametrization=mup", "optimizer=adamw"]}},
            "search": [{"key": "optimizer.lr", "log2_min": -10, "log2_max": -6, "step": 2, "noise_seeds": 1},
                       {"key": TAU, "log2_min": -4, "log2_max": 0, "step": 2, "at": "optimum", "noise_seeds": 1,
                        "extend": False, **search}],
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=12", "train.batch_size=4",
                          "train.seq_len=32", "train.eval_every=0", "train.eval_batches=2", "data=text",
                          f"data.path={text_file}"]}
    path = folder / "stages.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_decay_search_gets_decay_off_as_an_anchor_and_keeps_plain_specs_as_they_were() -> None:
    spec = load_spec("smoke", [f"search=[{{key: optimizer.lr}}, {{key: {TAU}, log2_min: -3, log2_max: 1, "
                               "at: optimum}]"])
    decay = spec.setups[0].search[1]
    assert decay.anchors == (OFF_X,) and decay.at == "optimum"
    assert decay.value(OFF_X) == math.inf and decay.is_off(OFF_X) and not decay.is_off(-3)
    assert spec_from_dict(spec.as_dict()).setups == spec.setups
    linear = load_spec("smoke", ["search=[{key: optimizer.lr}, {key: optimizer.weight_decay, scale: linear, "
                                 "min: 0, max: 0.2, step: 0.1}]"]).setups[0].search[1]
    assert linear.anchors == () and linear.is_off(0.0)  # λ = 0 is on its grid already
    plain = load_spec("smoke").as_dict()
    assert all("at" not in s and "anchors" not in s for setup in plain["setups"] for s in setup["search"])


@pytest.fixture(scope="module")
def staged_run(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> tuple[Path, Path]:
    """A finished two-stage sweep (two workers) over widths 32 and 64: its spec and run directory."""
    folder = tmp_path_factory.mktemp("stages")
    spec = two_stage_spec(folder, text_file)
    out = folder / "run"
    result = CliRunner().invoke(app, ["sweep", str(spec), "--out", str(out), "--workers", "2"])
    assert result.exit_code == 0, result.output
    return spec, out


def test_the_decay_is_searched_at_each_points_lr_optimum(runner: CliRunner, staged_run: tuple[Path, Path]) -> None:
    """Two workers: the decay studies wait for the LR studies at their point, train at the optimum summary.json
    reports there, train decay off with every seed, and a rerun finds nothing left to do."""
    spec, out = staged_run
    trials = pd.read_csv(out / "trials.csv")
    summary = Summary.from_json(json.loads((out / "summary.json").read_text()))
    decay = trials[trials["search_key"] == TAU]
    for width, entry in summary.setups()["mup_adamw"].line.points.items():
        at_width = decay[decay["width"] == int(width)]
        assert len(at_width) >= 3 + 2 and (at_width["log2_lr"] - entry.x_star).abs().max() < 1e-9
        off = at_width[np.isinf(at_width[TAU])]
        assert sorted(off["seed"]) == [0, 1]
    key = summary.setups(TAU)["mup_adamw"].line
    for entry in key.points.values():
        assert entry.decay is not None
        assert entry.decay.verdict in ("effect", "no effect", "unmeasured") and len(entry.decay.off_seed_losses) == 2
        assert entry.decay.off_loss == pytest.approx(np.mean(entry.decay.off_seed_losses))
    assert key.decay_counts is not None and sum(key.decay_counts.values()) == 2
    again = invoke(runner, "sweep", str(spec), "--out", str(out))
    assert again.exit_code == 0, again.output
    assert len(pd.read_csv(out / "trials.csv")) == len(trials)


@pytest.mark.slow
def test_transfer_and_verify_carry_the_searched_decay(runner: CliRunner, staged_run: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    """``transfer`` writes the decay predicted at the target with its range and rule, in the config and per
    parameter group; ``verify`` measures the decay at the target's LR optimum (error, decay off); a rule that no
    setup used is one line."""
    _, out = staged_run
    path = tmp_path / "t.yaml"
    result = invoke(runner, "transfer", "--width", "128", "--from", str(out), "--out", str(path),
                    "--decay-rule", "lr_scaled")
    assert result.exit_code == 0, result.output
    assert "weight decay: optimizer.weight_decay_timescale = " in " ".join(result.output.split())
    document = yaml.safe_load(path.read_text())
    decay = document["decay"]
    assert decay["key"] == TAU and decay["rule"] == "lr_scaled" and decay["log2"]
    assert decay["value"] == pytest.approx(2 ** decay["prediction"]["log2_lr"], rel=4e-4), "log2 to 3 decimals"
    assert decay["value"] == float(f"{decay['value']:.5g}"), "the value at the precision it carries"
    assert document["config"]["optimizer"]["weight_decay_timescale"] == pytest.approx(decay["value"])
    hidden = next(g for g in document["param_groups"] if g["role"] == "hidden")
    assert hidden["decay_per_step"] == pytest.approx(1 / (decay["value"] * document["config"]["train"]["steps"]))
    wrong = invoke(runner, "transfer", "--width", "128", "--from", str(out), "--decay-rule", "independent")
    assert wrong.exit_code == 2 and "choose one of: lr_scaled" in wrong.output
    assert len(wrong.output.strip().splitlines()) == 1
    checked = invoke(runner, "verify", "--width", "128", "--from", str(out), "--workers", "1")
    assert checked.exit_code == 0, checked.output
    assert "weight decay optimizer.weight_decay_timescale predicted log2" in " ".join(checked.output.split())
    target = json.loads((out / "verify.json").read_text())["targets"][0]
    measured = target["decay"]
    assert measured["key"] == TAU and measured["prediction"]["log2_lr"] == pytest.approx(decay["prediction"]["log2_lr"])
    lr_optimum = measured_point(target["width"], target["measured"])
    assert lr_optimum is not None and lr_optimum.x_star is not None
    assert abs(math.log2(measured["lr"]) - lr_optimum.x_star) < 0.25  # the target's LR optimum
    assert math.isfinite(measured["error"]) and measured["decay_effect"] in ("effect", "no effect", "unmeasured")
    assert len(measured["off_seed_losses"]) == 2


def test_no_effect_is_said_at_the_rate_the_interval_promises() -> None:
    """Simulated from a known truth: seeds' losses with shared noise 0.02 and skewed (exponential) errors, three
    seeds a side. With no true effect, ``effect`` is claimed in about 1 % of 4000 draws (at most 2.5 % for the
    two-sided 95 % interval's upper end); a true effect of −0.1 (five noise scales) is found about 92 % of the
    time."""
    rng = np.random.default_rng(0)

    def claimed(truth: float) -> float:
        hits = 0
        for _ in range(4000):
            off = 3.0 + 0.02 * (rng.exponential(1.0, 3) - 1.0)
            best = 3.0 + truth + 0.02 * (rng.exponential(1.0, 3) - 1.0)
            entry = PointResult(64, -4.0, None, best_loss=float(np.mean(best)), seed_best_losses=list(best))
            hits += decay_effect(entry, off).verdict == "effect"
        return hits / 4000

    assert claimed(0.0) <= 0.04
    assert claimed(-0.1) >= 0.85
    one_seed = PointResult(64, -4.0, None, best_loss=3.0, seed_best_losses=[3.0])
    assert decay_effect(one_seed, np.array([3.1])).verdict == "unmeasured"


def test_a_setup_narrows_any_searched_key_and_the_study_spec_loads() -> None:
    spec = load_spec("weight_decay")
    by_setup = {s.label: {x.key: x for x in s.search} for s in spec.setups}
    assert by_setup["mup_adamw_independent"]["optimizer.weight_decay"].min == -9
    assert by_setup["mup_muon_lr_scaled"]["optimizer.weight_decay"].min == -5
    assert all(x["optimizer.weight_decay"].at == "optimum" and x["optimizer.weight_decay"].anchors == (OFF_X,)
               for x in by_setup.values())
    assert spec.listed("steps") and len(spec.widths) >= 3


def test_the_decay_figures_draw_its_bowls_and_decay_off(staged_run: tuple[Path, Path]) -> None:
    """The sweep draws weight_decay_timescale.png and _drift.png; the loss-vs-τ figure puts each width's decay-off
    loss as a dashed line and the x axis in log2 τ."""
    from mutransfer.analysis.plots import transfer_figure
    from mutransfer.analysis.run_files import search_settings
    from mutransfer.analysis.summary import axis_table
    from mutransfer.schema import TRANSFER_AXES

    _, out = staged_run
    assert (out / "weight_decay_timescale.png").is_file() and (out / "weight_decay_timescale_drift.png").is_file()
    trials = pd.read_csv(out / "trials.csv")
    summary = read_summary(out)
    assert summary is not None
    rows = axis_table(trials, TAU, search_settings(out, trials), TRANSFER_AXES[0])
    assert rows["x"].between(-6, 2).all() and len(rows) < (trials["search_key"] == TAU).sum()
    fig = transfer_figure([("run", rows, summary.setups(TAU))], symbol="τ", quantity="weight-decay timescale τ")
    ax = fig.axes[0]
    dashed = sorted(line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--")
    points = summary.setups(TAU)["mup_adamw"].line.points.values()
    assert all(e.decay is not None for e in points)
    offs = sorted(e.decay.off_loss for e in points if e.decay is not None)
    assert dashed == pytest.approx(offs)
    assert ax.get_xlabel() == "log2(weight-decay timescale τ)" and "LR" not in ax.get_title()
    slope = summary.setups(TAU)["mup_adamw"].line.slope
    assert ("τ* slope" in ax.get_title()) == (slope is not None)
