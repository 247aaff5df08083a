"""Depth in the abc table: residual-branch scaling (depth-μP, CompleteP), the depth factors of in-block
parameters, the abc symmetry across depth, `transfer --depth` and bad depth input."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml

from conftest import invoke, refused_in_one_line, sweep_tables
from mutransfer.config import compose
from mutransfer.model.apply import build_optimizer, init_parameters
from mutransfer.model.build import gpt_plan
from mutransfer.model_kinds import build_model
from mutransfer.model.gpt import GPT
from mutransfer.table.plan import Plan
from mutransfer.train.loop import loss_of

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke"


def plan_at(depth: int, alpha: float, optimizer: str, width: int = 128) -> Plan:
    return gpt_plan(compose([f"optimizer={optimizer}", f"model.width={width}", f"model.depth={depth}",
                             f"parametrization.depth_alpha={alpha}", "parametrization.base_depth=2"]), 256)


@pytest.mark.parametrize(("optimizer", "alpha", "lr_exponent", "eps_exponent"), [
    ("adamw", 1.0, 0.0, -1.0), ("adamw", 0.5, -0.5, -0.5), ("muon", 1.0, 0.0, 0.0), ("muon", 0.5, -0.5, 0.0),
    ("sgd", 0.5, 0.0, 0.0), ("sgd", 1.0, 1.0, 0.0), ("adamw", 0.75, -0.25, -0.75)])
def test_in_block_parameters_get_the_depth_factors_and_the_others_none(optimizer: str, alpha: float,
                                                                       lr_exponent: float, eps_exponent: float) -> None:
    base, deep = plan_at(2, alpha, optimizer), plan_at(8, alpha, optimizer)  # m_L = 4
    assert deep.branch_multiplier == pytest.approx(4 ** -alpha) and base.branch_multiplier == 1.0
    shallow = base.by_name()
    for p in deep.params:
        inside = p.name.startswith("blocks.")
        assert p.in_block == inside, p.name
        twin = shallow.get(p.name.replace("blocks.7.", "blocks.1.").replace("blocks.3.", "blocks.1."))
        if twin is None:
            continue
        want = 4 ** lr_exponent if inside else 1.0
        assert p.lr_factor == pytest.approx(twin.lr_factor * want), p.name
        assert p.depth_lr_factor == pytest.approx(want)
        assert (p.init_std, p.init_mean, p.multiplier) == (twin.init_std, twin.init_mean, twin.multiplier)
        if p.eps is not None:
            assert p.eps == pytest.approx(twin.eps * (4 ** eps_exponent if inside else 1.0)), p.name


def test_depth_alpha_zero_is_the_model_without_depth_rules() -> None:
    plain = gpt_plan(compose(["model.depth=8"]), 256)
    off = gpt_plan(compose(["model.depth=8", "parametrization.depth_alpha=0", "parametrization.base_depth=1"]), 256)
    assert plain == off and plain.branch_multiplier == 1.0 and plain.depth is None
    assert all(p.depth_lr_factor == 1.0 for p in plain.params)
    assert "depth_alpha" not in plain.to_document() and "in_block" not in plain.to_document()["param_groups"][1]


def test_the_model_scales_its_residual_branches() -> None:
    cfg = compose(["model.width=64", "model.depth=8", "parametrization.depth_alpha=1", "parametrization.base_depth=2"])
    model, plan = build_model(cfg, 256)
    assert [block.branch_multiplier for block in model.blocks] == pytest.approx([0.25] * 8)
    x = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    scaled = model(x)[0]
    model.set_branch_multiplier(1.0)
    assert not torch.allclose(scaled, model(x)[0])
    model.set_branch_multiplier(0.0)  # no branch reaches the stream: embedding → final norm → head
    direct = model.lm_head(model.final_norm(model.embed(x)))
    torch.testing.assert_close(model(x)[0], direct)
    assert Plan.from_document(plan.to_document()) == plan


BRANCH_OUTPUTS = (".attn.o.weight", ".mlp.down.weight")


def folded(plan: Plan, k: float) -> Plan:
    """The branch multiplier k moved into each branch's output weight, by the abc symmetry for Adam and Muon:
    multiplier k ≡ init × k, LR × k (and Adam's eps × k)."""
    params = tuple(replace(p, init_std=p.init_std * k, lr_factor=p.lr_factor * k,
                           eps=p.eps * k if p.eps is not None else None)
                   if p.name.endswith(BRANCH_OUTPUTS) else p for p in plan.params)
    return replace(plan, params=params)


def train_losses(cfg_overrides: list[str], plan_change, branch: float | None, steps: int = 8) -> list[float]:  # noqa: ANN001
    cfg = compose(cfg_overrides)
    plan = gpt_plan(cfg, 256)
    plan = plan_change(plan)
    model = GPT(cfg.model, 256)
    init_parameters(model.named_parameters(), plan, torch.Generator().manual_seed(0))
    model.set_multipliers(plan.multipliers)
    model.set_branch_multiplier(plan.branch_multiplier if branch is None else branch)
    optimizer = build_optimizer(model, plan)
    data = torch.randint(0, 256, (steps, 4, 17), generator=torch.Generator().manual_seed(1))
    out = []
    for batch in data:
        loss = loss_of(model, batch[:, :-1], batch[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    return out


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_abc_symmetry_across_depth(optimizer: str) -> None:
    """Depth 8 at α = 1 (branch × 1/4): the factor moved from the branch multiplier into the branch output
    weights' init and LR trains the same model; moving it into the init alone does not."""
    overrides = [f"optimizer={optimizer}", "model.width=64", "model.depth=8", "parametrization.depth_alpha=1",
                 "parametrization.base_depth=2", "optimizer.lr=0.02", "optimizer.weight_decay=0",
                 "optimizer.ns_dtype=float32"]
    reference = train_losses(overrides, lambda plan: plan, None)
    k = 0.25
    moved = train_losses(overrides, lambda plan: folded(plan, k), 1.0)
    assert moved == pytest.approx(reference, rel=2e-4, abs=2e-4)
    init_only = train_losses(overrides, lambda plan: replace(plan, params=tuple(
        replace(p, init_std=p.init_std * k) if p.name.endswith(BRANCH_OUTPUTS) else p for p in plan.params)), 1.0)
    assert max(abs(a - b) for a, b in zip(init_only, reference)) > 1e-3


def test_transfer_to_another_depth_applies_the_rule_and_says_it_is_assumed(runner, tmp_path: Path) -> None:  # noqa: ANN001
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "trials.csv", "curves.csv"):
        (run / name).write_bytes((BASELINE / name).read_bytes())
    same = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--setup", "mup_muon",
                  "--out", str(tmp_path / "same.yaml"))
    assert same.exit_code == 0, same.output
    result = invoke(runner, "transfer", "--width", "256", "--depth", "8", "--from", str(run), "--setup", "mup_muon",
                    "--out", str(tmp_path / "deep.yaml"))
    assert result.exit_code == 0, result.output
    assert "assumed, not measured" in " ".join(result.output.split())
    shallow, deep = (yaml.safe_load((tmp_path / f).read_text()) for f in ("same.yaml", "deep.yaml"))
    assert deep["config"]["model"]["depth"] == 8 and deep["log2_lr"] == shallow["log2_lr"]
    assert deep["warnings"] and not any("depth" in w for w in shallow["warnings"])
    swept = shallow["config"]["model"]["depth"]
    assert len(deep["param_groups"]) > len(shallow["param_groups"]) and swept < 8


@pytest.mark.slow
def test_coord_check_across_depth_flags_the_unscaled_stream_and_passes_completep(runner, tiny: list[str],  # noqa: ANN001
                                                                                 tmp_path: Path) -> None:
    import json

    slopes = {}
    for alpha in (0, 1):
        out = tmp_path / f"alpha{alpha}"
        result = invoke(runner, "coord-check", "--depths", "2,4,8", "--steps", "2", "--seeds", "1", "--out", str(out),
                        *tiny, "optimizer=muon", f"parametrization.depth_alpha={alpha}")
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "coord_check.json").read_text())
        assert summary["axis"] == "depth" and summary["depths"] == [2, 4, 8]
        slopes[alpha] = next(s["slope"] for s in summary["slopes"] if s["module"] == "last_block.resid"
                             and s["quantity"] == "update" and s["step"] == 1)
        verdict = summary["modules"]["last_block.resid"]["verdict"]
        assert verdict == ("grows" if alpha == 0 else "stable"), (alpha, slopes)
    assert slopes[0] > slopes[1] + 0.4


