"""After a sweep the tool names what to do next: the transfer command, every file in the run directory, a rerun
that had nothing left to do, the first field a refused sweep differs in, the run `transfer` reads (on its first
line), and every shipped spec in `sweep --help`; its table and notes read at one level, and its advice under them
is `transfer`'s."""

from __future__ import annotations

import io
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

import mutransfer.sweep.spec.sweep_spec as spec_module
from conftest import invoke, write_edge_spec
from mutransfer.analysis.cells import format_interval
from mutransfer.analysis.levels import point_interval, slope_interval
from mutransfer.analysis.narrowing import why_inconclusive
from mutransfer.analysis.result import AxisFit, KeyResult, SetupResult, Summary
from mutransfer.analysis.summary import summarize_run
from mutransfer.commands.display import FITTED_LOSS
from mutransfer.commands.sweep import _report, next_step
from mutransfer.defaults import INTERVAL_LEVEL, INTERVAL_LEVELS
from mutransfer.files import VERSION_KEY, first_difference
from mutransfer.schema import LR_KEY
from mutransfer.sweep.spec.sweep_spec import AxisValues, load_spec
from mutransfer.transfer.target import make_transfer


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> tuple[Path, Path, str]:
    """A finished sweep of the edge spec: (spec path, run directory, its output)."""
    folder = tmp_path_factory.mktemp("next")
    spec, run = write_edge_spec(folder, text_file), folder / "run"
    result = invoke(CliRunner(), "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    return spec, run, result.output


def test_a_finished_sweep_names_the_next_command_and_every_file_it_wrote(finished: tuple[Path, Path, str]) -> None:
    _, run, output = finished
    lines = output.strip().splitlines()
    assert lines[-1] == (f"next: mutransfer transfer --width 4096 --from {run} (no setup transfers yet: transfer "
                         "takes the one whose optimum moves least, and warns)")
    files = sorted(p.name for p in run.iterdir() if p.is_file())
    assert "curves.png" in files and lines[-2] == f"run directory: {run} ({', '.join(files)})"


def test_the_next_command_follows_the_swept_axes(edge_spec: Path) -> None:
    spec = replace(load_spec(str(edge_spec)), values=AxisValues.of({"width": (32, 2048), "depth": (1, 3)}))
    line = AxisFit("width", "transfers", "confidence")
    summary = Summary({LR_KEY: KeyResult(LR_KEY, {"mup_muon": SetupResult("mup_muon", {"width": line}, "transfers")})})
    assert next_step(spec, summary, Path("runs/my run")) == \
        "next: mutransfer transfer --width 8192 --depth 12 --from 'runs/my run'"
    assert next_step(spec, summary, Path("runs/x"), interrupted=130) == \
        "next: run the same command again to resume the sweep"


def test_a_rerun_of_a_finished_sweep_says_so(runner: CliRunner, finished: tuple[Path, Path, str]) -> None:
    spec, run, _ = finished
    result = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    assert f"sweep edge: 5/5 trials already done; the tables are up to date (delete {run / 'summary.json'} to " \
        "rewrite them)" in result.output
    assert "resuming" not in result.output and "next: mutransfer transfer" in result.output
    journal = run / "optuna.journal"
    os.utime(journal, ns=(journal.stat().st_atime_ns, (run / "summary.json").stat().st_mtime_ns + 1))
    again = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert again.exit_code == 0, again.output
    assert "sweep edge: 5/5 trials already done; rewriting the tables" in again.output


@pytest.mark.parametrize(("words", "says"), [
    (["widths=[32,64]"], "spec.widths: [32] → [32, 64]"),
    (["train.steps=5"], 'spec.overrides[9]: (absent) → "train.steps=5"'),
])
def test_a_different_sweep_is_refused_naming_the_first_difference(runner: CliRunner, finished: tuple[Path, Path, str],
                                                                  words: list[str], says: str) -> None:
    spec, run, _ = finished
    result = invoke(runner, "sweep", str(spec), *words, "--out", str(run))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert f"error: {run} holds a different sweep: {says}; use a new --out directory" in result.output


def test_first_difference_walks_mappings_and_long_lists() -> None:
    old = {"fingerprint": "a", "spec": {"widths": [32, 64]}, "setups": {"s": {"lr": 0.1, "tags": ["x" * 50, "y"]}}}
    assert first_difference(old, {**old, "fingerprint": "b"}) is None
    wider = {**old, "spec": {"widths": [32, 64, 128]}}
    assert first_difference(old, wider) == "spec.widths: [32, 64] → [32, 64, 128]"
    long = {**old, "setups": {"s": {"lr": 0.1, "tags": ["x" * 50, "z"]}}}
    assert first_difference(old, long) == 'setups.s.tags[1]: "y" → "z"'
    assert first_difference(old, {**old, "extra": 1}) == "extra: (absent) → 1"
    assert first_difference({**old, VERSION_KEY: "0.7.0"}, {**old, VERSION_KEY: "0.8.0"}) is None
    assert first_difference(old, {VERSION_KEY: "0.8.0", **wider}) == "spec.widths: [32, 64] → [32, 64, 128]"


def test_a_run_an_earlier_mutransfer_recorded_without_its_version_resumes(runner: CliRunner, tmp_path: Path,
                                                                         finished: tuple[Path, Path, str]) -> None:
    """A run directory whose config.yaml has no ``mutransfer_version`` (written before it was recorded) is the same
    sweep: the rerun rewrites the tables and leaves the record as it was."""
    spec, kept, _ = finished
    run = tmp_path / "run"
    shutil.copytree(kept, run)
    record = yaml.safe_load((run / "config.yaml").read_text())
    text = yaml.safe_dump({key: value for key, value in record.items() if key != VERSION_KEY}, sort_keys=False)
    (run / "config.yaml").write_text(text)
    (run / "summary.json").unlink()
    result = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    assert "5/5 trials already done; rewriting the tables" in result.output
    assert (run / "config.yaml").read_text() == text and (run / "summary.json").is_file()


def test_transfer_names_the_run_it_reads_first(runner: CliRunner, finished: tuple[Path, Path, str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _, run, _ = finished
    given = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--out", str(tmp_path / "a.yaml"))
    assert given.exit_code == 0 and given.output.splitlines()[0] == f"transfer from {run}", given.output
    shutil.copytree(run, tmp_path / "runs" / "edge")
    monkeypatch.chdir(tmp_path)
    latest = invoke(runner, "transfer", "--width", "256", "--out", str(tmp_path / "b.yaml"))
    assert latest.exit_code == 0, latest.output
    assert latest.output.splitlines()[0] == ("transfer from runs/edge (the latest sweep in runs/; --from RUN_DIR for "
                                             "another)")


def test_sweep_help_lists_every_spec_in_the_sweeps_folder(runner: CliRunner, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = sorted(p.stem for p in spec_module.spec_dir().glob("*.yaml"))
    assert {"llama", "depth", "horizon", "axes"} <= set(shipped)
    assert listed(invoke(runner, "sweep", "--help").output) == shipped
    (tmp_path / "mine.yaml").write_text("name: mine\n")
    monkeypatch.setattr(spec_module, "spec_dir", lambda: tmp_path)
    assert listed(invoke(runner, "sweep", "--help").output) == ["mine"]


def listed(help_text: str) -> list[str]:
    """The spec names ``sweep --help`` lists after 'a shipped name'."""
    words = " ".join(help_text.replace("│", " ").split())
    found = re.search(r"a shipped name \(([^)]*)\)", words)
    assert found, words
    return found[1].split(", ")


SMOKE = Path(__file__).parents[1] / "baselines" / "smoke"
"""The committed smoke sweep: both setups inconclusive, each for its slope's interval alone."""


@pytest.fixture()
def smoke_run(tmp_path: Path) -> Path:
    run = tmp_path / "smoke"
    shutil.copytree(SMOKE, run)
    return run


def printed_report(run: Path, level: int) -> str:
    """What ``sweep`` prints after the smoke sweep finished, with ``--level level``."""
    summary = summarize_run(run)
    summary.status = {"complete": True, "line": "complete"}
    screen = Console(width=400, record=True, file=io.StringIO())
    assert _report(screen, load_spec("smoke"), summary, run, 0, level=level) == 0
    return screen.export_text()


@pytest.mark.parametrize("level", INTERVAL_LEVELS)
def test_the_sweep_s_table_and_its_notes_print_one_level(smoke_run: Path, level: int) -> None:
    """The title and the caption name the level; every optimum's and slope's interval in the table, and the
    interval each note quotes, is at that level; the best-loss column says its loss is the fitted one."""
    text = printed_report(smoke_run, level)
    other = next(value for value in INTERVAL_LEVELS if value != level)
    lines = text.splitlines()
    assert f"optimal learning rate per width ({level} % intervals)" in text
    assert f"every interval is {level} % (--level {other} for {other} %)" in text
    header = next(line for line in lines if "log2 LR*" in line)
    assert FITTED_LOSS in header and "fitted" in FITTED_LOSS
    notes = [line for line in lines if ": inconclusive — " in line]
    assert len(notes) == 2 and not any(f"{other} %" in note for note in notes), notes
    for label, setup in summarize_run(smoke_run).setups().items():
        line = setup.line
        assert line is not None and line.slope is not None
        slope = format_interval(slope_interval(line, level))
        row = next(row for row in lines if f" {label} " in row)
        assert f"{line.slope:+.2f} {slope}" in row, (row, slope)
        note = next(note for note in notes if note.startswith(f"{label}:"))
        assert f"the slope's {level} % interval {slope} is neither inside ±0.25" in note, note
        for point in line.points.values():
            assert format_interval(point_interval(point, level)) in text
            assert (format_interval(point.ci) in text) == (level == 95), "the stored intervals are the 95 % ones"


def test_the_sweep_and_transfer_give_the_same_advice(smoke_run: Path) -> None:
    """What the sweep's note advises for the setup transfer takes is, word for word, what transfer warns: the one
    computed advice (``narrowing.why_inconclusive``), not a generic list of what might narrow the interval."""
    notes = [line for line in printed_report(smoke_run, INTERVAL_LEVEL).splitlines() if ": inconclusive — " in line]
    transfer = make_transfer(smoke_run, 4096, sections=False)
    label = transfer.source.setup
    warned = next(w for w in transfer.warnings if w.startswith(f"setup '{label}' is inconclusive: "))
    note = next(note for note in notes if note.startswith(f"{label}: inconclusive — "))
    advice = "; ".join(why_inconclusive(summarize_run(smoke_run).setups()[label], "width"))
    assert note.removeprefix(f"{label}: inconclusive — ").strip() == advice
    assert warned.removeprefix(f"setup '{label}' is inconclusive: ") == advice
    assert "would decide it" in advice and "narrow it" not in advice, advice
