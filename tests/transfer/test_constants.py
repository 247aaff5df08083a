"""Per-role constants as searched quantities: which keys and sets can be searched, a rule scaled by a factor stays
a rule, and the coordinate-round search on a simulated loss surface over (η, two constants) recovers each
constant's factor inside its interval, calls a constant the surface ignores `no effect`, and reads a constant
whose optimum moves with the width as `drifts`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from conftest import load_script
from mutransfer.config import compose
from mutransfer.errors import UserError
from mutransfer.schema import LR_KEY
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.constants import (ConstantSurface, ConstantTruth, SurfacePoint, recheck_constant,
                                             search_constants)
from mutransfer.sweep.spec.search import SearchSpec
from mutransfer.table.constants import Constant, check_constants, coordinate_stages, parse_constant, scaled
from mutransfer.table.rules import base_value
from mutransfer.analysis.summary import summarize_run
from mutransfer.config import config_from_dict
from mutransfer.schema import FAMILIES
from mutransfer.transfer.constants import TunedConstant, constant_warnings, tuned_constants
from mutransfer.transfer.target import read_sweep_record
from printed_numbers import same_print

READOUT_LR = "optimizer.lr_mult.readout"
READOUT_MULT = "optimizer.multiplier.readout"
INITS = {"embedding": "1.0", "hidden": "spectral", "readout": "1/fan_in", "gain": "1.0", "bias": "0.0"}


def test_a_constant_is_a_per_role_key_of_the_optimizer_config() -> None:
    assert parse_constant(READOUT_LR) == Constant("lr_mult", "readout")
    assert parse_constant("optimizer.eps").key == "optimizer.eps"
    with pytest.raises(UserError, match="did you mean 'optimizer.lr_mult.readout'"):
        parse_constant("optimizer.lr_mult.reaodut")
    with pytest.raises(UserError, match="is not a per-role constant"):
        parse_constant("train.steps")


@pytest.mark.parametrize(("keys", "family", "says"), [
    ([f"optimizer.{k}.readout" for k in ("multiplier", "init", "lr_mult")], "adamw", "cannot be told apart"),
    (["optimizer.eps"], "muon", "AdamW's ε"),
    (["optimizer.init.bias"], "adamw", "zero init"),
    ([READOUT_LR, READOUT_LR], "adamw", "names a constant twice"),
    ([f"optimizer.lr_mult.{r}" for r in ("embedding", "hidden", "readout", "gain", "bias")], "muon", "at most 4"),
    ([], "muon", "no constant to search")])
def test_sets_that_cannot_be_told_apart_or_searched_are_refused(keys: list[str], family: str, says: str) -> None:
    with pytest.raises(UserError, match=says):
        check_constants(keys, FAMILIES.named(family), INITS)


def test_two_constants_of_a_role_and_adamws_eps_are_allowed() -> None:
    keys = [READOUT_LR, READOUT_MULT, "optimizer.eps"]
    assert [c.key for c in check_constants(keys, FAMILIES.named("adamw"), INITS)] == keys


def test_a_scaled_rule_stays_a_rule_and_the_plan_reads_it() -> None:
    assert scaled("1/fan_in", -1.0) == "0.5*1/fan_in" and scaled("0.5*1/fan_in", 2.0) == "2*1/fan_in"
    assert scaled("1/fan_in", 0.0) == "1/fan_in" and scaled(1.0, 1.5) == pytest.approx(2**1.5)
    assert base_value("0.5*1/fan_in", 64, 128) == pytest.approx(0.5 / 128)
    assert base_value("0.25*spectral", 64, 128) == pytest.approx(0.25 * base_value("spectral", 64, 128))
    cfg = compose(["optimizer=muon", "optimizer.lr_mult.readout=0.5*1/fan_in"])
    assert cfg.optimizer.lr_mult["readout"] == "0.5*1/fan_in"
    with pytest.raises(UserError, match="FACTOR\\*RULE"):
        compose(["optimizer.lr_mult.readout=half*1/fan_in"])


def test_the_coordinate_rounds_search_the_lr_then_each_constant_then_the_lr_again() -> None:
    assert coordinate_stages(["a", "b"], 2) == [LR_KEY, "a", "b", LR_KEY, "a", "b", LR_KEY]


LR = SearchSpec(min=-6, max=-2, step=1, noise_seeds=3)
FACTOR = SearchSpec(key="factor", min=-3, max=3, step=1, noise_seeds=3)


def test_the_search_recovers_a_factor_off_one_and_calls_an_ignored_constant_no_effect() -> None:
    """The readout's LR multiplier is best at 2^1.5 times the shipped one (and moves the LR's optimum with it);
    the surface ignores the readout's forward multiplier. Over 40 searches (two rounds, three noise seeds) on the
    real-curve simulator the first's interval holds 1.5 and it `matters` nearly always; the second has `no
    effect` nearly always."""
    surface = ConstantSurface(real_truth("muon", x0=-4.0),
                              {READOUT_LR: ConstantTruth(optimum=1.5, curvature=0.04, coupling=0.3),
                               READOUT_MULT: ConstantTruth(curvature=0.0)})
    rng = np.random.default_rng(5)
    verdicts = {key: Counter() for key in surface.constants}
    held = 0
    for _ in range(40):
        out = search_constants(SurfacePoint(surface, 64, rng), list(surface.constants), LR, FACTOR, rounds=2,
                               noise_seeds=3)
        for key in surface.constants:
            effect = out.last(key).effect
            assert effect is not None
            verdicts[key][effect.verdict] += 1
        optimum = out.last(READOUT_LR).optimum
        assert optimum is not None
        held += optimum.ci[0] <= 1.5 <= optimum.ci[1]
    assert held >= 34 and verdicts[READOUT_LR]["matters"] >= 34, (held, verdicts)
    assert verdicts[READOUT_MULT]["no effect"] >= 34, verdicts


def test_a_carried_constant_warns_unless_it_is_shown_to_hold_across_width() -> None:
    def tuned(verdict: str, width_verdict: Optional[str]) -> TunedConstant:
        return TunedConstant("optimizer.lr_mult.readout", 4.4, (2.8, 6.0), "1/fan_in", "21.1*1/fan_in", verdict, 0.04,
                             width_verdict)

    assert constant_warnings("mup_muon", [tuned("matters", "transfers"), tuned("no effect", "drifts")]) == []
    warned = {w: constant_warnings("mup_muon", [tuned("matters", w)]) for w in ("drifts", "inconclusive", None)}
    assert "moves with the width" in warned["drifts"][0]
    assert "holds across width is not shown (slope +0.04 per doubling)" in warned["inconclusive"][0]
    assert "tuned at one width" in warned[None][0]


def test_a_constant_remeasured_at_other_widths_is_not_called_measured_at_one_width() -> None:
    """The kept study's AdamW embedding multiplier was measured at three widths, two of them censored: its verdict
    across width is inconclusive (no slope), and the warning says so rather than 'tuned at one width'."""
    run = Path(__file__).resolve().parents[2] / "docs" / "data" / "constants"
    record = read_sweep_record(run)
    constants = tuned_constants(summarize_run(run), record, "mup_adamw", config_from_dict(record["setups"]["mup_adamw"]))
    embedding = next(c for c in constants if c.key == "optimizer.lr_mult.embedding")
    assert embedding.applied and embedding.width_verdict == "inconclusive" and embedding.width_slope is None
    (warning,) = constant_warnings("mup_adamw", [embedding])
    assert "holds across width is not shown" in warning and "one width" not in warning


def test_a_constants_panel_says_what_was_measured_at_each_constants_widths() -> None:
    """On the kept study's figure a constant measured at its tuning width alone is titled with whether it matters
    there and its gain; one measured across widths with its verdict and slope."""
    figure = load_script("constants_doc").constants_figure(Path(__file__).resolve().parents[2] / "docs" / "data" /
                                                           "constants")
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert any(same_print("lr_mult.embedding: mup_muon: no effect, gain +0.014 nats over factor 1", t)
               for t in titles), titles
    assert any(same_print("lr_mult.readout: mup_muon: inconclusive\nfactor* slope +0.04", t.split(" [")[0])
               for t in titles), titles


def test_a_constant_whose_optimum_moves_with_the_width_reads_drifts() -> None:
    surface = ConstantSurface(real_truth("muon", x0=-4.0), {READOUT_LR: ConstantTruth(optimum=1.0, slope=-1.5,
                                                                                      curvature=0.04)})
    rng = np.random.default_rng(9)
    fits = [recheck_constant(surface, READOUT_LR, [32, 64, 128], {READOUT_LR: 1.0, LR_KEY: -4.0}, LR, FACTOR, 3, rng)
            for _ in range(20)]
    assert sum(f.verdict == "drifts" for f in fits) >= 16, [f.verdict for f in fits]
    assert abs(np.mean([f.slope for f in fits]) + 1.5) < 0.2


class SurfaceTrainer:
    """Losses off a known surface instead of training: the LR's optimum at 2^-4, the readout's LR multiplier best
    at 2^1.5 times the shipped ``1/fan_in``, its forward multiplier ignored; each seed shifts a little."""

    def __init__(self) -> None:
        self.configs: list[tuple[int, str, float, str]] = []

    def fit(self, runs: list, on_eval: object, on_step: object = None) -> list:
        import math as m
        import zlib

        from mutransfer.train.result import TrainResult

        out = []
        for run in runs:
            cfg = run.cfg
            rule = cfg.optimizer.lr_mult["readout"]
            factor = float(rule.split("*")[0]) if "*" in rule else 1.0
            jitter = zlib.crc32(f"{cfg.train.seed}/{cfg.model.width}".encode()) / 2**32 - 0.5
            x = m.log2(cfg.optimizer.lr)
            loss = 2.0 + 0.3 * (x + 4.0 - 0.1 * jitter) ** 2 + 0.1 * (m.log2(factor) - 1.5 - 0.1 * jitter) ** 2
            self.configs.append((cfg.model.width, run.key.search.key, x, rule))
            out.append(TrainResult(status="ok", val_loss=loss, train_loss=loss, initial_loss=10.0, steps=1,
                                   seconds=0.0, tokens_per_s=0.0, optimizer_fraction=0.0, peak_memory_mb=0.0))
        return out


@pytest.mark.slow
def test_a_sweep_tunes_the_constants_then_sweeps_the_lr_with_them_and_rechecks_what_matters(
        tmp_path: Path, text_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import yaml
    from typer.testing import CliRunner

    import mutransfer.sweep.run.worker as worker_module
    from conftest import invoke

    trainer = SurfaceTrainer()
    monkeypatch.setattr(worker_module, "_trainer_for", lambda spec, opts: trainer)
    spec = {"name": "consts", "widths": [32, 64, 128], "seeds": [0],
            "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                    "search": {"log2_min": -6, "log2_max": -2}}},
            "search": {"key": LR_KEY, "step": 1, "sampler": "grid", "noise_seeds": 1},
            "constants": {"keys": [READOUT_LR, READOUT_MULT], "at": 64, "rounds": 1, "noise_seeds": 2},
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=2", "train.batch_size=2",
                          "train.seq_len=16", "data=text", f"data.path={text_file}"]}
    path = tmp_path / "consts.yaml"
    path.write_text(yaml.safe_dump(spec))
    run = tmp_path / "run"
    result = invoke(CliRunner(), "sweep", str(path), "--out", str(run), "--threads", "1")
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"]["complete"], summary["status"]
    tuned = summary["keys"][READOUT_LR]["setups"]["mup_muon"]["axes"]["width"]["points"]
    at = tuned["64"]
    assert at["ci"][0] <= 1.5 <= at["ci"][1] and at["constant"]["verdict"] == "matters", at
    assert {"32", "64", "128"} <= set(tuned)  # it matters: measured again at the other widths
    ignored = summary["keys"][READOUT_MULT]["setups"]["mup_muon"]["axes"]["width"]["points"]
    assert set(ignored) == {"64"} and ignored["64"]["constant"]["verdict"] == "no effect"
    lr_trials = [rule for width, key, _, rule in trainer.configs if key == LR_KEY and width == 128]
    assert lr_trials and all(rule.endswith("*1/fan_in") and float(rule.split("*")[0]) > 2 for rule in lr_trials)
    assert "vs factor 1" in result.output and (run / "lr_mult_readout.png").is_file()
    moved = invoke(CliRunner(), "transfer", "--width", "256", "--from", str(run))
    assert moved.exit_code == 0, moved.output
    assert "tuned constant optimizer.lr_mult.readout: 2^+1." in moved.output
    document = yaml.safe_load((run / "transfer_w256.yaml").read_text())
    carried = document["constants"][READOUT_LR]
    assert carried["applied"] and carried["value"] == document["config"]["optimizer"]["lr_mult"]["readout"]
    assert carried["range"][0] <= 1.5 <= carried["range"][1] and carried["width_verdict"] is not None
    kept = document["constants"][READOUT_MULT]
    assert not kept["applied"] and document["config"]["optimizer"]["multiplier"]["readout"] == 1.0
    checked = invoke(CliRunner(), "verify", "--width", "128", "--from", str(run), "--threads", "1")
    assert checked.exit_code == 0, checked.output
    report = json.loads((run / "verify.json").read_text())["targets"][0]["constants"]
    assert report["verdict"] == "tuning paid" and report["gain_ci"][0] > 0.1, report
    assert "tuned constants (optimizer.lr_mult.readout=" in " ".join(checked.output.split())
