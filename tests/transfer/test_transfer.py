"""transfer / train --config / verify / plot on a real (tiny) sweep directory."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.model.build import gpt_plan
from mutransfer.model_kinds import build_model
from mutransfer.config import load_config_file
from mutransfer.model.apply import build_optimizer
from mutransfer.analysis.plots import transfer_figure
from mutransfer.analysis.run_files import read_tables, search_settings
from mutransfer.analysis.summary import axis_table, summarize_run
from mutransfer.schema import LR_KEY, TRANSFER_AXES
from mutransfer.transfer.target import make_transfer
from mutransfer.transfer.verify import Verification, VerifyRequest


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    spec_path = root / "tiny.yaml"
    spec_path.write_text(yaml.safe_dump({
        "name": "tiny",
        "setups": {"sp_adamw": {"overrides": ["parametrization=sp", "optimizer=adamw"],
                                "search": {"log2_min": -10, "log2_max": -4}},
                   "mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                "search": {"log2_min": -6, "log2_max": 0}}},
        "widths": [32, 64], "search": {"step": 2},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=10", "train.batch_size=4",
                      "train.seq_len=32", "train.eval_every=5", "train.eval_batches=2", "data=text",
                      f"data.path={text_file}"]}))
    run_dir = root / "run"
    result = CliRunner().invoke(__import__("mutransfer.cli").cli.app, ["sweep", str(spec_path), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    return run_dir


@pytest.mark.parametrize("setup", ["sp_adamw", "mup_muon"])
def test_transfer_file_equals_the_model_at_width_n(runner: CliRunner, sweep_dir: Path, tmp_path: Path,
                                                   setup: str) -> None:
    out = tmp_path / "t.yaml"
    result = invoke(runner, "transfer", "--width", "256", "--from", str(sweep_dir), "--setup", setup, "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert doc["width"] == 256 and doc["model"]["width"] == 256 and doc["source"]["setup"] == setup
    assert doc["lr"] == pytest.approx(2 ** doc["log2_lr"], rel=1e-4), "lr and log2_lr carry one another"
    cfg = load_config_file(out)
    plan = gpt_plan(cfg, 256)
    assert [g["name"] for g in doc["param_groups"]] == [p.name for p in plan.params]
    for group, entry in zip(doc["param_groups"], plan.params):
        assert group["init_std"] == pytest.approx(entry.init_std)
        assert group["multiplier"] == pytest.approx(entry.multiplier)
        assert group["lr"] == pytest.approx(plan.lr * entry.lr_factor)
        assert group["shape"] == list(entry.shape)
    model, plan = build_model(cfg, 256)
    optimizer = build_optimizer(model, plan)
    by_name = {g["name"]: g for g in doc["param_groups"]}
    for group in optimizer.param_groups:
        assert group["lr"] == pytest.approx(by_name[group["name"]]["lr"])
    weight = dict(model.named_parameters())["blocks.0.mlp.up.weight"]
    assert weight.std().item() == pytest.approx(by_name["blocks.0.mlp.up.weight"]["init_std"], rel=0.03)
    summary = summarize_run(sweep_dir).setups()[setup]
    xs = [w.x_star for w in summary.line.points.values()]
    assert min(xs) - 1e-9 <= doc["log2_lr"] <= max(xs) + 1e-9


def test_transfer_defaults_json_and_drift_correction(runner: CliRunner, sweep_dir: Path) -> None:
    (sweep_dir / "lr_drift.png").unlink(missing_ok=True)
    result = invoke(runner, "transfer", "--width", "8192", "--from", str(sweep_dir), "--format", "json")
    assert result.exit_code == 0, result.output
    assert (sweep_dir / "lr_drift.png").is_file(), "the drift figure is redrawn to mark the new target"
    path = sweep_dir / "transfer_w8192.json"
    doc = json.loads(path.read_text())
    assert doc["config"]["model"]["width"] == 8192 and doc["param_groups"][0]["shape"] == [256, 8192]
    assert "more than 64×" in result.output
    corrected = invoke(runner, "transfer", "--width", "4096", "--from", str(sweep_dir), "--setup", doc["source"]["setup"],
                       "--correct-drift", "--out", str(sweep_dir / "c.yaml"))
    assert corrected.exit_code == 0
    fixed = yaml.safe_load((sweep_dir / "c.yaml").read_text())
    info = summarize_run(sweep_dir).setups()[fixed["source"]["setup"]]
    assert fixed["correct_drift"] is True and info.line.intercept is not None and info.line.slope is not None
    assert fixed["log2_lr"] == pytest.approx(info.line.intercept + info.line.slope * math.log2(4096), abs=5e-4)


def test_train_from_transfer_file_warns_on_horizon_change(runner: CliRunner, sweep_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    assert invoke(runner, "transfer", "--width", "64", "--from", str(sweep_dir), "--out", str(out)).exit_code == 0
    result = invoke(runner, "train", "--config", str(out), "train.steps=4", "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert "train.steps: 10 → 4" in result.output
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["optimizer"]["lr"] == pytest.approx(yaml.safe_load(out.read_text())["lr"])
    assert saved["train"]["steps"] == 4


@pytest.fixture(scope="module")
def verified(sweep_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sweep, verified at width 128 for both setups (the study machinery, the real training)."""
    run = tmp_path_factory.mktemp("verified") / "run"
    shutil.copytree(sweep_dir, run)
    result = invoke(CliRunner(), "verify", "--width", "128", "--from", str(run), "--setup", "all")
    assert result.exit_code == 0, result.output
    return run


