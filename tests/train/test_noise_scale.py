"""The gradient noise scale (``train.noise_scale``): the estimator against a known answer, training unchanged
by measuring it, stacked trials equal to single runs, and where a run and a sweep record it."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import optuna
import pandas as pd
import pytest
import torch
import yaml
from hypothesis import given
from hypothesis import strategies as st
from torch import Tensor, nn
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.config import compose
from mutransfer.files import METRICS_COLUMNS
from mutransfer.sweep.store.storage import open_storage
from mutransfer.train.data import Corpus, load_corpus
from mutransfer.train.loop import TrainResult, train_model, train_trials
from mutransfer.train.noise import (NOISE_FIELDS, NOISE_MICRO_BATCHES, measure_noise, noise_estimates, noise_scale,
                                    run_noise_scale)


class Quadratic(nn.Module):
    """Per-example loss ½|θ − x_i|² (θ of shape (d,), or (K, d) for K stacked trials): the per-example gradient
    is θ − x_i, so with x_i ~ N(μ, Σ) the true gradient is θ − μ and its covariance Σ."""

    def __init__(self, theta: Tensor) -> None:
        super().__init__()
        self.theta = nn.Parameter(theta.clone())


def quadratic_loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Mean over the micro-batch x (b, d) of ½|θ − x_i|²: a scalar, or one per trial (K,) for stacked θ."""
    theta = model.theta
    diff = theta[..., None, :] - x  # (b, d) or (K, b, d)
    return 0.5 * diff.pow(2).sum(-1).mean(-1)


def draw(generator: torch.Generator, scale: Tensor, b: int) -> list[tuple[Tensor, Tensor]]:
    """``NOISE_MICRO_BATCHES`` micro-batches of b examples x ~ N(0, diag(scale²)) (y unused)."""
    return [((torch.randn(b, len(scale), generator=generator, dtype=torch.float64) * scale), torch.empty(0))
            for _ in range(NOISE_MICRO_BATCHES)]


@given(st.floats(0.01, 100.0), st.floats(0.0, 100.0), st.integers(1, 64), st.integers(2, 16))
def test_the_estimator_recovers_exact_expectations(g2: float, trace: float, b: int, k: int) -> None:
    """E|g_B|² = |G|² + tr(Σ)/B: fed its expectations at two batch sizes, the estimator returns |G|² and tr(Σ)."""
    est_g2, est_trace = noise_estimates(g2 + trace / b, g2 + trace / (k * b), b, k * b)
    assert est_g2 == pytest.approx(g2, rel=1e-9, abs=1e-9)
    assert est_trace == pytest.approx(trace, rel=1e-9, abs=1e-9)


def test_the_estimator_works_on_arrays_and_takes_a_ratio_of_averages() -> None:
    g2, trace = noise_estimates(np.array([5.0, 3.0]), np.array([3.125, 2.0]), 8, 32)
    assert g2 == pytest.approx([2.5, 5 / 3]) and trace == pytest.approx([20.0, 32 / 3])
    assert noise_scale([1.0, 3.0], [4.0, 4.0]) == pytest.approx(2.0)  # mean 4 / mean 2, not mean(4, 4/3)
    assert noise_scale([], []) is None and noise_scale([-1.0, 0.5], [1.0, 1.0]) is None
    with pytest.raises(ValueError):
        noise_estimates(1.0, 1.0, 8, 8)


def test_a_run_takes_its_noise_scale_from_the_second_half() -> None:
    evals = [{"step": 2, "noise_g2": 1.0, "noise_trace": 100.0}, {"step": 6, "noise_g2": 1.0, "noise_trace": 4.0},
             {"step": 8, "noise_g2": 3.0, "noise_trace": 4.0}, {"step": 9, "noise_g2": math.nan, "noise_trace": 1.0}]
    assert run_noise_scale(evals, 10) == pytest.approx(2.0)
    assert run_noise_scale(evals[:1], 10) == pytest.approx(100.0)  # no evaluation past half: all of them
    assert run_noise_scale([{"step": 2, "val_loss": 1.0}], 10) is None


def test_the_measurement_finds_the_noise_scale_of_a_quadratic() -> None:
    """x ~ N(0, diag(s²)), θ = t·1: B_simple = Σ s² / (d t²), per trial of a stacked θ; 4 000 measurements of
    k = 4 micro-batches of b = 8 give it within 3 %, and the model is left as it was."""
    d, b = 16, 8
    scale = torch.linspace(0.5, 1.5, d, dtype=torch.float64)
    theta = torch.stack([torch.full((d,), 0.4, dtype=torch.float64), torch.full((d,), 0.8, dtype=torch.float64)])
    model = Quadratic(theta)
    generator = torch.Generator().manual_seed(0)
    rng_before = torch.get_rng_state()
    measured = [measure_noise(model, draw(generator, scale, b), quadratic_loss, True, False) for _ in range(4000)]
    truth = scale.pow(2).sum().item() / theta.pow(2).sum(1)
    for trial in range(2):
        g2 = [m[trial][0] for m in measured]
        trace = [m[trial][1] for m in measured]
        assert np.mean(trace) == pytest.approx(scale.pow(2).sum().item(), rel=0.03)
        assert np.mean(g2) == pytest.approx(theta[trial].pow(2).sum().item(), rel=0.03)
        assert noise_scale(g2, trace) == pytest.approx(truth[trial].item(), rel=0.03)
    assert model.theta.grad is None and torch.equal(model.theta.detach(), theta)
    assert torch.equal(torch.get_rng_state(), rng_before)


