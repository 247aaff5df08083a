"""``train.compile``: where ``auto`` compiles, a compiled run against an eager one, the one-warning fallback, the
per-trial record and a sweep's fingerprint that leaves it out."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
import torch

from conftest import invoke, write_edge_spec
from mutransfer.config import compose
from mutransfer.model_kinds import build_model
from mutransfer.schema import TrainConfig
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.plan.trial import setup_configs, sweep_record, trial_config
from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.train import compiled
from mutransfer.train.compiled import AUTO_MIN_STEPS, AUTO_WIDTHS, TrainingForward, compile_wanted
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


@pytest.mark.parametrize(("mode", "steps", "width", "device", "wanted"), [
    ("off", AUTO_MIN_STEPS, 64, CPU, False),
    ("on", 10, 64, CPU, True),
    ("auto", AUTO_MIN_STEPS, AUTO_WIDTHS[0], CPU, True),
    ("auto", AUTO_MIN_STEPS, AUTO_WIDTHS[1], CPU, True),
    ("auto", AUTO_MIN_STEPS - 1, 64, CPU, False),
    ("auto", AUTO_MIN_STEPS, AUTO_WIDTHS[1] * 2, CPU, False),
    ("auto", AUTO_MIN_STEPS, 64, CUDA, False)])
def test_auto_compiles_only_where_it_was_measured_to_pay(mode: str, steps: int, width: int, device: torch.device,
                                                         wanted: bool) -> None:
    assert compile_wanted(TrainConfig(compile=mode, steps=steps), width, device) is wanted


def test_the_smoke_and_default_sweeps_and_the_tests_train_eager() -> None:
    for name in ("smoke", "default"):
        spec = load_spec(name)
        for key in SweepPlan.of(spec).studies:
            cfg = trial_config(spec, key, key.search.min)
            assert not compile_wanted(cfg.train, cfg.model.width, CPU), (name, key)


@pytest.mark.slow
def test_a_compiled_run_records_it_and_matches_the_eager_run(tiny: list[str]) -> None:
    """The one real compile in the default suite (about 20 s on 2 cores): same data, same start, losses equal
    to float32 rounding (the compiler fuses and reorders sums)."""
    results = {}
    for mode in ("off", "on"):
        cfg = compose(["parametrization=mup", "optimizer=muon", *tiny, "train.threads=1", f"train.compile={mode}"])
        results[mode], _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    eager, fast = results["off"], results["on"]
    assert (eager.compiled, fast.compiled) == (False, True)
    assert eager.summary()["compiled"] is False and fast.summary()["compiled"] is True
    assert fast.initial_loss == pytest.approx(eager.initial_loss, rel=1e-5)
    assert fast.val_loss == pytest.approx(eager.val_loss, rel=1e-3)


def small_model(tiny: list[str]) -> torch.nn.Module:
    model, _ = build_model(compose(["parametrization=mup", *tiny]), 256, CPU)
    return model


def test_no_compiler_warns_once_and_trains_eager(monkeypatch: pytest.MonkeyPatch, tiny: list[str]) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler")
    model, x = small_model(tiny), torch.randint(0, 256, (2, 8))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        forwards = [TrainingForward(model, True, CPU) for _ in range(3)]
    assert [str(w.message) for w in caught] == [
        "train.compile: torch.compile is unavailable (no C++ compiler (no-such-compiler) on PATH); training eager. "
        "Set train.compile=off to silence this."]
    assert not any(f.compiled for f in forwards)
    assert torch.equal(forwards[0](x)[0], model(x)[0])


def test_a_compile_that_fails_falls_back_to_eager_with_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                                 tiny: list[str]) -> None:
    def broken(module: torch.nn.Module) -> object:
        def call(x: torch.Tensor) -> object:
            raise RuntimeError("backend exploded\nlong traceback")
        return call

    monkeypatch.setattr(compiled.torch, "compile", broken)
    model, x = small_model(tiny), torch.randint(0, 256, (2, 8))
    forward = TrainingForward(model, True, CPU)
    assert forward.compiled
    with pytest.warns(RuntimeWarning, match=r"unavailable \(RuntimeError: backend exploded\); training eager"):
        out = forward(x)
    assert not forward.compiled and torch.equal(out[0], model(x)[0])


def test_compile_is_left_out_of_a_sweeps_fingerprint_and_recorded_per_trial(runner, tmp_path: Path,  # noqa: ANN001
                                                                              text_file: Path) -> None:
    spec = write_edge_spec(tmp_path, text_file)
    specs = [load_spec(str(spec), words) for words in ([], ["train.compile=off"], ["train.steps=5"])]
    records = [sweep_record(s, setup_configs(s)) for s in specs]
    assert records[0] == records[1] and records[0]["fingerprint"] != records[2]["fingerprint"]
    run = tmp_path / "run"
    first = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert first.exit_code == 0, first.output
    again = invoke(runner, "sweep", str(spec), "train.compile=off", "--out", str(run), "--workers", "1")
    assert again.exit_code == 0, again.output
    trials = pd.read_csv(run / "trials.csv")
    assert len(trials) >= 5 and trials["compiled"].eq(False).all()
    assert "compile" not in (run / "config.yaml").read_text()