def test_verify_measures_the_optimum_around_the_prediction(runner: CliRunner, verified: Path,
                                                          tmp_path: Path) -> None:
    report = json.loads((verified / "verify.json").read_text())
    rows = pd.read_csv(verified / "verify.csv")
    assert report["mode"] == "measure" and report["tolerance"] == 0.5 and (verified / "verify.png").is_file()
    assert {t["setup"] for t in report["targets"]} == {"sp_adamw", "mup_muon"}
    for target in report["targets"]:
        out = tmp_path / f"{target['setup']}.yaml"
        invoke(runner, "transfer", "--width", "128", "--from", str(verified), "--setup", target["setup"], "--out",
               str(out))
        p = yaml.safe_load(out.read_text())["prediction"]["log2_lr"]
        assert target["predicted_log2_lr"] == pytest.approx(p)
        mine = rows[(rows["setup"] == target["setup"]) & (rows["width"] == 128)]
        low, high = target["grid"]
        assert low == pytest.approx(0.5 * round((p - 1.5) / 0.5)) and high - low == pytest.approx(3.0)
        lattice = mine[(mine["log2_lr"] - p).abs() > 1e-6]["log2_lr"]
        assert ((lattice / 0.5 - (lattice / 0.5).round()).abs() < 1e-6).all()
        assert set(mine[(mine["log2_lr"] - p).abs() < 1e-6]["seed"]) == {0, 1, 2}
        measured = target["measured"]
        assert target["error"] == pytest.approx(measured["x_star"] - p)
        assert target["error_ci"] == pytest.approx([measured["ci"][0] - p, measured["ci"][1] - p])
        regret = target["regret"]
        assert regret["seeds"] == 3 and regret["nats_ci"][0] <= regret["nats"] <= regret["nats_ci"][1]
        at_p = mine[((mine["log2_lr"] - p).abs() < 1e-6) & (mine["status"] == "ok")]["val_loss"].mean()
        assert regret["loss_at_prediction"] == pytest.approx(at_p)
        assert regret["nats"] == pytest.approx(regret["loss_at_prediction"] - regret["loss_at_optimum"])
        assert target["passed"] == (measured["censored"] is None and abs(target["error"]) <= 0.5)


