"""Sweeps through the real CLI and a real Optuna journal: tables, resume, divergence, workers, dedup."""

from __future__ import annotations

import functools
import json
from dataclasses import replace
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml
from optuna.trial import TrialState
from typer.testing import CliRunner

import mutransfer
import mutransfer.sweep.run.trainer as sweep_module
import mutransfer.sweep.run.worker as worker_module
from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.cli import app
from conftest import invoke
from mutransfer.analysis.optimum import local_optimum
from mutransfer.analysis.result import SUMMARY_VERSION, Summary
from mutransfer.files import VERSION_KEY
from mutransfer.sweep.run.claims import Claimer
from mutransfer.sweep.interrupts import Interrupts, Terminated
from mutransfer.sweep.store.reaper import Reaper
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.storage import JOURNAL_FILE, open_storage
from mutransfer.sweep.store.studies import is_bookkeeping, load_study
from mutransfer.sweep.run.runner import run_sweep, snapshot
from mutransfer.sweep.run.worker import SweepOptions, run_worker


class Counter:
    """Counts trainings by wrapping the sweep's train_model (in-process workers only)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, interrupt_at: int | None = None) -> None:
        self.calls: list[float] = []
        original = sweep_module.train_model

        def counted(cfg, corpus, **kwargs):  # noqa: ANN001, ANN202
            self.calls.append(cfg.optimizer.lr)
            if interrupt_at is not None and len(self.calls) == interrupt_at:
                raise KeyboardInterrupt
            return original(cfg, corpus, **kwargs)

        monkeypatch.setattr(sweep_module, "train_model", counted)


def storage_trials(run_dir: Path) -> list[optuna.trial.FrozenTrial]:
    storage = open_storage(None, run_dir)
    return [t for name in optuna.get_all_study_names(storage)
            for t in optuna.load_study(study_name=name, storage=storage).get_trials()]


def test_sweep_writes_tables_matching_the_storage(runner: CliRunner, spec_file: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    counter = Counter(monkeypatch)
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert len(counter.calls) == 12
    trials = pd.read_csv(out / "trials.csv")
    for column in ("setup", "parametrization", "optimizer", "width", "seed", "log2_lr", "lr", "val_loss", "train_loss",
                   "status", "steps", "seconds", "tokens_per_s", "optimizer_fraction", "peak_memory_mb"):
        assert column in trials.columns
    assert len(trials) == 12 and set(trials["status"]) == {"ok"}
    assert sorted(trials[trials["setup"] == "mup_muon"]["log2_lr"].unique()) == [-6.0, -4.0, -2.0]
    stored = [t for t in storage_trials(out) if not is_bookkeeping(t)]
    assert sorted((t.params["log2_lr"], t.user_attrs["width"], t.value) for t in stored) == \
        sorted(zip(trials["log2_lr"], trials["width"], trials["val_loss"]))
    curves = pd.read_csv(out / "curves.csv")
    assert set(curves["trial"]) == set(trials["trial"]) and curves["step"].max() == 8
    summary = Summary.from_json(json.loads((out / "summary.json").read_text()))
    assert set(summary.setups()) == {"sp_adamw", "mup_muon"}
    assert set(summary.setups()["mup_muon"].line.points) == {32, 64}
    for name in ("transfer.png", "lr_drift.png", "curves.png", "config.yaml", JOURNAL_FILE):
        assert (out / name).is_file()
    spec = load_spec(str(spec_file))
    live = snapshot(SweepPlan.of(spec), SweepOptions(run_dir=out, prefix=spec.name), open_storage(None, out), complete=True).best
    fitted = {(setup, f"w{width}"): opt.best_loss for setup, entry in summary.setups().items()
              for width, opt in entry.line.points.items()}
    assert live == pytest.approx(fitted), "the live table's best loss is summary.json's"

    again = Counter(monkeypatch)
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out))
    assert result.exit_code == 0 and again.calls == []
    assert len(pd.read_csv(out / "trials.csv")) == 12


def test_interrupted_sweep_resumes_without_retraining(runner: CliRunner, spec_file: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    first = Counter(monkeypatch, interrupt_at=5)
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out))
    assert result.exit_code == 130 and len(first.calls) == 5
    done = pd.read_csv(out / "trials.csv")
    finished = done[done["status"] == "ok"]
    assert len(finished) == 4 and (done["status"] == "interrupted").sum() == 1
    second = Counter(monkeypatch)
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert len(second.calls) == 12 - 4
    trials = pd.read_csv(out / "trials.csv")
    ok = trials[trials["status"] == "ok"]
    assert len(ok) == 12 and not ok.duplicated(["setup", "width", "log2_lr"]).any()
    kept = ok.merge(finished, on=["setup", "width", "log2_lr"], suffixes=("", "_before"))
    assert len(kept) == 4 and (kept["val_loss"] == kept["val_loss_before"]).all()


def test_a_run_an_older_version_started_resumes_and_keeps_its_record(runner: CliRunner, spec_file: Path,
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """config.yaml names the version that started the run (``mutransfer_version``), outside the fingerprint: this
    version resumes a run an older one started, training only what is missing, and keeps its record as written."""
    out = tmp_path / "run"
    Counter(monkeypatch, interrupt_at=5)
    assert invoke(runner, "sweep", str(spec_file), "--out", str(out)).exit_code == 130
    record = yaml.safe_load((out / "config.yaml").read_text())
    assert next(iter(record)) == VERSION_KEY and record[VERSION_KEY] == mutransfer.__version__
    older = yaml.safe_dump({**record, VERSION_KEY: "0.7.0"}, sort_keys=False)
    (out / "config.yaml").write_text(older)
    resumed = Counter(monkeypatch)
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert len(resumed.calls) == 12 - 4 and "holds a different sweep" not in result.output
    assert (out / "config.yaml").read_text() == older


def test_huge_lr_is_recorded_as_diverged(runner: CliRunner, spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out), "setups.mup_muon.search.log2_max=12",
                    "setups.mup_muon.search.log2_min=-2", "widths=[32]", "train.warmup_frac=0")
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(out / "trials.csv")
    mup = trials[trials["setup"] == "mup_muon"]
    assert "diverged" in set(mup["status"]), mup[["log2_lr", "status", "train_loss"]]
    diverged = mup[mup["status"] == "diverged"]
    assert diverged["val_loss"].isna().all() and diverged["train_loss"].notna().all()
    stored = [t for t in storage_trials(out) if t.user_attrs.get("status") == "diverged"]
    assert stored and all(t.state == TrialState.COMPLETE and t.value >= 1.5 * t.user_attrs["initial_loss"] - 1e-6
                          for t in stored)
    assert (trials[trials["setup"] == "sp_adamw"]["status"] == "ok").all()


def test_duplicate_grid_points_from_two_machines_train_once(spec_file: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(str(spec_file), ["widths=[32]"])
    opts = SweepOptions(run_dir=tmp_path, prefix="p")
    storage = open_storage(None, tmp_path)
    for key in SweepPlan.of(spec).studies:
        study = load_study(storage, key, "p")
        for x in key.search.grid() * 2:  # a second machine enqueued the same grid
            study.enqueue_trial({key.search.column: x}, user_attrs={"grid": True})
    counter = Counter(monkeypatch)
    run_sweep(SweepPlan.of(spec), opts)
    assert len(counter.calls) == 6
    trials = storage_trials(tmp_path)
    assert sum(1 for t in trials if t.user_attrs.get("duplicate")) == 6
    assert sum(1 for t in trials if t.state == TrialState.COMPLETE) == 6


def test_abandoned_trials_rerun_and_live_ones_are_left_alone(spec_file: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(str(spec_file), ["widths=[32]"])
    storage = open_storage(None, tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    keys = SweepPlan.of(spec).studies
    for key, pid in ((keys[0], dead.pid), (keys[1], os.getppid())):
        study = load_study(storage, key, "p")
        study.enqueue_trial({key.search.column: key.search.grid()[0]}, user_attrs={"grid": True})
        trial = study.ask()
        trial.suggest_float(key.search.column, key.search.min, key.search.max)
        trial.set_user_attr("host", socket.gethostname())
        trial.set_user_attr("pid", pid)
    counter = Counter(monkeypatch)
    run_sweep(SweepPlan.of(spec), SweepOptions(run_dir=tmp_path, prefix="p"))
    assert len(counter.calls) == 3 + 2
    first = load_study(storage, keys[0], "p").get_trials()
    assert first[0].state == TrialState.FAIL and first[0].user_attrs["status"] == "abandoned"
    second = load_study(storage, keys[1], "p").get_trials()
    assert second[0].state == TrialState.RUNNING



def test_a_trial_asked_but_never_claimed_is_failed_as_an_orphan_and_its_point_trained(
        spec_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed (SIGKILL, which nothing holds off) between its ask and its claim leaves a running trial with
    no worker's identity, which on a journal file no heartbeat reveals: the resume waits until the trial is an orphan,
    fails it and trains its point."""
    spec = load_spec(str(spec_file), ["widths=[32]"])
    storage = open_storage(None, tmp_path)
    key = SweepPlan.of(spec).studies[0]
    study = load_study(storage, key, "p")
    study.enqueue_trial({key.search.column: key.search.grid()[0]}, user_attrs={"grid": True, "seed": key.seed})
    orphan = study.ask()
    monkeypatch.setattr(worker_module, "Reaper", functools.partial(Reaper, orphan_after=1.0))
    counter = Counter(monkeypatch)
    run_sweep(SweepPlan.of(spec), SweepOptions(run_dir=tmp_path, prefix="p", heartbeat=1))
    assert len(counter.calls) == 6
    trials = storage_trials(tmp_path)
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    assert is_bookkeeping(load_study(storage, key, "p").get_trials()[orphan.number])


