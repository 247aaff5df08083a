"""Weight decay in the table: each rule's per-step decay per role and width against its formula, the roles it
reaches, the stacked optimizers, every file and entry point that carries it, and λ = 0 leaving everything as it
was."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.config import compose, config_from_dict, to_dict
from mutransfer.model.apply import build_optimizer
from mutransfer.model.build import gpt_plan
from mutransfer.model_kinds import build_model
from mutransfer.sweep.spec.sweep_spec import spec_from_dict
from mutransfer.sweep.plan.trial import setup_configs, sweep_record
from mutransfer.table.plan import Plan
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model, train_trials

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke"
HIDDEN, HEAD, GAIN, EMBED = "blocks.0.mlp.up.weight", "lm_head.weight", "final_norm.weight", "embed.weight"
LAMBDA, TAU, STEPS, SCHEDULE = 0.3, 0.25, 40, 0.5


def one_step_shrink(overrides: list[str]) -> tuple[dict[str, float], Plan]:
    """Every parameter's p_after / p_before after one step with zero gradients (no update, only decay) at the
    schedule's factor ``SCHEDULE``."""
    cfg = compose(["model.depth=1", f"train.steps={STEPS}", *overrides])
    model, plan = build_model(cfg, 64)
    optimizer = build_optimizer(model, plan)
    for group in optimizer.param_groups:
        group["lr"] = group["lr"] * SCHEDULE
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    shrink = {}
    for name, p in model.named_parameters():
        moved = before[name].abs() > 1e-6
        ratios = (p.detach()[moved] / before[name][moved]).double()
        assert torch.allclose(ratios, ratios[0].expand_as(ratios), rtol=0, atol=1e-6), name  # a pure rescaling
        shrink[name] = float(ratios.mean())
    return shrink, plan


RULES = {  # (overrides, the fraction one step at factor s removes, given η_p, λ·m^-wd and 1/(τT)·m^-wd)
    "adamw-lr_scaled": (["optimizer=adamw", f"optimizer.weight_decay={LAMBDA}"], lambda lr, lam, per: lr * lam),
    "adamw-independent": (["optimizer=adamw", f"optimizer.weight_decay={LAMBDA}",
                           "optimizer.weight_decay_rule=independent"], lambda lr, lam, per: lam),
    "muon-lr_scaled": (["optimizer=muon", f"optimizer.weight_decay={LAMBDA}"], lambda lr, lam, per: lr * lam),
    "muon-independent": (["optimizer=muon", f"optimizer.weight_decay={LAMBDA}",
                          "optimizer.weight_decay_rule=independent"], lambda lr, lam, per: lam),
    "sgd-l2": (["optimizer=sgd", f"optimizer.weight_decay={LAMBDA}", "optimizer.momentum=0"],
               lambda lr, lam, per: lr * lam),
    "adamw-timescale": (["optimizer=adamw", f"optimizer.weight_decay_timescale={TAU}"], lambda lr, lam, per: per),
    "muon-timescale-independent": (["optimizer=muon", f"optimizer.weight_decay_timescale={TAU}",
                                    "optimizer.weight_decay_rule=independent"], lambda lr, lam, per: per),
}


@pytest.mark.parametrize("width", [64, 256])
@pytest.mark.parametrize("rule", list(RULES))
def test_each_rule_decays_each_role_by_its_formula(rule: str, width: int) -> None:
    """Hidden matrix (with a width exponent wd = −½: λ ∝ √width), LM head (wd = 0) and a gain (off) at two
    widths: the measured shrink of one step equals 1 − s·(per-step decay) from the rule's formula."""
    overrides, per_step = RULES[rule]
    shrink, plan = one_step_shrink([*overrides, f"model.width={width}", "parametrization.roles.hidden.wd=-0.5"])
    m = width / 128
    for name, wd in ((HIDDEN, -0.5), (HEAD, 0.0)):
        lr = plan.lr_of(name)
        expected = 1.0 - SCHEDULE * per_step(lr, LAMBDA * m ** -wd, m ** -wd / (TAU * STEPS))
        assert shrink[name] == pytest.approx(expected, rel=0, abs=1e-6), name
        assert expected < 1.0 - 1e-5
    assert shrink[GAIN] == 1.0 and shrink[EMBED] == 1.0