def test_show_prints_the_depth_exponents_only_when_the_rules_are_on(runner) -> None:  # noqa: ANN001
    on = invoke(runner, "show", "model.depth=8", "parametrization.depth_alpha=1", "optimizer=adamw")
    text = " ".join(on.output.split())
    assert on.exit_code == 0 and "residual branches × 0.25" in text and "eps exponent (adam)" in text
    off = invoke(runner, "show", "model.depth=8")
    table, _, line = off.output.partition("depth rules: off")
    assert off.exit_code == 0 and line and "depth factor" not in table


def depth_spec(tmp_path: Path, text_file: Path, **extra: object) -> Path:
    """One setup (μP + Muon, CompleteP) at widths 32, 64 and depths 1, 2 of a tiny model: three studies."""
    spec = {"name": "deep", "setups": {"mup_muon": ["parametrization=mup", "optimizer=muon"]},
            "widths": [32, 64], "depths": [1, 2], "seeds": [0],
            "search": {"log2_min": -6, "log2_max": -1, "step": 1, "extend": False, "noise_seeds": 1},
            "overrides": ["parametrization.depth_alpha=1", "parametrization.base_depth=1",
                          "parametrization.base_width=32", "train.steps=12", "train.batch_size=4", "train.seq_len=32",
                          "train.eval_every=6", "train.eval_batches=2", "data=text", f"data.path={text_file}"],
            **extra}
    path = tmp_path / "deep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_spec_names_its_depths_and_how_the_axes_combine(tmp_path: Path, text_file: Path) -> None:
    from mutransfer.sweep.spec.sweep_spec import Point, load_spec
    from mutransfer.sweep.plan.sweep_plan import SweepPlan
    from mutransfer.sweep.plan.trial import trial_config

    one = load_spec(str(depth_spec(tmp_path, text_file)), ["depths=[4,1,2]", "widths=[32,64,128]"])
    assert one.listed("depth") == (1, 2, 4) and one.axes == "one"
    assert one.points() == [Point(32, 1), Point(64, 1), Point(128, 1), Point(32, 2), Point(32, 4)]
    product = load_spec(str(depth_spec(tmp_path, text_file)), ["axes=product"])
    assert product.points() == [Point(32, 1), Point(32, 2), Point(64, 1), Point(64, 2)]
    names = [k.name("p") for k in SweepPlan.of(one).studies]
    assert names[:2] == ["p.mup_muon.log2_lr.w32.d1.s0", "p.mup_muon.log2_lr.w64.d1.s0"] and len(set(names)) == 5
    deep = next(k for k in SweepPlan.of(one).studies if k.point.depth == 4)
    assert trial_config(one, deep, -3.0).model.depth == 4 and trial_config(one, deep, -3.0).model.width == 32
    assert "depths" in one.as_dict() and "depths" not in load_spec("smoke").as_dict()
    assert [k.name("p") for k in SweepPlan.of(load_spec("smoke")).studies][0] == "p.sp_adamw.log2_lr.w32.s0"


