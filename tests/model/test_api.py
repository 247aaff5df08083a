"""The Python API: the same numbers as the CLI path, clear refusals, plan files, user models, token data."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mutransfer
from mutransfer.model_kinds import build_model
from mutransfer.config import compose
from mutransfer.train.data import load_corpus
from mutransfer.errors import UserError
from mutransfer.model.gpt import GPT
from mutransfer.model.apply import build_optimizer
from mutransfer.train.loop import train_model

ROOT = Path(__file__).resolve().parents[2]
GPT_ROLES = {"embed.weight": "embedding", "lm_head.weight": "readout", "*norm.weight": "gain", "*.bias": "bias",
             "*": "hidden"}


@pytest.mark.parametrize("preset, optimizer", [("mup", "muon"), ("mup", "adamw"), ("sp", "sgd")])
def test_gpt_through_the_api_equals_the_cli_path(preset: str, optimizer: str) -> None:
    cfg = compose([f"parametrization={preset}", f"optimizer={optimizer}", "model.width=256", "model.depth=1",
                   "train.seed=5"])
    reference, ref_plan = build_model(cfg, 256)
    ref_opt = build_optimizer(reference, ref_plan)
    model = GPT(cfg.model, 256)
    plan = mutransfer.parametrize(model, GPT_ROLES, preset=preset, optimizer=optimizer, width=256, base_width=128,
                                  factory=lambda w: GPT(replace(cfg.model, width=w), 256), seed=5,
                                  depth=1, in_block=["blocks.*"])
    for (name, a), (_, b) in zip(reference.named_parameters(), model.named_parameters()):
        assert torch.equal(a, b), name
    opt = mutransfer.build_optimizer(model, plan)
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in ref_opt.param_groups]
    assert type(opt) is type(ref_opt)
    assert plan.rows() == ref_plan.rows()


class Tied(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, width)
        self.head = nn.Linear(width, 16, bias=False)
        self.head.weight = self.embed.weight


class Small(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, width)
        self.mid = nn.Linear(width, width, bias=False)
        self.head = nn.Linear(width, 16, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.mid(self.embed(idx)))


SMALL_ROLES = {"embed.weight": "embedding", "head.weight": "readout", "*": "hidden"}


def test_tied_and_unmatched_parameters_are_refused() -> None:
    with pytest.raises(UserError, match="'embed.weight' and 'head.weight' are tied"):
        mutransfer.parametrize(Tied(32), {"*": "hidden"}, width=32, base_width=32)
    with pytest.raises(UserError, match="no role pattern matches: mid.weight, head.weight"):
        mutransfer.parametrize(Small(32), {"embed.*": "embedding"}, width=32, base_width=32)
    with pytest.raises(UserError, match="no base_model or factory"):
        mutransfer.parametrize(Small(64), SMALL_ROLES, width=64, base_width=32)
    with pytest.raises(UserError, match="not a role"):
        mutransfer.parametrize(Small(32), {"*": "hiden"}, width=32, base_width=32)


def test_first_matching_pattern_wins_and_table_applies() -> None:
    model = Small(128)
    plan = mutransfer.parametrize(model, {"head.*": "readout", "embed.*": "embedding", "*": "hidden"}, preset="mup",
                                  optimizer="adamw", width=128, base_width=32, factory=Small, lr=0.01)
    table = plan.by_name()
    assert (table["head.weight"].role, table["mid.weight"].role) == ("readout", "hidden")
    assert table["mid.weight"].init_std == pytest.approx(0.02 / 2)
    assert plan.lr_of("mid.weight") == pytest.approx(0.01 / 4) and plan.lr_of("head.weight") == pytest.approx(0.01 / 4)
    assert model.mid.weight.std().item() == pytest.approx(0.01, rel=0.05)


def test_multiplier_hooks_scale_outputs() -> None:
    model = Small(128)
    plan = mutransfer.parametrize(model, SMALL_ROLES, preset="ntk", optimizer="adamw", width=128, base_width=32,
                                  factory=Small)
    idx = torch.randint(0, 16, (2, 5))
    before = model(idx)
    handles = mutransfer.attach_multipliers(model, plan)
    assert plan.by_name()["mid.weight"].multiplier == pytest.approx(0.5) and len(handles) == 2
    torch.testing.assert_close(model(idx), before * 0.25)


def test_plan_save_load_round_trip(tmp_path: Path) -> None:
    model = Small(64)
    plan = mutransfer.parametrize(model, SMALL_ROLES, width=64, base_width=32, factory=Small, lr=0.02)
    for suffix in (".yaml", ".json"):
        path = tmp_path / f"plan{suffix}"
        plan.save(path)
        loaded = mutransfer.Plan.load(path)
        assert loaded == plan
        assert loaded.optimizer_config == plan.optimizer_config
        assert [g["lr"] for g in mutransfer.build_optimizer(model, loaded).param_groups] == \
            [g["lr"] for g in mutransfer.build_optimizer(model, plan).param_groups]


def test_token_files_train_and_refuse_big_ids(tmp_path: Path, tiny: list[str]) -> None:
    rng = np.random.default_rng(0)
    ids = (np.arange(40_000) * 7 + rng.integers(0, 3, 40_000)) % 1000
    path = tmp_path / "train.bin"
    ids.astype(np.uint16).tofile(path)
    overrides = [o for o in tiny if not o.startswith("data")] + ["data=tokens", f"data.path={path}",
                                                                  "data.vocab_size=1000"]
    cfg = compose(overrides)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    assert corpus.vocab_size == 1000 and len(corpus.train) + len(corpus.val) == 40_000
    result, plan = train_model(cfg, corpus)
    assert result.status == "ok" and result.val_loss < result.initial_loss
    assert plan.by_name()["lm_head.weight"].shape == (1000, 32)
    with pytest.raises(UserError, match="token id 999 >= data.vocab_size=500"):
        load_corpus(compose([*overrides[:-1], "data.vocab_size=500"]).data, 32)


@pytest.mark.parametrize("optimizer", ["muon", "adamw", "sgd"])
def test_an_optimizer_whose_parameters_the_model_replaced_is_refused_at_its_first_step(optimizer: str) -> None:
    """Built from the model, it trains it with no word from the check; refused, naming ``fully_shard``, once the
    model's parameters are new tensors (here ``load_state_dict(assign=True)``; FSDP2's case is in
    ``distributed/``)."""
    idx = torch.randint(0, 16, (4, 8), generator=torch.Generator().manual_seed(0))

    def loss_of(model: nn.Module) -> torch.Tensor:
        return nn.functional.cross_entropy(model(idx).flatten(0, 1), idx.flatten())

    model = Small(32)
    plan = mutransfer.parametrize(model, SMALL_ROLES, preset="mup", optimizer=optimizer, width=32, base_width=32,
                                  lr=0.05)
    opt = mutransfer.build_optimizer(model, plan)
    losses = []
    for _ in range(5):
        loss = loss_of(model)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
    stale = mutransfer.build_optimizer(model, plan)
    model.load_state_dict({name: value.clone() for name, value in model.state_dict().items()}, assign=True)
    loss_of(model).backward()
    with pytest.raises(UserError, match="call fully_shard on the model first, then mutransfer.build_optimizer"):
        stale.step()


@pytest.mark.slow
def test_own_model_example_runs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "own_model_example.py"), "--tiny", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "own loop, width 256" in proc.stdout
    assert (tmp_path / "sweep" / "trials.csv").is_file() and (tmp_path / "transfer_w256.yaml").is_file()
    assert (tmp_path / "sweep" / "verify.csv").is_file()
    plan = mutransfer.Plan.load(tmp_path / "transfer_w256.yaml")
    assert {p.name for p in plan.params} == {"embed.weight", "up.weight", "down.weight", "norm.weight", "head.weight"}


def test_a_train_steps_override_gives_a_timescale_its_run_length() -> None:
    """A decay timescale needs the run's length: ``steps=``, or the same ``train.steps`` override a config would
    take; the two give one plan, and disagreeing ones are refused."""
    def plan(**kwargs: object) -> mutransfer.Plan:
        model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 8))
        return mutransfer.parametrize(model, {"0.*": "embedding", "1.*": "readout"}, preset="mup", optimizer="adamw",
                                      width=64, base_width=64, **kwargs)  # type: ignore[arg-type]

    timescale = ["optimizer.weight_decay_timescale=0.5"]
    by_override = plan(overrides=[*timescale, "train.steps=200"])
    by_argument = plan(overrides=timescale, steps=200)
    assert by_override.to_document() == by_argument.to_document()
    assert by_override.to_document() != plan(overrides=[*timescale, "train.steps=400"]).to_document()
    with pytest.raises(UserError, match="disagree"):
        plan(overrides=[*timescale, "train.steps=200"], steps=300)
