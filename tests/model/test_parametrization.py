"""The abc table: Tensor Programs V Table 3, the Muon table of Su's "Above MuP 3", base-width agreement, the abc symmetry."""

from __future__ import annotations

import math

import pytest
import torch

from mutransfer.model.build import gpt_plan
from mutransfer.model_kinds import build_model
from mutransfer.config import compose
from mutransfer.train.data import load_corpus
from mutransfer.table.plan import Plan
from mutransfer.table.rules import base_value
from mutransfer.train.loop import train_model

ETA = 0.01


def plan_for(*overrides: str) -> Plan:
    return gpt_plan(compose([*overrides, f"optimizer.lr={ETA}"]), vocab_size=256)


def first(plan: Plan, role: str, shape_filter: str = "") -> dict:
    return next(r for r in plan.rows() if r["role"] == role and shape_filter in r["name"])


@pytest.mark.parametrize("width", [64, 256, 1024])
def test_mup_adam_is_tensor_programs_v_table_3(width: int) -> None:
    m = width / 128
    plan = plan_for("parametrization=mup", "optimizer=adamw", f"model.width={width}")
    emb, hid, out, gain = (first(plan, r) for r in ("embedding", "hidden", "readout", "gain"))
    assert emb["init_std"] == pytest.approx(0.02) and emb["lr"] == pytest.approx(ETA)
    assert hid["init_std"] == pytest.approx(0.02 / math.sqrt(m)) and hid["lr"] == pytest.approx(ETA / m)
    assert out["init_std"] == pytest.approx(0.02 / m) and out["lr"] == pytest.approx(ETA / m)
    assert gain["init_mean"] == 1.0 and gain["lr"] == pytest.approx(ETA)
    assert {r["multiplier"] for r in plan.rows()} == {1.0}
    assert hid["eps"] == pytest.approx(1e-8 / m) and emb["eps"] == pytest.approx(1e-8 / m)
    assert out["eps"] == pytest.approx(1e-8)


@pytest.mark.parametrize("width", [64, 512])
def test_mup_sgd_is_tensor_programs_v_table_3(width: int) -> None:
    m = width / 128
    plan = plan_for("parametrization=mup", "optimizer=sgd", f"model.width={width}")
    emb, hid, out, gain = (first(plan, r) for r in ("embedding", "hidden", "readout", "gain"))
    assert emb["lr"] == pytest.approx(ETA * m) and gain["lr"] == pytest.approx(ETA * m)
    assert hid["lr"] == pytest.approx(ETA) and out["lr"] == pytest.approx(ETA / m)
    assert hid["init_std"] == pytest.approx(0.02 / math.sqrt(m)) and out["init_std"] == pytest.approx(0.02 / m)


@pytest.mark.parametrize("width", [32, 128, 512, 2048])
def test_mup_muon_is_seed_001_table(width: int) -> None:
    plan = plan_for("parametrization=mup", "optimizer=muon", f"model.width={width}")
    for row in plan.rows():
        shape = row["shape"]
        if row["role"] == "hidden":
            dout, din = shape
            assert row["init_std"] == pytest.approx(math.sqrt(dout / din) / (math.sqrt(din) + math.sqrt(dout)))
            assert row["lr"] == pytest.approx(ETA) and row["update"] == "spectral"
            assert row["scale_rule"] == "mup" and row["scale_shape"][0] / row["scale_shape"][1] == dout / din
        elif row["role"] == "embedding":
            assert (row["init_std"], row["lr"], row["update"]) == (pytest.approx(1.0), pytest.approx(ETA), "row_norm")
        elif row["role"] == "readout":
            assert row["init_std"] == pytest.approx(1 / width) and row["lr"] == pytest.approx(ETA / width)
            assert row["update"] == "row_norm"
        elif row["role"] == "gain":
            assert (row["init_mean"], row["init_std"], row["update"]) == (1.0, 0.0, "sign")
            assert row["lr"] == pytest.approx(ETA)


def test_sp_is_constant_and_fanin_scales_init_only() -> None:
    for width in (64, 512):
        sp = plan_for("parametrization=sp", "optimizer=adamw", f"model.width={width}")
        assert {r["init_std"] for r in sp.rows() if r["role"] != "gain"} == {0.02}
        assert {r["lr"] for r in sp.rows()} == {ETA}
        fanin = plan_for("parametrization=sp_fanin", "optimizer=adamw", f"model.width={width}")
        assert first(fanin, "hidden")["init_std"] == pytest.approx(0.02 * math.sqrt(128 / width))
        assert {r["lr"] for r in fanin.rows()} == {ETA}