def test_turning_a_role_on_and_off() -> None:
    shrink, _ = one_step_shrink(["optimizer=adamw", "optimizer.weight_decay=0.5", "optimizer.decayed.embedding=true",
                                 "optimizer.decayed.readout=false", "optimizer.decayed.gain=true"])
    assert shrink[EMBED] < 1.0 and shrink[GAIN] < 1.0 and shrink[HEAD] == 1.0 and shrink[HIDDEN] < 1.0


def test_lr_scaled_decay_follows_mup_lr_across_width_and_independent_does_not() -> None:
    """Under μP + Adam a hidden matrix's LR goes as 1/m, so lr_scaled decay per step does too; independent decay
    does not move with width; wd = −1 under lr_scaled makes it constant again (the timescale rule)."""
    def hidden(width: int, *extra: str) -> float:
        return 1.0 - one_step_shrink(["optimizer=adamw", "optimizer.weight_decay=0.5", f"model.width={width}",
                                      *extra])[0][HIDDEN]

    assert hidden(512) / hidden(128) == pytest.approx(0.25, rel=1e-3)
    independent = ["optimizer.weight_decay_rule=independent"]
    assert hidden(512, *independent) == pytest.approx(hidden(128, *independent), rel=1e-6)
    scaled = ["parametrization.roles.hidden.wd=-1"]
    assert hidden(512, *scaled) == pytest.approx(hidden(128, *scaled), rel=1e-3)


@pytest.mark.parametrize("extra", [
    ["optimizer=adamw", "optimizer.weight_decay=0.2", "optimizer.weight_decay_rule=independent"],
    ["optimizer=muon", "optimizer.weight_decay=0.2", "optimizer.weight_decay_rule=independent", "model.bias=true"],
    ["optimizer=muon", "optimizer.weight_decay_timescale=0.5", "optimizer.decayed.gain=true"],
    ["optimizer=sgd", "optimizer.weight_decay=0.05", "parametrization=ntk"],
], ids=["adamw-independent", "muon-independent", "muon-timescale", "sgd-l2"])
def test_stacked_trials_decay_as_the_plain_optimizers_do(tiny: list[str], extra: list[str]) -> None:
    """Independent decay and a timescale give each trial its own per-group decay (λ_p / η_p): K trials stacked
    train as K plain optimizers."""
    from conftest import assert_same_run

    cfg = compose([*tiny, "train.steps=8", *extra])
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    lrs = [cfg.optimizer.lr * f for f in (0.5, 2.0)]
    batched, _ = train_trials(cfg, corpus, lrs)
    for lr, result in zip(lrs, batched):
        alone, _ = train_model(compose([*tiny, "train.steps=8", *extra, f"optimizer.lr={lr!r}"]), corpus)
        assert_same_run(result, alone)


def test_decay_changes_training_and_zero_decay_changes_nothing(tiny: list[str]) -> None:
    corpus = load_corpus(compose(tiny).data, 32)

    def loss(*extra: str) -> float:
        return train_model(compose([*tiny, "optimizer=adamw", "optimizer.lr=0.01", *extra]), corpus)[0].val_loss

    plain = loss()
    assert loss("optimizer.weight_decay_rule=independent", "optimizer.decayed.gain=true") == plain
    assert abs(loss("optimizer.weight_decay=5") - plain) > 1e-4