def test_verify_resumes_and_strict_fails_a_tight_tolerance(runner: CliRunner, verified: Path) -> None:
    before = pd.read_csv(verified / "verify.csv")
    result = invoke(runner, "verify", "--width", "128", "--from", str(verified), "--setup", "all", "--strict",
                    "--tolerance", "1e-9")
    after = pd.read_csv(verified / "verify.csv")
    assert result.exit_code == 1, result.output
    assert "mutransfer verify" not in result.output, "verify never advises running itself"
    assert "verify's --tolerance 1e-09" in result.output
    assert sorted(after["trial"]) == sorted(before["trial"]) and len(after) == len(before)
    assert json.loads((verified / "verify.json").read_text())["passed"] is False


def test_verify_checks_the_prediction_transfer_makes(sweep_dir: Path) -> None:
    for correct in (False, True):
        request = VerifyRequest(widths=(128, 256), setups=("sp_adamw",), correct_drift=correct)
        verification = Verification(sweep_dir, request)
        for target in verification.targets:
            expected = make_transfer(sweep_dir, target.width, "sp_adamw", correct).prediction
            assert target.prediction == expected and target.search.anchors == (round(expected.log2_lr, 10),)
        specs = verification.specs()
        assert [s.widths for s in specs] == [(128,), (256,)] and verification.prefix == "verify-tiny"
    assert Verification(sweep_dir, VerifyRequest(widths=(128,), overrides=("train.steps=20",))).prefix != "verify-tiny"


def test_plot_redraws_the_verify_figure(runner: CliRunner, verified: Path, tmp_path: Path) -> None:
    run = tmp_path / "copy"
    shutil.copytree(verified, run)
    (run / "verify.png").unlink()
    result = invoke(runner, "plot", str(run))
    assert result.exit_code == 0 and (run / "verify.png").stat().st_size > 10_000, result.output