@pytest.mark.parametrize(("words", "says"), [
    (["depths=[0, 2]"], "depths=0 must be > 0"), (["depths=[4]"], "names one value"),
    (["depths=[2, 2]"], "lists a value twice"), (["axes=diagonal"], "axes='diagonal'"),
    (["depths=null", "axes=product"], "names no second axis"), (["depths=[2, 3.5]"], "depths=3.5"),
    (["model.depth=3"], "also overrides model.depth")])
def test_bad_depth_axes_are_one_line(runner, tmp_path: Path, text_file: Path, words: list[str],  # noqa: ANN001
                                     says: str) -> None:
    refused_in_one_line(runner, depth_spec(tmp_path, text_file), words, says, tmp_path / "run")


def test_summary_without_a_depth_column_keeps_its_layout_and_with_one_fits_each_axis() -> None:
    import numpy as np
    import pandas as pd

    from mutransfer.analysis.drift import SearchSettings
    from mutransfer.analysis.summary import summarize
    from mutransfer.analysis.trial_table import width_axis

    rng = np.random.default_rng(3)
    rows = []
    truth = {(32, 1): -4.0, (64, 1): -4.0, (128, 1): -4.0, (32, 2): -5.0, (32, 4): -6.0}  # depth: −1 per doubling
    for (width, depth), centre in truth.items():
        for seed in range(3):
            for x in np.arange(-9.0, 0.5, 1.0):
                loss = 3.0 + 0.2 * (x - centre - rng.normal(0, 0.1)) ** 2
                rows.append({"setup": "s", "width": width, "depth": depth, "seed": seed, "search_key": "optimizer.lr",
                             "log2_lr": x, "val_loss": loss, "status": "ok"})
    table = pd.DataFrame(rows)
    settings = {"optimizer.lr": {"s": SearchSettings(step=1.0, low=-9, high=0)}}
    both = summarize(table, settings).setups()["s"]
    plain = summarize(width_axis(table), settings).setups()["s"]
    assert list(plain.axes) == ["width"] and plain.law is None and "depth" not in width_axis(table).columns
    assert replace(both, axes={"width": both.axes["width"]}, law=None, fates=plain.fates,
                   backtest=plain.backtest) == plain
    assert sorted(plain.line.points) == [32, 64, 128]
    law = both.law
    assert law is not None
    assert law.axes == ["width", "depth"] and law.points_used == 5
    assert law.slope_ci["depth"][0] < -1.0 < law.slope_ci["depth"][1]
    assert law.slope_ci["width"][0] < 0.0 < law.slope_ci["width"][1]
    assert both.axes["width"].verdict == plain.verdict == "transfers"
    across = both.axes["depth"]
    assert sorted(across.points) == [1, 2, 4] and across.used == [1, 2, 4]
    assert across.verdict == "drifts" and across.slope_ci is not None
    assert across.slope_ci[0] < -1.0 < across.slope_ci[1]