def test_the_measurement_of_an_ordinary_model_is_one_trial() -> None:
    model = Quadratic(torch.full((4,), 1.0, dtype=torch.float64))
    batches = draw(torch.Generator().manual_seed(1), torch.ones(4, dtype=torch.float64), 2)
    (g2, trace), = measure_noise(model, batches, quadratic_loss, False, False)
    assert math.isfinite(g2) and trace > 0 and model.theta.grad is None


class Runs(NamedTuple):
    """The tiny run with the measurement off and on, and their corpus."""

    corpus: Corpus
    off: TrainResult
    on: TrainResult


@pytest.fixture(scope="module")
def noise_runs(tiny: list[str]) -> Runs:
    off_cfg = compose(tiny)
    corpus = load_corpus(off_cfg.data, off_cfg.train.seq_len)
    off, _ = train_model(off_cfg, corpus)
    on, _ = train_model(compose([*tiny, "train.noise_scale=true"]), corpus)
    return Runs(corpus, off, on)


def test_measuring_leaves_training_unchanged(noise_runs: Runs) -> None:
    off, on = noise_runs.off, noise_runs.on
    assert [r["train_loss"] for r in on.curve] == [r["train_loss"] for r in off.curve]
    assert on.val_loss == off.val_loss and on.status == off.status == "ok"
    assert [e["val_loss"] for e in on.evals] == [e["val_loss"] for e in off.evals]


def test_a_measured_run_records_its_noise(noise_runs: Runs) -> None:
    off, on = noise_runs.off, noise_runs.on
    assert on.noise_scale is not None and math.isfinite(on.noise_scale) and on.noise_scale > 0
    assert on.summary()["noise_scale"] == on.noise_scale
    for e in on.evals:
        assert set(NOISE_FIELDS) <= set(e) and e["noise_trace"] > 0
        row = next(r for r in on.curve if r["step"] == e["step"])
        assert all(row[name] == e[name] for name in NOISE_FIELDS)
    last = on.evals[-1]
    assert on.noise_scale == pytest.approx(last["noise_trace"] / last["noise_g2"])
    assert off.noise_scale is None and "noise_scale" not in off.summary()
    assert all(set(e) == {"step", "val_loss"} for e in off.evals)
    assert all(set(r) == set(METRICS_COLUMNS) for r in off.curve)


def test_stacked_trials_measure_what_single_runs_do(tiny: list[str], noise_runs: Runs) -> None:
    """Trial 0 at the default η is the measured single run; trial 1 at 2η is trained alone to compare."""
    cfg = compose([*tiny, "train.noise_scale=true"])
    lrs = [cfg.optimizer.lr, cfg.optimizer.lr * 2.0]
    stacked, _ = train_trials(cfg, noise_runs.corpus, lrs)
    other, _ = train_model(compose([*tiny, "train.noise_scale=true", f"optimizer.lr={lrs[1]!r}"]), noise_runs.corpus)
    assert len(stacked) == 2
    for result, alone in zip(stacked, [noise_runs.on, other], strict=True):
        assert result.noise_scale is not None and alone.noise_scale is not None
        assert result.noise_scale == pytest.approx(alone.noise_scale, rel=1e-3)
        for a, b in zip(result.evals, alone.evals, strict=True):
            assert a["noise_g2"] == pytest.approx(b["noise_g2"], rel=1e-3)
            assert a["noise_trace"] == pytest.approx(b["noise_trace"], rel=1e-3)
    assert stacked[0].noise_scale != stacked[1].noise_scale


def test_train_cli_writes_the_noise(runner: CliRunner, tiny: list[str], tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(runner, "train", *tiny, "train.noise_scale=true", "--out", str(out))
    assert result.exit_code == 0, result.output
    res = json.loads((out / "result.json").read_text())
    assert res["noise_scale"] > 0 and [e["step"] for e in res["evals"]] == [3, 6]
    assert all(e["noise_g2"] is not None and e["noise_trace"] > 0 for e in res["evals"])
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert list(rows[0]) == [*METRICS_COLUMNS, "noise_g2", "noise_trace", "noise_scale"] and len(rows) == 6
    assert [r["step"] for r in rows if r["noise_scale"]] == ["3", "6"]
    assert yaml.safe_load((out / "config.yaml").read_text())["train"]["noise_scale"] is True


def test_a_sweep_records_the_noise_of_each_trial(runner: CliRunner, tmp_path: Path, text_file: Path) -> None:
    spec = {"name": "noise", "widths": [32], "seeds": [0],
            "setups": {"mup_adamw": {"overrides": ["parametrization=mup", "optimizer=adamw"]}},
            "search": {"key": "optimizer.lr", "log2_min": -9, "log2_max": -5, "step": 2, "sampler": "grid",
                       "extend": False, "noise_seeds": 0},
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=4",
                          "train.seq_len=32", "train.eval_every=2", "train.eval_batches=2", "data=text",
                          f"data.path={text_file}", "train.noise_scale=true"]}
    path = tmp_path / "noise.yaml"
    path.write_text(yaml.safe_dump(spec))
    run = tmp_path / "sweep"
    result = invoke(runner, "sweep", str(path), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(run / "trials.csv")
    assert len(trials) == 3 and (trials["noise_scale"] > 0).all()
    assert "noise_scale" not in pd.read_csv(run / "curves.csv").columns
    storage = open_storage(None, run)
    stored = [t for name in optuna.get_all_study_names(storage)
              for t in optuna.load_study(study_name=name, storage=storage).get_trials() if "noise" in t.user_attrs]
    assert len(stored) == 3
    for t in stored:
        assert [step for step, _, _ in t.user_attrs["noise"]] == [step for step, _ in t.user_attrs["evals"]] == [2, 4]
        assert all(trace > 0 for _, _, trace in t.user_attrs["noise"]) and t.user_attrs["noise_scale"] > 0