def test_zero_decay_keeps_every_fingerprint_and_file() -> None:
    """λ = 0: the decay keys stay out of configs, so the smoke baseline's sweep fingerprint is what it recorded,
    and a plan document has no decay fields; with λ > 0 they are written (a run from before, which decayed
    every parameter, does not match)."""
    recorded = yaml.safe_load((BASELINE / "config.yaml").read_text())
    spec = spec_from_dict(recorded["spec"])
    assert sweep_record(spec, setup_configs(spec))["fingerprint"] == recorded["fingerprint"]
    for optimizer in ("adamw", "muon", "sgd"):
        data = to_dict(compose([f"optimizer={optimizer}"]))
        assert not {"weight_decay_rule", "weight_decay_timescale", "decayed"} & set(data["optimizer"])
        assert all("wd" not in row for row in data["parametrization"]["roles"].values())
        document = gpt_plan(compose([f"optimizer={optimizer}"]), 64).to_document()
        assert "decayed" not in document["optimizer"] and "weight_decay_rule" not in document
        assert all("weight_decay" not in group for group in document["param_groups"])
    old = {**recorded["setups"]["mup_muon"]}
    decayed = to_dict(config_from_dict({**old, "optimizer": {**old["optimizer"], "weight_decay": 0.1}}))
    assert decayed["optimizer"]["decayed"]["gain"] is False and decayed["parametrization"]["roles"]["hidden"]["wd"] == 0


def test_a_plan_file_round_trips_its_decay(tmp_path: Path) -> None:
    cfg = compose(["optimizer=adamw", "model.width=256", "model.depth=1", "optimizer.weight_decay_timescale=0.3",
                   "train.steps=500", "parametrization.roles.readout.wd=0.5"])
    plan = gpt_plan(cfg, 64)
    plan.save(tmp_path / "plan.yaml")
    loaded = Plan.load(tmp_path / "plan.yaml")
    assert loaded.steps == 500 and loaded.weight_decay_rule == "lr_scaled"
    model, _ = build_model(cfg, 64)
    groups = [g["weight_decay"] for g in build_optimizer(model, loaded).param_groups]
    assert groups == pytest.approx([g["weight_decay"] for g in build_optimizer(model, plan).param_groups])
    head = plan.by_name()[HEAD]
    assert head.decay_factor == pytest.approx(2 ** -0.5)
    assert plan.rows()[-1]["decay_per_step"] == pytest.approx(2 ** -0.5 / (0.3 * 500))


def test_an_old_plan_file_with_decay_gets_the_role_defaults() -> None:
    """A file from before per-role decay (no decay fields) with λ > 0 loads with the new defaults: hidden and LM
    head decayed, embedding, gains and biases not (docs/api.md's change notes)."""
    document = gpt_plan(compose(["optimizer=adamw", "model.depth=1"]), 64).to_document()
    document["optimizer"]["weight_decay"] = 0.1
    loaded = Plan.from_document(document)
    factors = {p.role: p.decay_factor for p in loaded.params}
    assert factors == {"embedding": 0.0, "gain": 0.0, "hidden": 1.0, "readout": 1.0}
    assert loaded.optimizer_config.weight_decay == 0.1