@pytest.mark.slow
def test_a_sweep_across_depth_measures_the_depth_slope_and_transfer_uses_it(runner, tmp_path: Path,  # noqa: ANN001
                                                                           text_file: Path) -> None:
    import json

    import pandas as pd

    from mutransfer.analysis.result import Summary

    run = tmp_path / "run"
    trials = sweep_tables(runner, depth_spec(tmp_path, text_file), run, "depth")
    assert sorted(set(zip(trials["width"], trials["depth"]))) == [(32, 1), (32, 2), (64, 1)]
    assert set(pd.read_csv(run / "curves.csv")["width"]) == {32, 64}
    summary = Summary.from_json(json.loads((run / "summary.json").read_text())).setups()["mup_muon"]
    assert sorted(summary.line.points) == [32, 64] and sorted(summary.axes["depth"].points) == [1, 2]
    for name in ("transfer_depth.png", "lr_drift.png", "transfer.png"):
        assert (run / name).stat().st_size > 10_000, name
    base = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--out", str(tmp_path / "a.yaml"))
    deep = invoke(runner, "transfer", "--width", "256", "--depth", "16", "--from", str(run),
                  "--out", str(tmp_path / "b.yaml"))
    assert base.exit_code == 0 and deep.exit_code == 0, deep.output
    a, b = (yaml.safe_load((tmp_path / f).read_text()) for f in ("a.yaml", "b.yaml"))
    assert "assumed, not measured" not in " ".join(deep.output.split())
    assert b["prediction"]["target"]["depth"] == 16 and a["prediction"]["target"]["depth"] == 1
    assert b["prediction"]["half_width"] > a["prediction"]["half_width"]
    assert b["source"]["swept_depths"] == [1, 2] and b["config"]["model"]["depth"] == 16
    law = summary.law
    assert law is not None and law.axes == ["width", "depth"] and len(law.covariance) == 3
    moved = "depth" in b["prediction"]["applied_slopes"]
    assert moved == (summary.axes["depth"].verdict != "transfers")
    shift = law.coefficients["depth"] * 4 if moved else 0.0  # log2(16 / 1)
    assert b["log2_lr"] == pytest.approx(a["log2_lr"] + shift, abs=2e-3)  # each written to 0.001 octave