def test_ntk_adam_uses_multipliers() -> None:
    plan = plan_for("parametrization=ntk", "optimizer=adamw", "model.width=512")
    hid = first(plan, "hidden")
    assert hid["multiplier"] == pytest.approx(0.5) and hid["lr"] == pytest.approx(ETA / 2)
    assert hid["init_std"] == pytest.approx(0.02)


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "muon"])
def test_presets_agree_at_the_base_width(optimizer: str) -> None:
    presets = ["sp", "sp_fanin", "mup"] + (["ntk"] if optimizer != "muon" else [])
    tables = [plan_for(f"parametrization={p}", f"optimizer={optimizer}", "model.width=128").rows() for p in presets]
    keys = ("name", "init_std", "init_mean", "multiplier", "lr", "update")
    reference = [{k: row[k] for k in keys} for row in tables[0]]
    for table in tables[1:]:
        assert [{k: row[k] for k in keys} for row in table] == reference


def test_base_value_rules() -> None:
    assert base_value("1/sqrt(fan_in)", 10, 400) == pytest.approx(0.05)
    assert base_value("1/fan_in", 10, 400) == pytest.approx(1 / 400)
    assert base_value("spectral", 512, 128) == pytest.approx(2 / (math.sqrt(128) + math.sqrt(512)))
    assert base_value("0.5", 1, 1) == 0.5


def test_initial_weights_follow_the_plan_and_ignore_the_lr() -> None:
    cfg = compose(["model.width=256", "optimizer=adamw", "train.seed=3"])
    model, plan = build_model(cfg, 256)
    other, _ = build_model(compose(["model.width=256", "optimizer=adamw", "train.seed=3", "optimizer.lr=0.5"]), 256)
    for (name, p), (_, q) in zip(model.named_parameters(), other.named_parameters()):
        assert torch.equal(p, q)
        entry = plan.by_name()[name]
        if entry.init_std > 0 and p.numel() > 1000:
            assert p.std().item() == pytest.approx(entry.init_std, rel=0.05)


def shifted(theta: float, sgd: bool = False, only: str = "abce", wd_shift: float = 0.0) -> list[str]:
    """Overrides that move every role of μP by (a+θ, b−θ, c−θ [c−2θ for SGD], eps+θ, wd + wd_shift)."""
    out = []
    preset = compose(["parametrization=mup"]).parametrization
    family = "sgd" if sgd else "adam"
    for role in ("embedding", "hidden", "readout", "gain", "bias"):
        row = preset.roles[role]
        c = row.c[family]
        if "a" in only:
            out.append(f"parametrization.roles.{role}.a={row.a + theta}")
        if "b" in only:
            out.append(f"parametrization.roles.{role}.b={row.b - theta}")
        if "c" in only:
            out.append(f"parametrization.roles.{role}.c.{family}={c - (2 if sgd else 1) * theta}")
        if "e" in only:
            out.append(f"parametrization.roles.{role}.eps={row.eps + theta}")
        if wd_shift:
            out.append(f"parametrization.roles.{role}.wd={row.wd + wd_shift}")
    return out


def losses(tiny: list[str], *overrides: str) -> list[float]:
    cfg = compose([*tiny, "model.width=64", "parametrization=mup", "train.eval_every=0", *overrides])
    result, _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    return [row["train_loss"] for row in result.curve]


def test_abc_symmetry_holds_under_adam_and_breaks_when_violated(tiny: list[str]) -> None:
    adam = ["optimizer=adamw", "optimizer.lr=0.01", "optimizer.weight_decay=0", "optimizer.eps=1e-6"]
    reference = losses(tiny, *adam)
    for theta in (1.0, -1.0):
        same = losses(tiny, *adam, *shifted(theta))
        assert same == pytest.approx(reference, rel=1e-4, abs=1e-5)
    no_eps = losses(tiny, *adam, *shifted(1.0, only="abc"))
    broken = losses(tiny, *adam, *shifted(1.0, only="ab"))
    assert max(abs(x - y) for x, y in zip(broken, reference)) > 1e-2
    assert max(abs(x - y) for x, y in zip(no_eps, reference)) > 1e-6


def test_abc_symmetry_under_sgd(tiny: list[str]) -> None:
    sgd = ["optimizer=sgd", "optimizer.lr=0.05"]
    reference = losses(tiny, *sgd)
    assert losses(tiny, *sgd, *shifted(1.0, sgd=True, only="abc")) == pytest.approx(reference, rel=1e-4, abs=1e-5)
    assert max(abs(x - y) for x, y in zip(losses(tiny, *sgd, *shifted(1.0, sgd=True, only="ab")), reference)) > 1e-3


EVERY_ROLE_DECAYED = [f"optimizer.decayed.{role}=true" for role in ("embedding", "hidden", "readout", "gain", "bias")]


