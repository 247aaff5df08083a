"""Batch size and token budget as transfer axes: specs with ``batch_sizes``/``hold``/``tokens``, the token budget
in the config, the law over batch and tokens, the batch worth using (best and critical batch, growth with the
budget), batch.png, ``transfer --batch-size --tokens``, ``verify``, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import invoke, refused_in_one_line
from mutransfer.analysis.batch import batch_analysis, critical_batch, growth
from mutransfer.analysis.drift import SearchSettings
from mutransfer.analysis.result import Summary
from mutransfer.analysis.summary import summarize
from mutransfer.analysis.trial_table import swept_axes
from mutransfer.config import compose, to_dict

SEQ = 32


def batch_spec(tmp_path: Path, text_file: Path, **extra: object) -> Path:
    """μP + Muon at widths 32, 64; batches 2, 4 crossed with budgets of 16 and 32 steps at batch 2."""
    spec = {"name": "batch", "setups": {"mup_muon": ["parametrization=mup", "optimizer=muon"]},
            "widths": [32, 64], "batch_sizes": [2, 4], "tokens": [2 * 8 * SEQ, 2 * 16 * SEQ],
            "axes": ["batch_sizes", "tokens"], "seeds": [0],
            "search": {"log2_min": -4, "log2_max": 0, "step": 1, "extend_max": 2, "noise_seeds": 1},
            "overrides": ["model.depth=1", "parametrization.base_width=32", f"train.seq_len={SEQ}",
                          "train.eval_batches=2", "train.eval_every=0", "data=text", f"data.path={text_file}"],
            **extra}
    path = tmp_path / "batch.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_spec_crosses_batches_with_budgets_and_names_its_studies(tmp_path: Path, text_file: Path) -> None:
    from mutransfer.sweep.spec.sweep_spec import load_spec, spec_from_dict
    from mutransfer.sweep.plan.sweep_plan import SweepPlan
    from mutransfer.sweep.plan.trial import trial_config

    spec = load_spec(str(batch_spec(tmp_path, text_file)))
    assert spec.hold == "tokens" and spec.swept() == ("width", "batch", "tokens")
    assert [tuple(p)[:5] for p in spec.points()] == [(32, None, None, 2, 512), (32, None, None, 2, 1024),
                                                     (32, None, None, 4, 512), (32, None, None, 4, 1024),
                                                     (64, None, None, 2, 512)]
    key = next(k for k in SweepPlan.of(spec).studies if k.point.batch == 4 and k.point.tokens == 1024)
    assert key.name("p") == "p.mup_muon.log2_lr.w32.b4.tok1024.s0"
    cfg = trial_config(spec, key, -2.0)
    assert (cfg.train.batch_size, cfg.train.tokens, cfg.train.steps, cfg.train.eval_batch_size) == (4, 1024, 8, 4)
    assert spec_from_dict(spec.as_dict()) == spec
    assert len(load_spec(str(batch_spec(tmp_path, text_file)), ["axes=one"]).points()) == 4
    assert len(load_spec(str(batch_spec(tmp_path, text_file)), ["axes=product"]).points()) == 8
    held = load_spec(str(batch_spec(tmp_path, text_file)), ["hold=steps", "tokens=null", "axes=one", "train.steps=12"])
    assert held.swept() == ("width", "batch") and held.listed("tokens") == ()
    assert trial_config(held, SweepPlan.of(held).studies[1], -2.0).train.steps == 12


def test_specs_without_a_batch_axis_keep_their_names_and_records() -> None:
    from mutransfer.sweep.spec.sweep_spec import load_spec
    from mutransfer.sweep.plan.sweep_plan import SweepPlan

    for name in ("default", "axes", "horizon", "weight_decay"):
        spec = load_spec(name)
        assert not {"batch_sizes", "hold", "tokens"} & set(spec.as_dict())
        assert all(".b" not in key.name("p").split("log2_lr")[-1] and ".tok" not in key.name("p")
                   for key in SweepPlan.of(spec).studies)
    data = to_dict(compose([]))["train"]
    assert not {"tokens", "eval_batch_size", "noise_scale", "warmup_steps", "cooldown_frac"} & set(data)


def test_a_token_budget_sets_the_steps() -> None:
    cfg = compose(["train.tokens=65536", "train.batch_size=8", "train.seq_len=64"])
    assert cfg.train.steps == 128 and to_dict(cfg)["train"]["tokens"] == 65536


@pytest.mark.parametrize(("words", "says"), [
    (["hold=tokens", "batch_sizes=null", "tokens=null"], "hold: tokens needs a batch axis"),
    (["tokens=[1000]", "axes=one"], "train.tokens=1000 is not a whole number of batches of 2 × train.seq_len=32"),
    (["tokens=[32]", "axes=one"], "train.tokens=32 is smaller than one batch"),
    (["tokens=null"], "needs the token budget"),
    (["steps=[8, 16]"], "under hold: tokens the budget sets the steps"),
    (["hold=steps"], "under hold: steps the tokens follow from the batch"),
    (["axes=[batch_sizes]"], "must list two or more of the axes"),
    (["batch_sizes=[4]"], "batch_sizes=[4] names one value")])
def test_bad_batch_specs_are_one_line(runner, tmp_path: Path, text_file: Path, words: list[str],  # noqa: ANN001
                                      says: str) -> None:
    refused_in_one_line(runner, batch_spec(tmp_path, text_file), words, says, tmp_path / "run")


def bowls(truth: dict[tuple[int, int], tuple[float, float]], seeds: int = 3, jitter: float = 0.1,
          hold: str = "tokens", rng_seed: int = 5) -> pd.DataFrame:
    """Seeded bowls in log2 η at each (batch, tokens) point: ``truth[(B, D)] = (log2 η*, loss at η*)``; steeper
    on the high side (1.7×, as real bowls are), each seed's level shared by every point (seeds share batches)."""
    rng = np.random.default_rng(rng_seed)
    levels = rng.normal(0, 0.004, seeds)
    rows = []
    for (batch, tokens), (centre, level) in truth.items():
        for seed in range(seeds):
            shift = rng.normal(0, jitter)
            for x in np.arange(-10.0, 0.5, 1.0):
                d = x - centre - shift
                loss = level + levels[seed] + rng.normal(0, 0.002) + 0.2 * d * d * (1.7 if d > 0 else 1.0)
                rows.append({"setup": "s", "width": 64, "batch_size": batch, "tokens": tokens, "hold": hold,
                             "seed": seed, "search_key": "optimizer.lr", "log2_lr": x, "val_loss": loss,
                             "status": "ok"})
    return pd.DataFrame(rows)