def test_verify_several_widths_dry_run_and_factors(runner: CliRunner, sweep_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "copy"
    shutil.copytree(sweep_dir, run)
    dry = invoke(runner, "verify", "--width", "64,128", "--from", str(run), "--dry-run")
    assert dry.exit_code == 0 and "est. s/trial" in dry.output and not (run / "verify.csv").exists()
    result = invoke(runner, "verify", "--width", "64,128", "--from", str(run), "--factors", "0.25,1,4",
                    "--setup", "mup_muon")
    assert result.exit_code == 0, result.output
    report = json.loads((run / "verify.json").read_text())
    assert report["mode"] == "factors" and [t["width"] for t in report["targets"]] == [64, 128]
    for target in report["targets"]:
        xs = [point["log2_lr"] for point in target["factors"]]
        assert xs == pytest.approx([target["predicted_log2_lr"] + d for d in (-2, 0, 2)])
        assert target["passed"] == (target["margin"] > 0)
    table = pd.read_csv(run / "verify.csv")
    assert set(table["width"]) == {64, 128} and set(table["seed"]) == {0} and len(table) == 6
    assert "η* × 1" in result.output and (run / "verify.png").is_file()


def test_plots_from_csvs_alone(runner: CliRunner, sweep_dir: Path, tmp_path: Path) -> None:
    csv_only = tmp_path / "csv_only"
    csv_only.mkdir()
    for name in ("trials.csv", "curves.csv"):
        shutil.copy(sweep_dir / name, csv_only / name)
    result = invoke(runner, "plot", str(csv_only))
    assert result.exit_code == 0, result.output
    assert {p.name for p in csv_only.glob("*.png")} == {"transfer.png", "lr_drift.png", "curves.png"}
    trials, _ = read_tables(csv_only)
    rows = axis_table(trials, LR_KEY, search_settings(csv_only, trials), TRANSFER_AXES[0])
    fig = transfer_figure([("run", rows, summarize_run(csv_only).setups())])
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 2 and any("mup_muon" in t for t in titles) and any("sp_adamw" in t for t in titles)
    compare = tmp_path / "compare"
    result = invoke(runner, "plot", str(csv_only), str(sweep_dir), "--out", str(compare))
    assert result.exit_code == 0 and {p.name for p in compare.glob("*.png")} == {"transfer.png", "lr_drift.png",
                                                                                 "curves.png"}


def test_transfer_prints_and_writes_a_predicted_range(runner: CliRunner, sweep_dir: Path, tmp_path: Path) -> None:
    docs, nexts = {}, {}
    for width, tolerance in ((4096, "0.01"), (256, "100"), (2**20, "1")):
        out = tmp_path / f"t{width}.yaml"
        result = invoke(runner, "transfer", "--width", str(width), "--from", str(sweep_dir), "--setup", "mup_muon",
                        "--out", str(out), "--tolerance", tolerance)
        assert result.exit_code == 0, result.output
        first, second = result.output.splitlines()[:2]
        assert first == f"transfer from {sweep_dir}" and second.startswith(f"prediction at width {width}: log2 η* =")
        assert "transfer's --tolerance" in second
        docs[width], nexts[width] = yaml.safe_load(out.read_text()), result.output.splitlines()[-1]
    assert nexts[256].startswith(f"next: mutransfer verify --width 256 --from {sweep_dir} measures η* there")
    assert nexts[2**20].startswith(f"next: verifying at width {2**20} takes about") and "where width" in nexts[2**20]
    assert f"verify --width {2**20} --from {sweep_dir} measures" not in nexts[2**20]
    far, near = docs[4096]["prediction"], docs[256]["prediction"]
    lo, hi = far["interval"]
    assert lo < far["log2_lr"] < hi
    assert far["half_width"] == pytest.approx(max(far["log2_lr"] - lo, hi - far["log2_lr"])), "its farthest reach"
    assert far["log2_lr"] == pytest.approx(docs[4096]["log2_lr"])
    statistics = [v for v in (docs[4096]["source"]["asymmetry_se_log"], *docs[4096]["source"]["slope_ci"]) if v]
    assert statistics and all(len(f"{abs(v):.15g}".replace(".", "").strip("0")) <= 4 for v in statistics), \
        "a statistic is written at the precision it carries"
    assert far["within_tolerance"] is False and near["within_tolerance"] is True
    assert any("wider than transfer's --tolerance" in w for w in docs[4096]["warnings"])
    assert far["half_width"] > near["half_width"], "the slope's uncertainty grows with the distance extrapolated"
    rows = {g["name"]: g for g in docs[4096]["param_groups"]}
    up = rows["blocks.0.mlp.up.weight"]
    assert up["effective_lr"] == pytest.approx(up["lr"] * up["shape_factor"]) and up["shape_factor"] == 2.0


def test_transfer_from_a_sweep_whose_optima_are_all_at_the_edge(runner: CliRunner, sweep_dir: Path,
                                                                 tmp_path: Path) -> None:
    """Every width's best point on the grid's high edge: bounds only. transfer still writes the config from
    them, says the setup is inconclusive with the fix, and gives no range (no slope was measured)."""
    run = tmp_path / "edge"
    shutil.copytree(sweep_dir, run)
    trials = pd.read_csv(run / "trials.csv")
    trials["val_loss"] = 3.0 - 0.1 * trials["log2_lr"]
    trials["status"] = "ok"
    trials.to_csv(run / "trials.csv", index=False)
    out = tmp_path / "t.yaml"
    result = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--setup", "mup_muon", "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert doc["source"]["verdict"] == "inconclusive" and "high edge" in doc["source"]["reason"]
    assert doc["prediction"]["interval"] is None and doc["prediction"]["within_tolerance"] is False
    assert any("extend the grid above" in w for w in doc["warnings"])
    assert doc["log2_lr"] == pytest.approx(trials[trials["setup"] == "mup_muon"]["log2_lr"].max())