def test_transfer_writes_decay_per_group_and_train_applies_it(runner: CliRunner, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("trials.csv", "curves.csv"):
        (run / name).write_bytes((BASELINE / name).read_bytes())
    recorded = yaml.safe_load((BASELINE / "config.yaml").read_text())
    recorded["setups"]["mup_muon"]["optimizer"]["weight_decay"] = 0.1
    (run / "config.yaml").write_text(yaml.safe_dump(recorded))
    out = tmp_path / "t.yaml"
    result = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--setup", "mup_muon", "--out", str(out))
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(out.read_text())
    assert document["weight_decay_rule"] == "lr_scaled"
    groups = {g["name"]: g for g in document["param_groups"]}
    assert groups[HIDDEN]["weight_decay"] == 0.1 and groups[GAIN]["weight_decay"] == 0.0
    assert groups[HEAD]["decay_per_step"] == pytest.approx(groups[HEAD]["lr"] * 0.1)
    cfg = config_from_dict(document["config"])
    model, plan = build_model(cfg, 256)
    optimizer = build_optimizer(model, plan)
    assert {g["name"]: g["weight_decay"] for g in optimizer.param_groups} == \
        pytest.approx({name: g["weight_decay"] for name, g in groups.items()})


def test_the_api_and_the_trainer_optimizer_apply_the_same_decay() -> None:
    from mutransfer.hf.trainer import trainer_optimizer

    cfg = compose(["optimizer=adamw", "model.depth=1", "model.width=256"])
    model, plan = build_model(cfg, 64)
    plain = build_optimizer(model, plan, weight_decay=0.1, weight_decay_rule="independent")
    roles = {p.name: p.role for p in plan.params}
    expected = {g["name"]: 0.1 / g["lr"] if roles[g["name"]] in ("hidden", "readout") else 0.0
                for g in plain.param_groups}
    assert {g["name"]: g["weight_decay"] for g in plain.param_groups} == pytest.approx(expected)
    hf_optimizer, _ = trainer_optimizer(model, plan, 100, weight_decay_timescale=0.5)
    per_step = {g["name"]: g["weight_decay"] * g["initial_lr"] for g in hf_optimizer.param_groups}
    assert per_step[HIDDEN] == pytest.approx(1 / 50) and per_step[GAIN] == 0.0
    with pytest.raises(ValueError, match="cannot be applied by optimizer 'adamw'"):
        build_optimizer(model, plan, weight_decay_rule="l2")
    with pytest.raises(ValueError, match="needs the run's length"):
        build_optimizer(model, Plan.from_document({**plan.to_document(), "train": {}}), weight_decay_timescale=0.5)


def test_show_prints_each_parameters_decay(runner: CliRunner) -> None:
    on = invoke(runner, "show", "optimizer=adamw", "optimizer.weight_decay=0.1", "model.depth=1", "model.width=256")
    assert on.exit_code == 0, on.output
    text = " ".join(on.output.split())
    assert "weight decay: lr_scaled" in text and "λ=0.1" in text and "off for embedding, gain, bias" in text
    head = next(line for line in on.output.splitlines() if "lm_head.weight" in line)
    assert "0.1" in head and f"{0.1 * 2 ** -11:.4g}" in head
    off = invoke(runner, "show", "model.depth=1")
    assert "weight decay: off" in " ".join(off.output.split()) and "decay/step" not in off.output


def test_a_run_directory_swept_before_with_decay_does_not_resume(runner: CliRunner, spec_file: Path,
                                                                 tmp_path: Path) -> None:
    """A sweep recorded before per-role decay with λ > 0 decayed every parameter: its record lacks the decay keys,
    so the same spec now refuses that directory in one line that names the first new key, and leaves it as it was."""
    import hashlib
    import json

    from mutransfer.files import dump_yaml
    from mutransfer.sweep.spec.sweep_spec import load_spec
    from mutransfer.table.decay import later_decay_keys, omit_at_defaults

    spec = load_spec(str(spec_file), ["optimizer.weight_decay=0.1"])
    record = sweep_record(spec, setup_configs(spec))
    assert record["setups"]["mup_muon"]["optimizer"]["decayed"]["hidden"] is True
    old = {key: value for key, value in record.items() if key != "fingerprint"}
    for config in old["setups"].values():
        omit_at_defaults(config, later_decay_keys())
    fingerprint = hashlib.sha256(json.dumps(old, sort_keys=True, default=str).encode()).hexdigest()[:16]
    run = tmp_path / "old_run"
    run.mkdir()
    text = dump_yaml({"fingerprint": fingerprint, **old})
    (run / "config.yaml").write_text(text)
    result = invoke(runner, "sweep", str(spec_file), "optimizer.weight_decay=0.1", "--out", str(run))
    assert result.exit_code == 2, result.output
    assert "holds a different sweep" in result.output and ".wd: (absent) → 0.0" in result.output
    assert len(result.output.strip().splitlines()) == 1 and (run / "config.yaml").read_text() == text
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml"]