@pytest.mark.parametrize(("rule", "lam", "moves"), [("lr_scaled", 2.0, 1.0), ("independent", 0.02, 0.0)])
def test_abc_symmetry_with_decoupled_decay(tiny: list[str], rule: str, lam: float, moves: float) -> None:
    """Under Adam with decay on every role: λ's exponent moves by +θ when c moves by −θ for ``lr_scaled`` decay
    (η_p·λ_p must not change), and stays for ``independent`` decay (λ_p alone is the per-step decay); moving it
    the other way changes the losses."""
    adam = ["optimizer=adamw", "optimizer.lr=0.01", "optimizer.eps=1e-6", f"optimizer.weight_decay={lam}",
            f"optimizer.weight_decay_rule={rule}", *EVERY_ROLE_DECAYED]
    reference = losses(tiny, *adam)
    assert losses(tiny, *adam, *shifted(1.0, wd_shift=moves)) == pytest.approx(reference, rel=1e-4, abs=1e-5)
    broken = losses(tiny, *adam, *shifted(1.0, wd_shift=1.0 - moves))
    assert max(abs(x - y) for x, y in zip(broken, reference)) > 1e-4


def test_abc_symmetry_with_sgd_l2_decay(tiny: list[str]) -> None:
    """SGD's L2 penalty: λ's exponent moves by +2θ (λ·m^-2θ) when c moves by −2θ."""
    sgd = ["optimizer=sgd", "optimizer.lr=0.05", "optimizer.weight_decay=2", *EVERY_ROLE_DECAYED]
    reference = losses(tiny, *sgd)
    same = losses(tiny, *sgd, *shifted(1.0, sgd=True, only="abc", wd_shift=2.0))
    assert same == pytest.approx(reference, rel=1e-4, abs=1e-5)
    broken = losses(tiny, *sgd, *shifted(1.0, sgd=True, only="abc"))
    assert max(abs(x - y) for x, y in zip(broken, reference)) > 1e-4


@pytest.mark.parametrize("optimizer", ["muon", "adamw"])
def test_effective_lr_is_the_size_of_one_real_step(optimizer: str) -> None:
    """One optimizer step at width 256 (no warm-up, no decay), measured per role: the spectral norm of a Muon
    matrix's step, the row RMS of a row-normalised one, the per-entry size of a sign or Adam step, the RMS of
    a bias step — each equals the plan's ``effective_lr`` (within the Newton–Schulz band for msign)."""
    from mutransfer.model.apply import build_optimizer
    from mutransfer.train.loop import loss_of

    cfg = compose([f"optimizer={optimizer}", "model.width=256", "model.depth=1", "model.bias=true",
                   "optimizer.momentum=0.0" if optimizer == "muon" else "optimizer.beta1=0.9"])
    model, plan = build_model(cfg, 256)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    x = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(0))
    loss_of(model, x, x).backward()
    build_optimizer(model, plan).step()
    rows = {row["name"]: row for row in plan.rows()}
    if optimizer == "muon":
        assert rows["blocks.0.mlp.up.weight"]["shape_factor"] == pytest.approx(2.0)
        assert rows["blocks.0.mlp.down.weight"]["shape_factor"] == pytest.approx(0.5)
    for name, p in model.named_parameters():
        step, eff = (p.detach() - before[name]).float(), rows[name]["effective_lr"]
        update = rows[name]["update"]
        if update == "spectral":
            assert 0.7 * eff <= torch.linalg.matrix_norm(step, ord=2).item() <= 1.25 * eff, name
        elif update == "row_norm":
            moved = step.abs().sum(1) > 0
            rms = step[moved].pow(2).mean(1).sqrt()
            torch.testing.assert_close(rms, torch.full_like(rms, eff), rtol=1e-2, atol=0.0)  # RMS + eps
        elif update == "rms":
            assert step.pow(2).mean().sqrt().item() == pytest.approx(eff, rel=1e-2), name  # RMS + eps
        else:
            moved = step[step != 0].abs()
            assert moved.median().item() == pytest.approx(eff, rel=1e-2), name


def test_every_optimizer_has_learning_rate_rules_in_a_shipped_preset_and_presets_name_only_known_columns() -> None:
    from mutransfer.config import group_options
    from mutransfer.files import load_yaml
    from mutransfer.config import packaged_dir
    from mutransfer.schema import FAMILIES, ROLES

    columns = {family.exponents for family in FAMILIES}
    covered = set()
    for preset in group_options("parametrization"):
        rows = load_yaml(packaged_dir("configs") / "parametrization" / f"{preset}.yaml", "preset")["roles"]
        assert set(rows) == {role.name for role in ROLES if role.like is None}, preset  # the others inherit
        for row in rows.values():
            assert set(row["c"]) <= columns, (preset, row)
        covered |= {column for column in columns if all(row["c"].get(column) is not None for row in rows.values())}
    assert covered == columns


def test_a_token_budget_sets_the_steps_on_a_copy_and_validation_changes_nothing() -> None:
    from mutransfer.config import resolved, validate

    cfg = compose(["train.tokens=65536", "train.batch_size=8", "train.seq_len=32"])
    assert cfg.train.steps == 65536 // (8 * 32)
    raw = compose(["train.batch_size=8", "train.seq_len=32"])
    raw.train.tokens = 32768
    before = raw.train.steps
    validate(raw)
    assert raw.train.steps == before and resolved(raw).train.steps == 32768 // (8 * 32) and raw.train.steps == before
