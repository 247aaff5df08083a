"""The first answer early: the sweep's order (cheap widths' brackets first), the provisional answer it writes as
it goes, and stopping a setup once its verdict is decided (a group-sequential rule), with the rule's error rates
checked by simulation against the fixed design."""

from __future__ import annotations

import json
import math
import re
import os
import signal
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import mutransfer.sweep.run.worker as worker_module
from conftest import invoke
from mutransfer.analysis.result import AxisFit, Summary
from mutransfer.analysis.sequential import boundaries, decided_at, looks, spent
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.sequential import simulate_sequential
from mutransfer.simulation.simulate import Design
from mutransfer.sweep.run.runner import Snapshot, run_sweep
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.plan.sweep_plan import FINE, SweepPlan, Tier
from mutransfer.sweep.run.trainer import InProcessTrainer, OnEval, OnStep, TrialRun
from mutransfer.sweep.run.worker import SweepOptions
from mutransfer.train.result import TrainResult

WIDTHS = [32, 64, 96, 128]


def write_spec(folder: Path, text_file: Path, **extra: object) -> Path:
    """2 setups × 4 widths of a tiny model, a 3-point grid two octaves apart that extends, one noise seed."""
    spec = {"name": "early", "widths": WIDTHS, "seeds": [0],
            "setups": {"sp_adamw": {"overrides": ["parametrization=sp", "optimizer=adamw"],
                                    "search": {"log2_min": -9, "log2_max": -5}},
                       "mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                    "search": {"log2_min": -6, "log2_max": -2}}},
            "search": {"key": "optimizer.lr", "step": 2, "sampler": "grid", "extend": True, "extend_max": 4,
                       "noise_seeds": 1},
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=6", "train.batch_size=4",
                          "train.seq_len=32", "train.eval_every=3", "train.eval_batches=2", "data=text",
                          f"data.path={text_file}"], **extra}
    path = folder / "early.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


class BowlTrainer:
    """Losses off a known bowl instead of training: SP + AdamW's optimum falls by ``drift`` octaves per doubling of
    the width, μP + Muon's stays at -4; each (seed, width) shifts its optimum a little, deterministically."""

    def __init__(self, drift: float = -1.5) -> None:
        self.drift = drift
        self.calls: list[tuple[str, int, int, float]] = []

    def fit(self, runs: list[TrialRun], on_eval: OnEval, on_step: Optional[OnStep] = None) -> list[TrainResult]:
        out = []
        for run in runs:
            key, cfg = run.key, run.cfg
            x = math.log2(cfg.optimizer.lr)
            doublings = math.log2(key.width / 32)
            best = -5.0 + self.drift * doublings if key.setup == "sp_adamw" else -4.0
            jitter = zlib.crc32(f"{cfg.train.seed}/{key.width}/{key.setup}".encode()) / 2**32 - 0.5
            loss = 2.0 + 0.3 * (x - best - 0.1 * jitter) ** 2
            self.calls.append((key.setup, key.width, cfg.train.seed, x))
            out.append(TrainResult(status="ok", val_loss=loss, train_loss=loss, initial_loss=10.0, steps=1,
                                   seconds=0.0, tokens_per_s=0.0, optimizer_fraction=0.0, peak_memory_mb=0.0))
        return out


@pytest.fixture()
def bowl(monkeypatch: pytest.MonkeyPatch) -> BowlTrainer:
    trainer = BowlTrainer()
    monkeypatch.setattr(worker_module, "_trainer_for", lambda spec, opts: trainer)
    return trainer


def old_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk before the tiers: every study in the plan's order, each trained to the end at once."""
    import mutransfer.sweep.plan.sweep_plan as plan_module

    monkeypatch.setattr(plan_module, "_tiers", lambda spec, studies: [Tier(tuple(studies), tuple(spec.points()))])
    monkeypatch.setattr(worker_module, "PHASES", (FINE,))


def test_the_default_sweep_trains_its_three_cheap_widths_first_and_the_setups_take_turns() -> None:
    spec = load_spec("default")
    order = SweepPlan.of(spec).tiers
    assert [t.widths() for t in order] == [(32, 64, 128), (256,)]
    assert [(k.setup, k.width) for k in order[0].keys][:4] == [("sp_adamw", 32), ("mup_muon", 32),
                                                               ("sp_adamw", 64), ("mup_muon", 64)]
    assert SweepPlan.of(spec).information == pytest.approx([0.4, 1.0])
    assert len(SweepPlan.of(load_spec("depth")).tiers) == 1  # another axis: one tier, no interim look