def law_truth(budgets: tuple[int, ...] = (2**16, 2**18, 2**20)) -> dict[tuple[int, int], tuple[float, float]]:
    """log2 η* = −4 + 0.5 log2(B/8) − 0.3 log2(D/2^16); the loss falls with the budget and rises past a best batch
    that grows as D^0.5 (8, 16, 32 sequences)."""
    truth = {}
    for d in budgets:
        best = 8 * math.sqrt(d / 2**16)
        for b in (4, 8, 16, 32, 64, 128):
            level = 3.0 - 0.1 * math.log2(d / 2**16) + 0.02 * (math.log2(b / best)) ** 2
            truth[(b, d)] = (-4 + 0.5 * math.log2(b / 8) - 0.3 * math.log2(d / 2**16), level)
    return truth


def test_the_law_uses_batch_and_tokens_and_recovers_both_slopes() -> None:
    trials = bowls(law_truth())
    assert [a.name for a in swept_axes(trials)] == ["width", "batch", "tokens"]
    info = summarize(trials, {"optimizer.lr": {"s": SearchSettings()}}).setups()["s"]
    law = info.law
    assert law is not None
    assert law.axes == ["batch", "tokens"]
    assert law.coefficients["batch"] == pytest.approx(0.5, abs=0.1)
    assert law.coefficients["tokens"] == pytest.approx(-0.3, abs=0.1)
    assert law.beta == pytest.approx(0.3, abs=0.1)
    lo, hi = law.slope_ci["batch"]
    assert lo < 0.5 < hi
    steps = bowls(law_truth((2**16,)), hold="steps")
    assert [a.name for a in swept_axes(steps)] == ["width", "batch"]


def test_the_batch_worth_using_grows_with_the_budget() -> None:
    trials = bowls(law_truth())
    entry = summarize(trials, {"optimizer.lr": {"s": SearchSettings()}}).setups()["s"].batch
    assert entry is not None
    assert entry["hold"] == "tokens" and entry["tolerance"] == 0.01
    assert summarize(trials, {"optimizer.lr": {"s": SearchSettings()}}).hold == "tokens"
    for tokens, best in ((2**16, 8), (2**18, 16), (2**20, 32)):
        at = entry["budgets"][str(tokens)]
        assert at["best"]["censored"] is None
        assert at["best"]["ci"][0] < best < at["best"]["ci"][1]
        assert at["best"]["batch"] == pytest.approx(best, rel=0.35)
        # 1 % of 3 nats above a parabola of 0.02 nats per octave²: √1.5 octaves past the best batch
        assert at["critical"]["status"] == "measured"
        assert math.log2(at["critical"]["batch"] / best) == pytest.approx(math.sqrt(1.5 - 0.05 * math.log2(
            tokens / 2**16)), abs=0.35)
    assert entry["growth"]["best"]["gamma"] == pytest.approx(0.5, abs=0.15)
    lo, hi = entry["growth"]["best"]["gamma_ci"]
    assert lo < 0.5 < hi
    assert entry["best"] == entry["budgets"][str(2**16)]["best"]


