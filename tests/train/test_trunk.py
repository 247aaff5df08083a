"""Horizons from one trunk: the WSD schedule, a branch equal to its horizon's run from scratch, resuming after a
kill, a horizon sweep with and without trunks, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from conftest import invoke, load_script, refused_in_one_line
from mutransfer.config import compose
from mutransfer.schema import Config, TrainConfig
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import TrainResult, train_model
from mutransfer.optim.schedule import cooldown_start, progress, schedule_factor
from mutransfer.train.trunk import TRUNK_DIR, branch_points, trunk_for

HORIZONS = (12, 24)


def wsd(tiny: list[str], steps: int, *extra: str) -> Config:
    return compose(["parametrization=mup", "optimizer=muon", *tiny, f"train.steps={steps}", "train.schedule=wsd",
                    "train.warmup_steps=2", "train.eval_every=4", "train.threads=1", *extra])


def same_run(a: TrainResult, b: TrainResult) -> bool:
    keys = ("step", "train_loss", "lr", "tokens")
    return (a.status, a.val_loss, a.steps, a.initial_loss, a.evals) == (b.status, b.val_loss, b.steps, b.initial_loss,
                                                                        b.evals) \
        and [[row[k] for k in keys] for row in a.curve] == [[row[k] for k in keys] for row in b.curve]


def test_wsd_warms_up_in_steps_holds_then_decays_and_every_horizon_shares_its_trunk() -> None:
    cfgs = {s: TrainConfig(steps=s, schedule="wsd", warmup_steps=3, cooldown_frac=0.25) for s in (20, 40)}
    factors = {s: [schedule_factor(i, c) for i in range(s)] for s, c in cfgs.items()}
    assert factors[20][:3] == pytest.approx([1 / 3, 2 / 3, 1.0]) and cooldown_start(cfgs[20]) == 15
    assert factors[20][3:16] == [1.0] * 13 and factors[20][16:] == pytest.approx([0.8, 0.6, 0.4, 0.2])
    assert factors[40][:cooldown_start(cfgs[20])] == factors[20][:cooldown_start(cfgs[20])]
    assert all(a > b for a, b in zip(factors[40][30:], factors[40][31:]))
    assert [progress(i, cfgs[20]) for i in (0, 15, 16, 19)] == pytest.approx([0.0, 0.0, 0.2, 0.8])
    assert branch_points(cfgs[20], (20, 40, 80)) == (15, 30, 60)


@pytest.mark.parametrize("extra", [[], ["optimizer=adamw"], ["optimizer.muon_scale=scheduled"]])
def test_a_branch_is_its_horizons_run_from_scratch(tmp_path: Path, tiny: list[str], extra: list[str]) -> None:
    cfgs = {s: wsd(tiny, s, *extra) for s in HORIZONS}
    corpus = load_corpus(cfgs[12].data, cfgs[12].train.seq_len)
    trunks = {s: trunk_for(cfg, tmp_path, HORIZONS) for s, cfg in cfgs.items()}
    assert trunks[12] == trunks[24] and trunks[12].branches == (10, 19)
    longest, _ = train_model(cfgs[24], corpus, trunk=trunks[24])
    assert sorted(p.name for p in trunks[24].directory.iterdir()) == ["step000000010.pt", "step000000019.pt"]
    branch, _ = train_model(cfgs[12], corpus, trunk=trunks[12])
    scratch = {s: train_model(cfg, corpus)[0] for s, cfg in cfgs.items()}
    assert branch.branched_at == 10 and longest.branched_at == 0
    assert same_run(branch, scratch[12]) and same_run(longest, scratch[24])
    assert branch.summary()["branched_at"] == 10 and "branched_at" not in scratch[12].summary()
    assert branch.tokens_per_s == pytest.approx(2 * 4 * 32 / branch.seconds)


def test_a_trunk_killed_mid_run_resumes_from_its_last_checkpoint(tmp_path: Path, tiny: list[str]) -> None:
    cfg = wsd(tiny, 24)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    trunk = trunk_for(cfg, tmp_path, HORIZONS)

    def kill(step: int, _: Any) -> None:
        if step == 15:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_model(cfg, corpus, on_step=kill, trunk=trunk)
    assert [p.name for p in trunk.directory.iterdir()] == ["step000000010.pt"]
    resumed, _ = train_model(cfg, corpus, trunk=trunk)
    assert resumed.branched_at == 10 and same_run(resumed, train_model(cfg, corpus)[0])


def horizon_spec(tmp_path: Path, text_file: Path, **extra: Any) -> Path:
    spec = {"name": "wsd", "setups": {"mup_muon": ["parametrization=mup", "optimizer=muon"]},
            "widths": [32], "steps": [8, 16], "seeds": [0],
            "search": {"log2_min": -4, "log2_max": -2, "step": 1, "extend": False, "noise_seeds": 1},
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.batch_size=4", "train.seq_len=32",
                          "train.eval_batches=2", "train.eval_every=4", "data=text", f"data.path={text_file}",
                          "train.schedule=wsd", "train.warmup_steps=2"], **extra}
    path = tmp_path / "wsd.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_a_horizon_sweep_branches_off_trunks_and_computes_what_from_scratch_does(runner, tmp_path: Path,  # noqa: ANN001
                                                                                 text_file: Path) -> None:
    spec = horizon_spec(tmp_path, text_file)
    tables = {}
    for words in ([], ["trunks=false"]):
        run = tmp_path / ("scratch" if words else "trunk")
        result = invoke(runner, "sweep", str(spec), *words, "--out", str(run), "--workers", "1", "--threads", "1")
        assert result.exit_code == 0, result.output
        tables[bool(words)] = pd.read_csv(run / "trials.csv").sort_values(["horizon", "seed", "log2_lr"])
    trunk, scratch = tables[False], tables[True]
    assert list(trunk["val_loss"]) == list(scratch["val_loss"])
    assert "branched_at" not in scratch.columns
    branched = trunk[trunk["branched_at"] > 0]
    assert set(branched["horizon"]) == {8} or set(branched["horizon"]) == {16}
    assert len(list((tmp_path / "trunk" / TRUNK_DIR).iterdir())) == len(set(zip(trunk["log2_lr"], trunk["seed"])))
    report = load_script("bench_trunk").side_by_side(tmp_path / "scratch", tmp_path / "trunk").splitlines()
    assert len(report) == 7 and report[-2].endswith(f"{len(trunk)} of the {len(trunk)} points both trained gave the "
                                                    "same validation loss to the bit")
    steps = int((trunk["steps"] - trunk["branched_at"].fillna(0)).sum()), int(scratch["steps"].sum())
    assert f"steps trained: {steps[0]:,} of {steps[1]:,} ({steps[0] / steps[1]:.1%})" in report[-1]
    assert steps[0] < steps[1]
    row = report[3].split(" | ")  # the 16-step horizon: every branch trained on from a trunk checkpoint
    ratio = trunk[trunk["horizon"] == 16]["seconds"].sum() / scratch[scratch["horizon"] == 16]["seconds"].sum()
    assert row[1] == "16" and row[4] == f"{ratio:.0%}"
    assert trunk[trunk["horizon"] == 16]["branched_at"].between(1, 15).all()
    again = invoke(runner, "sweep", str(spec), "trunks=false", "--out", str(tmp_path / "trunk"), "--workers", "1")
    assert again.exit_code == 0, again.output
    assert len(pd.read_csv(tmp_path / "trunk" / "trials.csv")) == len(trunk)


@pytest.mark.parametrize(("words", "says"), [
    (["train.warmup_steps=null", "train.warmup_frac=0.1"], "train.warmup_steps=N"),
    (["train.warmup_steps=9"], "train.warmup_steps=9 runs past the shortest horizon's decay (step 6)"),
    (["trunks=maybe"], "trunks='maybe' is not true or false"),
    (["train.schedule=steady"], "train.schedule")])
def test_bad_trunk_input_is_one_line(runner, tmp_path: Path, text_file: Path, words: list[str],  # noqa: ANN001
                                     says: str) -> None:
    refused_in_one_line(runner, horizon_spec(tmp_path, text_file), words, says, tmp_path / "out")