def test_the_spending_boundaries_are_the_published_obrien_fleming_ones() -> None:
    """Lan–DeMets O'Brien–Fleming-type spending, one-sided 0.025, five equal looks: 4.877, 3.357, 2.680, 2.290,
    2.031 (Jennison & Turnbull, "Group Sequential Methods", table 7.6)."""
    assert boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025) == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031],
                                                                         abs=2e-3)
    assert spent(1.0) == pytest.approx(0.05) and spent(0.4) < 0.003
    planned = looks([0.4, 1.0])
    assert planned[-1].final and planned[-1].level == 0.05 and planned[0].level == pytest.approx(spent(0.4))


def test_a_setup_is_decided_early_only_when_the_widened_interval_still_decides() -> None:
    look = looks([0.4, 1.0])[0]
    fit = AxisFit(axis="width", verdict="drifts", ci_kind="confidence", slope=-1.2, se_slope=0.1, dof=12)
    assert decided_at(fit, look) == "drifts"
    assert decided_at(AxisFit(axis="width", verdict="drifts", ci_kind="confidence", slope=-0.6, se_slope=0.12,
                              dof=12), look) is None
    assert decided_at(AxisFit(axis="width", verdict="inconclusive", ci_kind="confidence", slope=-3.0,
                              se_slope=0.01, dof=12), look) is None
    assert decided_at(AxisFit(axis="width", verdict="transfers", ci_kind="confidence", slope=0.0, se_slope=0.05,
                              dof=30), look) == "transfers"


def _values(run: Path) -> pd.DataFrame:
    trials = pd.read_csv(run / "trials.csv")
    trials = trials[trials["status"] != "interrupted"]  # the old walk's trial that Ctrl-C stopped, trained again
    return trials.sort_values(["setup", "width", "seed", "log2_lr"])[["setup", "width", "seed", "log2_lr",
                                                                        "val_loss"]].reset_index(drop=True)