def test_a_best_batch_at_the_edge_is_a_bound_and_fewer_budgets_fit_no_growth() -> None:
    truth = {(b, 2**16): (-4.0, 3.0 + 0.05 * math.log2(b)) for b in (4, 8, 16, 32)}
    entry = batch_analysis(summary_rows(bowls(truth)), {"s": SearchSettings()})["s"]
    assert entry["best"]["censored"] == "low" and entry["best"]["batch"] == 4 and entry["best"]["ci"][0] is None
    assert entry["growth"] == {"best": None, "critical": None}
    assert growth({2**16: entry["best"], 2**17: entry["best"], 2**18: entry["best"]}) is None


def summary_rows(trials: pd.DataFrame) -> pd.DataFrame:
    """The analysis's columns (``x``, ``loss``) from bowls' trials."""
    return trials.rename(columns={"log2_lr": "x", "val_loss": "loss"})


def test_a_critical_batch_is_unresolved_or_a_bound_when_the_data_cannot_place_it() -> None:
    curve = pd.DataFrame({"batch": [4, 8, 16, 32], "log2_batch": [2.0, 3.0, 4.0, 5.0],
                          "loss": [3.0, 3.005, 3.01, 3.02], "loss_se": [0.001] * 4, "dof": [2] * 4})
    assert critical_batch(curve)["status"] == "bound"
    assert critical_batch(curve)["batch"] == 32
    steep = curve.assign(loss=[3.0, 3.01, 3.05, 3.2])
    assert critical_batch(steep)["status"] == "measured"
    assert 8 <= critical_batch(steep)["batch"] <= 16
    noisy = steep.assign(loss_se=[0.02] * 4)
    assert critical_batch(noisy)["status"] == "unresolved"
    assert critical_batch(steep.assign(loss_se=[math.nan] * 4, dof=[0] * 4))["status"] == "unresolved"


def test_a_batch_sweep_runs_and_transfer_and_verify_take_a_batch_and_a_budget(runner, tmp_path: Path,  # noqa: ANN001
                                                                             text_file: Path) -> None:
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(batch_spec(tmp_path, text_file)), "--out", str(run), "--workers", "1",
                    "--threads", "1")
    assert result.exit_code == 0, result.output
    assert "1 setups × 2 widths × 2 batch sizes × 2 token budgets × 1 seeds (axes:" in " ".join(result.output.split())
    assert "the batch worth using at each token budget" in result.output
    assert "--batch-size 4 --tokens 4096" in " ".join(result.output.split())
    trials = pd.read_csv(run / "trials.csv")
    assert {"batch_size", "tokens", "hold"} <= set(trials.columns) and set(trials["hold"]) == {"tokens"}
    ok = trials[trials["status"] == "ok"]
    assert (ok["steps"] * ok["batch_size"] * SEQ == ok["tokens"]).all()
    assert set(trials["study"].str.extract(r"\.(b\d+\.tok\d+)\.")[0]) == {"b2.tok512", "b2.tok1024", "b4.tok512",
                                                                           "b4.tok1024"}
    summary = Summary.from_json(json.loads((run / "summary.json").read_text())).setups()["mup_muon"]
    assert summary.batch is not None and set(summary.batch["budgets"]) == {"512", "1024"}
    assert (run / "batch.png").stat().st_size > 10_000
    out = tmp_path / "t.yaml"
    done = invoke(runner, "transfer", "--width", "128", "--batch-size", "8", "--tokens", "2048", "--from", str(run),
                  "--out", str(out))
    assert done.exit_code == 0, done.output
    document = yaml.safe_load(out.read_text())
    train = document["config"]["train"]
    assert (train["batch_size"], train["tokens"], train["steps"]) == (8, 2048, 8)
    wide = invoke(runner, "transfer", "--width", "128", "--batch-size", "64", "--tokens", "65536", "--from", str(run),
                  "--out", str(tmp_path / "w.yaml"))
    assert wide.exit_code == 0 and "outside the swept batches" in " ".join(wide.output.split())
    dry = invoke(runner, "verify", "--width", "64", "--batch-size", "4", "--tokens", "2048", "--from", str(run),
                 "--dry-run", "--workers", "1")
    assert dry.exit_code == 0, dry.output
    assert "batch_size 4, tokens 2048" in " ".join(dry.output.split())