def test_a_signal_during_a_claim_leaves_the_trial_marked_for_a_rerun(spec_file: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM arriving between a worker's ask and its claim: the claim completes (the two are one held section),
    then the trial is failed as ``interrupted``, never left running without the worker's identity."""
    spec = load_spec(str(spec_file), ["widths=[32]"])
    claim = Claimer.claim

    def signalled_claim(self: Claimer, *args: object) -> float | None:
        os.kill(os.getpid(), signal.SIGTERM)
        return claim(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Claimer, "claim", signalled_claim)
    counter = Counter(monkeypatch)
    with pytest.raises(Terminated), Interrupts().catching():
        run_worker(SweepPlan.of(spec), SweepOptions(run_dir=tmp_path, prefix="p"))
    asked = [t for t in storage_trials(tmp_path) if t.state != TrialState.WAITING]
    assert counter.calls == []
    assert [(t.state, t.user_attrs.get("status")) for t in asked] == [(TrialState.FAIL, "interrupted")]
    assert "pid" in asked[0].user_attrs

def test_two_worker_processes_train_each_point_once(spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "mutransfer", "sweep", str(spec_file), "--out", str(out),
                           "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    trials = pd.read_csv(out / "trials.csv")
    assert len(trials) == 12 and (trials["status"] == "ok").all()
    assert not trials.duplicated(["setup", "width", "log2_lr"]).any()
    completed = [t for t in storage_trials(out) if t.state == TrialState.COMPLETE]
    assert len(completed) == 12


def test_dry_run_trains_nothing_and_writes_nothing(runner: CliRunner, spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "12 trials" in result.output and "estimated wall time" in result.output
    assert not out.exists()


def test_an_unreaped_killed_worker_counts_as_dead() -> None:
    from mutransfer.sweep.store.liveness import is_alive as _alive

    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not _alive({"host": socket.gethostname(), "pid": zombie.pid})
    assert _alive({"host": socket.gethostname(), "pid": os.getpid()})
    assert _alive({"host": "another-machine", "pid": zombie.pid})
    zombie.wait()


@pytest.mark.parametrize("search", [
    {"sampler": "tpe", "n_trials": 4},
    {"sampler": "gp", "n_trials": 4},
    {"sampler": "refine"},
])
def test_samplers(runner: CliRunner, spec_file: Path, tmp_path: Path, search: dict) -> None:
    out = tmp_path / "run"
    words = [f"search.{k}={v}" for k, v in search.items()]
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out), "widths=[32]", *words)
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(out / "trials.csv")
    for setup, rows in trials.groupby("setup"):
        if search["sampler"] in ("tpe", "gp"):
            assert len(rows) == 4
        elif search["sampler"] == "refine":
            coarse = {-9.0, -7.0, -5.0} if setup == "sp_adamw" else {-6.0, -4.0, -2.0}
            low, high = min(coarse), max(coarse)
            tried = set(rows["log2_lr"])
            assert coarse <= tried and tried - coarse and all(x * 2 == int(x * 2) for x in tried)
            ok = rows[rows["status"] == "ok"]
            _, centre = local_optimum(dict(zip(ok["log2_lr"], ok["val_loss"])), 2.0)
            window = {centre + 0.5 * k for k in range(-3, 4) if low <= centre + 0.5 * k <= high}
            assert window <= tried  # the fit window around the final optimum is filled at quarter steps
    assert json_summary_has_widths(out)


PRUNE_GRID = [-6.0, -5.0, -4.0, -3.0, -2.0]
"""SP AdamW's grid for the pruner test, queued in this order: at the tiny spec's evaluation at step 4 the first
three lie near the optimum (4.0, 3.3, 3.3) and the last two past it (3.7, 4.8, both finite), each above the
first three's median (3.33) by 0.37 or more, so above their best too."""


@pytest.mark.parametrize("pruner", ["median", "halving"])
def test_pruner_stops_late_trials_worse_than_the_earlier_ones(spec_file: Path, tmp_path: Path,
                                                             pruner: str) -> None:
    """A real pruning decision through the real sweep and journal: one trial at a time (``batch_trials: 1``, so
    every earlier trial has finished when a later one reports), an evaluation at step 4 of 8. The first three
    points are never pruned (the median pruner's 3 startup trials; halving promotes each new best), and the last
    two, worse at step 4 than the earlier points' median and best, stop there as PRUNED."""
    spec = yaml.safe_load(spec_file.read_text())
    spec["setups"] = {"sp_adamw": {"overrides": ["parametrization=sp", "optimizer=adamw"]}}
    spec["widths"], spec["batch_trials"] = [32], 1
    spec["search"].update({"log2_min": PRUNE_GRID[0], "log2_max": PRUNE_GRID[-1], "step": 1, "pruner": pruner})
    assert "train.steps=8" in spec["overrides"] and "train.eval_every=4" in spec["overrides"]
    path, out = tmp_path / "prune.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(spec))
    result = invoke(CliRunner(), "sweep", str(path), "--out", str(out), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(out / "trials.csv").sort_values("trial")
    assert list(rows["log2_lr"]) == PRUNE_GRID  # trained in the grid's order
    assert list(rows["status"]) == ["ok", "ok", "ok", "pruned", "pruned"], rows[["log2_lr", "status", "steps"]]
    assert list(rows["steps"]) == [8, 8, 8, 4, 4]  # the pruned ones stopped at their first evaluation
    trials = sorted(storage_trials(out), key=lambda t: t.number)
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3 + [TrialState.PRUNED] * 2
    assert [sorted(t.intermediate_values) for t in trials] == [[4, 8]] * 3 + [[4]] * 2
    median = sorted(t.intermediate_values[4] for t in trials[:3])[1]
    assert all(t.intermediate_values[4] > median for t in trials[3:])  # what the pruners stopped them for


def json_summary_has_widths(out: Path) -> bool:
    summary = Summary.from_json(json.loads((out / "summary.json").read_text()))
    return all(info.line.points for info in summary.setups().values())


def test_other_keys_are_searched_one_at_a_time(runner: CliRunner, spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    spec = yaml.safe_load(spec_file.read_text())
    spec["search"] = [spec["search"], {"key": "optimizer.weight_decay", "scale": "linear", "min": 0.0, "max": 0.2,
                                       "step": 0.1, "noise_seeds": 0}]
    spec["setups"] = {"mup_muon": spec["setups"]["mup_muon"]}
    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = invoke(runner, "sweep", str(path), "--out", str(out), "widths=[32,64]")
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(out / "trials.csv")
    wd = trials[trials["search_key"] == "optimizer.weight_decay"]
    assert sorted(wd["optimizer.weight_decay"].unique()) == [0.0, 0.1, 0.2]
    assert wd["lr"].nunique() == 1 and len(wd) == 6
    assert trials[trials["search_key"] == "optimizer.lr"]["optimizer.weight_decay"].isna().all()
    summary = Summary.from_json(json.loads((out / "summary.json").read_text()))
    assert set(summary.setups("optimizer.weight_decay")["mup_muon"].line.points) == {32, 64}


def test_spec_can_ask_for_a_coord_check_first(runner: CliRunner, spec_file: Path, tmp_path: Path) -> None:
    result = invoke(runner, "sweep", str(spec_file), "--out", str(tmp_path / "run"), "widths=[32,64]",
                    "coord_check=true")
    assert result.exit_code == 0, result.output
    assert "coord check of setup 'mup_muon'" in result.output
    assert "coord check of setup 'sp_adamw': not stable" in result.output


@pytest.mark.slow
def test_workers_auto_measures_the_layouts(runner: CliRunner, spec_file: Path, tmp_path: Path) -> None:
    from mutransfer.sweep.run.layout import layouts

    assert layouts(2) == [(1, 2), (2, 1)] and layouts(4) == [(1, 4), (2, 2), (4, 1)]
    result = invoke(runner, "sweep", str(spec_file), "--out", str(tmp_path / "run"), "--workers", "auto",
                    "widths=[32]")
    assert result.exit_code == 0, result.output
    assert "--workers auto: measured at width 32" in result.output and "steps/s" in result.output
    assert len(pd.read_csv(tmp_path / "run" / "trials.csv")) == 6


def test_the_grid_extends_past_an_edge_and_noise_probes_fill_the_window(runner: CliRunner, spec_file: Path,
                                                                       tmp_path: Path) -> None:
    """A grid that ends below the optimum grows until the optimum is bracketed (or diverges, or the limit),
    the fit window is re-trained with two more seeds, and the summary says what was added and what kind of
    interval it holds; a rerun trains nothing more."""
    out = tmp_path / "run"
    words = ["sweep", str(spec_file), "--out", str(out), "search.extend=true", "search.extend_max=4",
             "search.noise_seeds=2", "setups.mup_muon.search.log2_min=-8", "setups.mup_muon.search.log2_max=-4"]
    result = runner.invoke(app, words)
    assert result.exit_code == 0, result.output
    trials = pd.read_csv(out / "trials.csv")
    summary = Summary.from_json(json.loads((out / "summary.json").read_text()))
    mup = trials[trials["setup"] == "mup_muon"]
    for width, part in mup.groupby("width"):
        grid = part[part["seed"] == 0].sort_values("log2_lr")
        entry = summary.setups()["mup_muon"].line.points[int(width)]
        assert entry.added == sorted(x for x in grid["log2_lr"] if x > -4 + 1e-9)
        ok = grid[grid["status"] == "ok"]
        best = ok.loc[ok["val_loss"].idxmin(), "log2_lr"]
        bracketed = best < grid["log2_lr"].max() or grid["log2_lr"].max() >= -4 + 4 - 1e-9
        assert entry.added and bracketed, grid[["log2_lr", "val_loss", "status"]]
        window = entry.window
        for seed in (1, 2):
            assert sorted(part[part["seed"] == seed]["log2_lr"]) == window
        assert entry.ci_kind == "confidence" and len(entry.seed_vertices) == 3
    assert summary.setups()["mup_muon"].line.ci_kind == "confidence"
    before = len(trials)
    again = runner.invoke(app, words)
    assert again.exit_code == 0, again.output
    assert len(pd.read_csv(out / "trials.csv")) == before


def first_layout(data: dict) -> dict:
    """A summary.json of layout 2 rewritten by hand in layout 1 (no ``version``; the learning rate's setups under
    ``setups``, each with the width line's fields at the top and its optima under ``widths`` as ``log2_lr_star``)."""
    setups = {}
    for label, setup in data["keys"]["optimizer.lr"]["setups"].items():
        line = {k: v for k, v in setup["axes"]["width"].items() if k not in ("points", "used", "centre")}
        widths = {w: {("log2_lr_star" if k == "x_star" else k): v for k, v in point.items()}
                  for w, point in setup["axes"]["width"]["points"].items()}
        setups[label] = {**line, "verdict": setup["verdict"], "reason": setup["reason"], "fix": setup["fix"],
                         "widths": widths, "widths_used": setup["axes"]["width"]["used"],
                         "centre_log2_width": setup["axes"]["width"]["centre"]}
    return {"status": data["status"], "setups": setups}


def test_a_rerun_rewrites_a_first_layout_summary_in_the_second(runner: CliRunner, edge_spec: Path,
                                                               tmp_path: Path) -> None:
    """A sweep writes summary.json in layout 2; a rerun of the finished sweep whose summary.json is layout 1 (newer
    than the journal, complete, the same sweep: all the fast path asks but the layout) rewrites it in the current
    layout."""
    out = tmp_path / "run"
    words = ["sweep", str(edge_spec), "--out", str(out), "--workers", "1", "--threads", "1"]
    assert invoke(runner, *words).exit_code == 0
    path = out / "summary.json"
    written = json.loads(path.read_text())
    assert written["version"] == SUMMARY_VERSION and written["status"]["complete"] is True and "setups" not in written
    assert set(written["keys"]["optimizer.lr"]["setups"]) == {"mup_muon"}
    fast = invoke(runner, *words)
    assert fast.exit_code == 0 and "the tables are up to date" in fast.output, fast.output
    old = first_layout(written)
    read_back = Summary.from_json(old)
    layout_3 = {label: replace(setup, fates=None, backtest=None)  # keys layout 1 lacks
                for label, setup in Summary.from_json(written).setups().items()}
    assert read_back.status == written["status"] and read_back.setups() == layout_3, \
        "the hand-written layout 1 holds the same summary"
    path.write_text(json.dumps(old))
    again = invoke(runner, *words)
    assert again.exit_code == 0, again.output
    assert "the tables are up to date" not in again.output
    assert "sweep edge: 5/5 trials already done; rewriting the tables" in again.output
    rewritten = json.loads(path.read_text())
    assert rewritten["version"] == SUMMARY_VERSION and "setups" not in rewritten
    assert rewritten == written, "the rerun rewrote the same summary in the current layout"


def test_a_trial_declared_dead_meanwhile_is_never_told_twice() -> None:
    """Another worker may fail a trial (its heartbeat went stale during an outage) between this worker's last
    attribute and its tell: the result is dropped as a finished trial's (``UpdateFinishedTrialError``, which the
    worker handles), and a failure is not recorded over it."""
    from mutransfer.sweep.run.outcomes import _tell_running, record_failure

    study = optuna.create_study()
    trial = study.ask()
    study._storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        _tell_running(study, trial, 1.0)
    record_failure(study, trial, RuntimeError("boom"))
    assert study.trials[0].state == TrialState.FAIL and "status" not in study.trials[0].user_attrs