@pytest.mark.long
def test_the_order_changes_when_trials_train_not_what_they_are(runner: CliRunner, tmp_path: Path, text_file: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Trained in the new order, or begun in the old order and resumed in the new, a sweep holds the same trials
    with the same losses and gives the same summary to the digit.

    Covered in CI by `tests/sweep/test_early_answer.py::test_the_default_sweep_trains_its_three_cheap_widths_first_and_the_setups_take_turns`
    (the order) and `tests/project/test_runs_from_before.py::test_an_interrupted_sweep_from_before_resumes_to_the_finished_design_and_keeps_what_it_trained`
    (a resume that keeps what was trained)."""
    spec_path = write_spec(tmp_path, text_file)
    new, resumed = tmp_path / "new", tmp_path / "resumed"
    assert invoke(runner, "sweep", str(spec_path), "--out", str(new), "--threads", "1").exit_code == 0
    with monkeypatch.context() as patch:
        old_order(patch)
        fit = InProcessTrainer.fit
        calls: list[int] = []

        def interrupted_after_nine(self: InProcessTrainer, runs: list[TrialRun], on_eval: OnEval) -> list[TrainResult]:
            calls.append(len(runs))
            if len(calls) == 10:
                raise KeyboardInterrupt
            return fit(self, runs, on_eval)

        patch.setattr(InProcessTrainer, "fit", interrupted_after_nine)
        assert invoke(runner, "sweep", str(spec_path), "--out", str(resumed), "--threads", "1").exit_code == 130
    begun = pd.read_csv(resumed / "trials.csv")
    assert begun[begun["status"] == "ok"]["setup"].nunique() == 1  # the old walk: one setup's widths in turn
    assert invoke(runner, "sweep", str(spec_path), "--out", str(resumed), "--threads", "1").exit_code == 0
    pd.testing.assert_frame_equal(_values(new), _values(resumed))
    a, b = (json.loads((run / "summary.json").read_text()) for run in (new, resumed))
    assert a["keys"] == b["keys"] and a["status"]["complete"] and b["status"]["complete"]


def test_a_running_sweep_writes_its_provisional_answer_and_transfer_marks_it(runner: CliRunner, tmp_path: Path,
                                                                             text_file: Path) -> None:
    """The log's provisional line (every setup with a slope) comes before the last width trains; summary.json is
    marked provisional with what it rests on; transfer answers from it with a warning and marks its output."""
    spec_path = write_spec(tmp_path, text_file)
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "mutransfer", "sweep", str(spec_path), "--out", str(run),
                             "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("provisional (") and line.count("slope") == 2:
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert lines and lines[-1].startswith("provisional ("), lines[-5:]
    assert all(not line.rstrip().endswith(":") for line in lines if line.startswith("provisional (")), lines
    assert not any("width 128" in line for line in lines)  # the answer came before the costliest width
    data = json.loads((run / "summary.json").read_text())
    summary = Summary.from_json(data)
    assert data["provisional"] is True and summary.provisional is not None
    assert summary.provisional.widths == (32, 64) and summary.provisional.trials == len(pd.read_csv(run / "trials.csv"))
    assert f"{summary.provisional.trials}/{summary.provisional.planned} trials" in lines[-1]
    answered = invoke(runner, "transfer", "--width", "1024", "--from", str(run))
    assert answered.exit_code == 0, answered.output
    assert "PROVISIONAL" in answered.output and "still training" in answered.stderr
    assert f"{summary.provisional.trials}/{summary.provisional.planned} trials" in answered.stderr
    written = run / "transfer_w1024.partial.yaml"
    assert "provisional" in written.read_text()


@pytest.mark.slow
def test_stop_skips_a_decided_setups_last_width_and_stop_false_trains_it(runner: CliRunner, tmp_path: Path,
                                                                        text_file: Path, bowl: BowlTrainer) -> None:
    spec_path = write_spec(tmp_path, text_file)
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(spec_path), "stop=true", "--out", str(run), "--threads", "1")
    assert result.exit_code == 0, result.output
    assert "sp_adamw: stopped when decided at look 1 of 2 (drifts on widths 32, 64, 96)" in result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"]["complete"] and set(summary["stopped"]) == {"sp_adamw"}
    assert summary["stopped"]["sp_adamw"]["level"] < 0.05 and "provisional" not in summary
    assert ("sp_adamw", 128) not in {(s, w) for s, w, _, _ in bowl.calls}
    assert ("mup_muon", 128) in {(s, w) for s, w, _, _ in bowl.calls}
    rest = invoke(runner, "sweep", str(spec_path), "stop=false", "--out", str(run), "--threads", "1")
    assert rest.exit_code == 0, rest.output
    assert ("sp_adamw", 128) in {(s, w) for s, w, _, _ in bowl.calls}
    full = json.loads((run / "summary.json").read_text())
    assert "stopped" not in full and full["keys"]["optimizer.lr"]["setups"]["sp_adamw"]["verdict"] == "drifts"


def test_a_snapshot_carries_each_changed_answer_and_the_stops(tmp_path: Path, text_file: Path,
                                                              bowl: BowlTrainer) -> None:
    spec = load_spec(str(write_spec(tmp_path, text_file)), ["stop=true"])
    snaps: list[Snapshot] = []
    run_sweep(SweepPlan.of(spec), SweepOptions(run_dir=tmp_path, prefix="p", threads=1), on_progress=snaps.append)
    answers = [s.provisional for s in snaps if s.provisional is not None]
    assert len(answers) >= 4 and all(a.summary.provisional is not None for a in answers)
    widths = [a.summary.provisional.widths for a in answers if a.summary.provisional is not None]
    assert widths == sorted(widths, key=len) and widths[-1] == tuple(WIDTHS)
    assert "sp_adamw" in snaps[-1].stops and snaps[-1].done == snaps[-1].total


def test_stopping_keeps_the_fixed_designs_error_rates_on_real_curves() -> None:
    """On the real-curve simulator (AdamW's flat bowl, optima off the line, seeds shared across widths) a sweep
    that stops when decided calls a slope of 0.35 `transfers`, or a slope of 0.1 `drifts`, no more often than the
    fixed design does on the same trials beyond Monte-Carlo error, and stops early at a slope of -1."""
    design = Design(low=-11.0, high=-7.0, noise_seeds=1)
    for slope, wrong in ((0.35, "transfers"), (0.1, "drifts"), (-1.0, "transfers")):
        truth = real_truth("adamw", slope=slope, x0=-9.0, seed_correlation=0.5)
        rng = np.random.default_rng(11)
        outs = [simulate_sequential(truth, design, rng) for _ in range(150)]
        fixed = sum(o.fixed == wrong for o in outs)
        sequential = sum(o.sequential == wrong for o in outs)
        assert sequential <= fixed + 2 * math.sqrt(max(fixed, 1)) + 1
        assert all(o.sequential == o.fixed for o in outs if o.stopped_at is None)
        if slope == -1.0:
            assert sum(o.stopped_at is not None for o in outs) > 15
            assert all(o.sequential_trials < o.fixed_trials for o in outs if o.stopped_at is not None)


@pytest.mark.slow
def test_the_dry_run_bounds_a_stopping_sweep_by_the_full_design(runner: CliRunner, tmp_path: Path,
                                                                text_file: Path) -> None:
    result = invoke(runner, "sweep", str(write_spec(tmp_path, text_file)), "stop=true", "--dry-run", "--threads", "1",
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    found = re.search(r"stop=true: at most ([\d.]+) min \(the full design\); expected ([\d.]+) min when every optimum "
                      r"stays put, ([\d.]+) min when every one drifts", text)
    assert found is not None, text[-400:]
    full, put, drifts = (float(v) for v in found.groups())
    assert drifts <= put <= full and not (tmp_path / "run").exists()
