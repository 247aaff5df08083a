"""Sweep progress that reads in a log: one plain line per finished trial off a terminal, flushed as it comes, no
ANSI codes; counts that never overshoot (their source: the finished trials in the study); an ETA line at most once
a minute, priced by the finished trials' seconds; a live display on a terminal that ends before the tables."""

from __future__ import annotations

import dataclasses
import io
import re
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from rich.console import Console
from typer.testing import CliRunner

import mutransfer.commands.common as common
from conftest import invoke
from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.commands.display import trial_lines
from mutransfer.sweep.plan.estimate import TRIAL_OVERHEAD_S
from mutransfer.sweep.plan.measured_cost import duration_text
from mutransfer.sweep.run.runner import FinishedTrial, Snapshot, is_finished, run_sweep
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.storage import open_storage
from mutransfer.sweep.store.studies import is_bookkeeping
from mutransfer.sweep.run.worker import SweepOptions

TRIAL_LINE = re.compile(r"^\s*(\d+)/(\d+) · (\S+) · (width \d+[^·]*) · seed (\d+) · log2_lr (-?\d+\.\d\d) "
                        r"\(lr [\d.e+-]+\) · loss ([\d.]+|-) · (\w+) · [\d.]+ s$")


def finished_in_storage(run: Path) -> int:
    storage = open_storage(None, run)
    return sum(is_finished(t) for name in optuna.get_all_study_names(storage)
               for t in optuna.load_study(study_name=name, storage=storage).get_trials() if not is_bookkeeping(t))


def _trial(number: int, study: str = "s.a") -> FinishedTrial:
    return FinishedTrial(study=study, number=number, setup="mup_muon", point="width 64, depth 4", seed=0,
                         column="log2_lr", x=-6.0, lr=2 ** -6, loss=4.25, status="ok", seconds=1.5)


def test_trial_lines_number_the_new_trials_up_to_the_finished_count() -> None:
    before = Snapshot(total=3, finished=[_trial(0)])
    after = Snapshot(total=5, finished=[_trial(0), _trial(1), _trial(0, "s.b")])
    rest = "mup_muon · width 64, depth 4 · seed 0 · log2_lr -6.00 (lr 0.01562) · loss 4.2500 · ok · 1.50 s"
    assert trial_lines(before, after) == [f"2/5 · {rest}", f"3/5 · {rest}"]
    assert trial_lines(after, after) == [] and len(trial_lines(None, after)) == 3


def test_counts_come_from_the_study_and_the_total_grows_with_the_grid(edge_spec: Path, tmp_path: Path) -> None:
    spec = load_spec(str(edge_spec))
    snaps: list[Snapshot] = []
    run_sweep(SweepPlan.of(spec), SweepOptions(run_dir=tmp_path, prefix="p", threads=1), on_progress=snaps.append)
    assert all(s.done <= s.total for s in snaps), [(s.done, s.total) for s in snaps]
    assert [s.done for s in snaps] == sorted(s.done for s in snaps)
    assert snaps[-1].done == snaps[-1].total == finished_in_storage(tmp_path) > snaps[0].total


def test_a_redirected_sweep_logs_one_plain_line_per_trial_as_it_finishes(edge_spec: Path, tmp_path: Path,
                                                                        text_file: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "mutransfer", "sweep", str(edge_spec), "--out",
                             str(run), "--workers", "1", "--threads", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if TRIAL_LINE.match(lines[-1]):
            break
    assert TRIAL_LINE.match(lines[-1]) and proc.poll() is None, "no trial line came before the sweep ended"
    rest, errors = proc.communicate(timeout=120)
    assert proc.returncode == 0, errors
    output = "\n".join(lines) + "\n" + rest
    assert "\x1b[" not in output
    assert output.splitlines()[1].startswith(f"corpus {text_file.resolve()} · ")
    trials = [TRIAL_LINE.match(line) for line in output.splitlines() if TRIAL_LINE.match(line)]
    finished = finished_in_storage(run)
    assert len(trials) == finished
    counts = [(int(m[1]), int(m[2])) for m in trials]
    assert [done for done, _ in counts] == list(range(1, finished + 1))
    assert all(done <= total for done, total in counts) and counts[-1] == (finished, finished)
    assert output.index(trials[-1][0]) < output.index("optimal learning rate per width")


def test_the_live_display_counts_finished_trials_and_ends_before_the_tables(
        runner: CliRunner, edge_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(common, "console", lambda *a, **k: Console(file=screen, force_terminal=True, width=100))
    run = tmp_path / "run"
    result = invoke(runner, "sweep", str(edge_spec), "--out", str(run), "--workers", "1",
                    "--threads", "1")
    assert result.exit_code == 0, result.output
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    counts = [(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+) trials", text)]
    assert all(done <= total for done, total in counts), counts
    assert counts[-1] == (finished_in_storage(run),) * 2
    assert re.search(r"\n[ \t]*\n[ \t]*optimal learning rate per width", text), text[-2000:]


def test_a_sweep_that_needs_fewer_trials_than_budgeted_ends_on_its_count() -> None:
    """verify's budget counts every probe of its anchors; when fewer run, the log's last line still reads N/N."""
    from mutransfer.commands.display import TrialLog

    out = io.StringIO()
    log = TrialLog(Console(file=out, width=200))
    log.update(Snapshot(total=4))
    log.update(Snapshot(total=4, finished=[_trial(0), _trial(1)]))
    log.update(Snapshot(total=2, finished=[_trial(0), _trial(1)]))
    lines = out.getvalue().splitlines()
    assert [line.split(" · ")[0].strip() for line in lines[:2]] == ["1/4", "2/4"]
    assert lines[-1].startswith("2/2 trials done")


def test_a_plain_log_says_its_eta_at_most_once_a_minute() -> None:
    """Trials finishing at 30, 61, 90 and 125 s: ETA lines at 61 and 125 s only, each the trials left times the
    finished trials' seconds plus bookkeeping, over the workers."""
    from mutransfer.commands.display import TrialLog
    from mutransfer.commands.log_eta import ETA_EVERY_S, LogEta

    now = [0.0]
    out = io.StringIO()
    log = TrialLog(Console(file=out, width=300), LogEta({64: 10}, workers=2, clock=lambda: now[0]))
    log.update(Snapshot(total=10))
    trials = [_trial(i) for i in range(10)]
    for done, at in ((1, 30.0), (2, 61.0), (3, 90.0), (4, 125.0)):
        now[0] = at
        log.update(Snapshot(total=10, finished=trials[:done]))
    eta = [line for line in out.getvalue().splitlines() if line.startswith("eta:")]
    assert ETA_EVERY_S == 60 and len(eta) == 2
    expected = 8 * (1.5 + TRIAL_OVERHEAD_S) / 2
    assert eta[0] == (f"eta: about {duration_text(expected)} for the 8 trials left (2 worker(s); from the seconds "
                      "of 2 finished trials)")


def test_the_eta_prices_the_widths_still_planned() -> None:
    """Width 32 done at 1 s a trial; width 64's 5 planned trials cost 1 s × 2² (one width: p = 2) each."""
    from mutransfer.commands.log_eta import eta_seconds

    done = [dataclasses.replace(_trial(i), point="width 32", seconds=1.0) for i in range(5)]
    assert eta_seconds(done, 10, {32: 5, 64: 5}, 1) == pytest.approx(5 * (4.0 + TRIAL_OVERHEAD_S))
    assert eta_seconds(done, 5, {32: 5, 64: 5}, 1) is None
