"""``mutransfer sweep``: validate everything, claim the run directory, run the workers with a live display (one
line per finished trial off a terminal), then write the tables, summary and plots (also after Ctrl-C) and name
the next command."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..analysis.result import SUMMARY_VERSION, Summary
from ..defaults import BATCH_TOLERANCE, EFFECT_MARGIN, INTERVAL_LEVEL, option_text
from ..errors import UserError
from ..schema import TRANSFER_AXES
from ..words import Verdict
from .sweep_checks import check_trials, compose_trials, report_precheck
from .workers import resolve_workers

if TYPE_CHECKING:  # the command imports these late (start-up: a misspelt key answers before torch loads)
    from rich.console import Console

    from ..analysis.thresholds import Thresholds
    from ..sweep.run.runner import Snapshot
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.spec.sweep_spec import SweepSpec
    from ..sweep.run.worker import SweepOptions
    from ..tracking.session import SweepTracking
    from ..tracking.spec import TrackerSpec
    from .display import SweepDisplay, TrialLog

__all__ = ["run", "split_spec", "up_to_date_summary", "finalize", "next_step", "corpus_lines",
           "resume_command", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "interrupt_code", "DEFAULT_SPEC"]

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
DEFAULT_SPEC = "default"


def split_spec(spec: Optional[str], overrides: Sequence[str]) -> tuple[str, list[str]]:
    """``mutransfer sweep widths=[64]`` has no spec: the first word is an override, the spec is 'default'."""
    words = list(overrides)
    if spec is None:
        return DEFAULT_SPEC, words
    if "=" in spec:
        return DEFAULT_SPEC, [spec, *words]
    return spec, words


def up_to_date_summary(run_dir: Path, fingerprint: str, th: Thresholds, stop: bool = False) -> Optional[Summary]:
    """The summary of a finished sweep that a rerun would only rewrite as it is: the same sweep (fingerprint),
    complete, its tables written after its journal's last change, at the default thresholds, and not stopped
    when decided unless this run stops too (``stop``); None when anything could differ. For the default storage
    and study only: a database may hold other machines' new trials."""
    from ..analysis.thresholds import Thresholds
    from ..files import CONFIG_FILE, CURVES_FILE, JOURNAL_FILE, SUMMARY_FILE, TRIALS_FILE, load_yaml

    paths = [run_dir / name for name in (JOURNAL_FILE, CONFIG_FILE, TRIALS_FILE, CURVES_FILE, SUMMARY_FILE)]
    if th != Thresholds() or not all(path.is_file() for path in paths):
        return None
    journal, config, *tables = paths
    try:
        record = load_yaml(config, "the sweep record")
        data = json.loads(tables[-1].read_text(encoding="utf-8"))
    except (UserError, ValueError, OSError):
        return None
    if not isinstance(data, dict) or data.get("version") != SUMMARY_VERSION:
        return None  # a summary written in another layout is rewritten in this one
    status = data.get("status")
    if not isinstance(record, dict) or record.get("fingerprint") != fingerprint or not isinstance(status, dict) \
            or status.get("complete") is not True:
        return None
    summary = Summary.from_json(data)
    if not summary.setups() or summary.stopped and not stop:
        return None
    written = min(path.stat().st_mtime_ns for path in tables)
    return summary if journal.stat().st_mtime_ns <= written else None


def finalize(plan: SweepPlan, run_dir: Path, storage_url: Optional[str], prefix: str, th: Optional[Thresholds] = None,
             resume: str = "") -> Summary:
    """Storage → trials.csv, curves.csv → summary.json (with the sweep's status: complete, or what is missing and
    ``resume``, the command that finishes it) → plots (``th``: the analysis thresholds, default ones when None).
    A complete sweep removes the transfer files made from it while it was partial. Returns the summary."""
    from ..analysis.draw import draw
    from ..analysis.thresholds import Thresholds
    from ..analysis.run_files import write_tables
    from ..analysis.summary import write_summary
    from ..files import remove_partial_outputs
    from ..sweep.store.completion import sweep_status
    from ..sweep.run.gates import Gates
    from ..sweep.store.storage import open_storage
    from ..sweep.store.tables import collect

    storage = open_storage(storage_url, run_dir)
    trials, curves = collect(plan, storage, prefix)
    gates = Gates(plan, storage, prefix)
    stopped = gates.stops.replay()
    status = sweep_status(plan, storage, prefix, resume, gates.skipped)
    write_tables(run_dir, trials, curves)
    if status.complete:
        for path in remove_partial_outputs(run_dir):
            print(f"removed {path}: it was made while the sweep was unfinished (run transfer again)", file=sys.stderr)
    if trials.empty:
        return Summary(status=status.as_dict())
    th = th if th is not None else Thresholds()
    summary = write_summary(run_dir, trials, th, status.as_dict(), {s: stop.as_dict() for s, stop in stopped.items()})
    draw([run_dir], th=th)
    return summary


def resume_command(spec_name: str, overrides: Sequence[str], run_dir: Path, storage: Optional[str]) -> str:
    """The command that resumes this sweep (a database storage named by the environment variable, never by its
    URL, which may hold a password)."""
    import shlex

    words = ["mutransfer", "sweep", spec_name, *overrides, "--out", str(run_dir)]
    if storage is not None:
        words += ["--storage", "$MUTRANSFER_STORAGE"]
    return " ".join(w if w == "$MUTRANSFER_STORAGE" else shlex.quote(w) for w in words)


def run(spec_name: Optional[str], words: Sequence[str], out: Optional[Path], storage: Optional[str],
        study: Optional[str], workers_text: str, threads: int, dry_run: bool, heartbeat: int = 10,
        tolerance_text: str = option_text(BATCH_TOLERANCE), margin_text: str = option_text(EFFECT_MARGIN),
        retry_failed: bool = False, log: Optional[str] = None,
        level_text: str = option_text(INTERVAL_LEVEL)) -> int:
    """The sweep command; returns the exit code (130 after Ctrl-C, with the tables written; 1 when the same failure
    repeated or every trial failed). ``retry_failed``: train the failed trials' points again; ``log``: the tracker
    (``--log``) over the spec's ``log:`` section; ``level_text``: the level of the tables' intervals (``--level``)."""
    from ..files import SUMMARY_FILE
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.spec.sweep_spec import load_spec
    from ..sweep.plan.trial import setup_configs, sweep_record
    from .common import batch_tolerance, console, effect_margin, interval_level

    name, overrides = split_spec(spec_name, words)
    spec = load_spec(name, overrides)
    from ..tracking.spec import tracker_spec

    tracker = tracker_spec(log, spec.log)
    th = dataclasses.replace(batch_tolerance(tolerance_text), effect_margin=effect_margin(margin_text))
    level = interval_level(level_text)
    workers, threads = resolve_workers(workers_text, threads, spec.devices_per_trial)
    if heartbeat < 1:
        raise UserError(f"--heartbeat {heartbeat} must be at least 1 second", "e.g. --heartbeat 10")
    run_dir = out or Path("runs") / spec.name
    screen = console()
    configs = setup_configs(spec)
    record = sweep_record(spec, configs)
    if not dry_run and not retry_failed and workers is not None and storage is None and study is None:
        summary = up_to_date_summary(run_dir, record["fingerprint"], th, spec.stop)
        if summary is not None:
            done = (summary.status or {})["done"]
            screen.print(f"sweep {spec.name}: {done}/{done} trials already done; the tables are up to date (delete "
                         f"{run_dir / SUMMARY_FILE} to rewrite them)", highlight=False, soft_wrap=True)
            return _report(screen, spec, summary, run_dir, 0, level=level)
    plan = SweepPlan.of(spec)
    if spec.trainer is None:  # a trainer's command reads its own data: nothing here to load
        check_trials(spec, compose_trials(plan))
    how = _Execution(run_dir, storage, study, workers, threads, dry_run, heartbeat, th, retry_failed,
                     tracker.named(study or spec.name) if tracker is not None else None, level)
    return _start(screen, plan, name, overrides, configs, record, how)


@dataclasses.dataclass(frozen=True)
class _Execution:
    """How the sweep command was asked to run: where, on which storage, with how many workers and threads."""

    run_dir: Path
    storage: Optional[str]
    study: Optional[str]
    workers: Optional[int]
    threads: int
    dry_run: bool
    heartbeat: int
    th: Thresholds
    retry_failed: bool = False
    tracker: Optional[TrackerSpec] = None
    level: int = INTERVAL_LEVEL
    """The level of the tables' intervals (``--level``)."""


def _start(screen: Console, plan: SweepPlan, name: str, overrides: list[str], configs: dict[str, dict[str, Any]],
           record: dict[str, Any], how: _Execution) -> int:
    """Print the dry run, or claim the run directory and train."""
    spec = plan.spec
    workers, threads = how.workers, how.threads
    if workers is None:
        from ..sweep.run.layout import choose_layout

        workers, threads, message = choose_layout(plan)
        screen.print(f"--workers auto: {message}")
    if how.dry_run:
        from .dry_run import sweep_dry_run

        screen.print(sweep_dry_run(plan, workers, threads, how.run_dir))
        return 0
    from ..files import claim_run_dir  # torch (the worker's trials): after the dry run, which needs none
    from ..sweep.store.storage import open_storage
    from ..sweep.run.worker import SweepOptions

    run_dir = how.run_dir
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out {run_dir} is an existing file", "give a directory path")
    opts = SweepOptions(run_dir=run_dir, storage=how.storage, prefix=how.study or spec.name, workers=workers,
                        threads=threads, heartbeat=how.heartbeat, record=record, retry_failed=how.retry_failed)
    if how.storage is not None:
        open_storage(how.storage, run_dir, how.heartbeat)
    run_dir.mkdir(parents=True, exist_ok=True)
    claim_run_dir(run_dir, record)
    if spec.coord_check:
        report_precheck(screen, spec)
    sizes = [(len(spec.setups), "setups"),
             *((len(spec.listed(axis.name)), axis.counted or axis.plural) for axis in TRANSFER_AXES),
             (len(spec.seeds), "seeds")]
    combined = f" (axes: {spec.axes})" if len(spec.swept()) > 1 else ""
    screen.print(f"sweep [bold]{spec.name}[/]: {' × '.join(f'{n} {what}' for n, what in sizes if n)}{combined} · "
                 f"{workers} worker(s) × {threads} thread(s) · "
                 f"batch_trials={spec.batch_trials} · {run_dir}", soft_wrap=True)
    for line in corpus_lines(configs) if spec.trainer is None else []:
        screen.print(line, markup=False, highlight=False, soft_wrap=True)
    return _execute(screen, plan, opts, how.th, resume_command(name, overrides, run_dir, how.storage), how.tracker,
                    how.level)


def corpus_lines(configs: dict[str, dict[str, Any]]) -> list[str]:
    """The header's corpus line: each distinct corpus the setups read (``setup_configs``), naming the setups when
    they read different ones."""
    from ..schema import DataConfig
    from ..train.data import load_corpus

    readers: dict[str, list[str]] = {}
    for label, cfg in configs.items():
        readers.setdefault(json.dumps([cfg["data"], cfg["train"]["seq_len"]]), []).append(label)
    lines = [load_corpus(DataConfig(**data), seq_len).headline() for data, seq_len in map(json.loads, readers)]
    if len(lines) == 1:
        return lines
    return [f"{line} ({', '.join(labels)})" for line, labels in zip(lines, readers.values())]


class _Progress:
    """Feeds the display every snapshot and keeps the first (what earlier runs finished) and the latest; says
    how many trials were done before once this run finishes one more; writes each new provisional answer to the
    run directory (trials.csv, curves.csv, and summary.json marked ``provisional``)."""

    def __init__(self, screen: Console, display: SweepDisplay | TrialLog, run_dir: Path,
                 tracking: Optional[SweepTracking] = None) -> None:
        self.screen, self.display, self.run_dir, self.tracking = screen, display, run_dir, tracking
        self.first: Optional[Snapshot] = None
        self.last: Optional[Snapshot] = None

    def __call__(self, snap: Snapshot) -> None:
        self.first = self.first or snap
        if self.first.done and self.last is not None and self.last.done == self.first.done < snap.done:
            self.screen.print(f"resuming: {self.first.done} trials were already done")
        self.last = snap
        if snap.provisional is not None:
            from ..analysis.run_files import write_tables
            from ..files import SUMMARY_FILE, write_json

            write_tables(self.run_dir, snap.provisional.trials, snap.provisional.curves)
            write_json(self.run_dir / SUMMARY_FILE, snap.provisional.summary.to_json())
            if self.tracking is not None:
                from ..tracking.answer import sweep_answer

                self.tracking.answer(sweep_answer(snap.provisional.summary, snap.done, [self.run_dir / SUMMARY_FILE]))
        self.display.update(snap)

    def nothing_new(self) -> bool:
        """Every trial was finished before this run started."""
        return self.first is not None and self.last is not None and self.first.done == self.last.done > 0


def _execute(screen: Console, plan: SweepPlan, opts: SweepOptions, th: Thresholds, resume: str = "",
             tracker: Optional[TrackerSpec] = None, level: int = INTERVAL_LEVEL) -> int:
    """Run the workers under a live display on a terminal, one line per finished trial otherwise; then write
    the outputs (and log the answer to the tracker) and print the tables at ``level`` %. Ctrl-C, and the same
    failure repeated (``trainer.max_failures``), still write them."""
    from ..sweep.interrupts import Interrupts
    from ..sweep.run.repeats import RepeatedFailure
    from ..sweep.run.runner import run_sweep
    from .display import progress_view
    from .tracker import finish_tracking, start_tracking

    spec = plan.spec
    tracking, opts = start_tracking(tracker, plan, opts)
    display, live = progress_view(screen, plan, opts.workers)
    progress = _Progress(screen, display, opts.run_dir, tracking)
    interrupted = 0
    stopped = ""
    try:
        with Interrupts().catching(), live:
            run_sweep(plan, opts, on_progress=progress)
    except KeyboardInterrupt as exc:
        interrupted = interrupt_code(exc)
        screen.print("[yellow]interrupted:[/] running trials are marked failed and re-run on resume")
    except RepeatedFailure as exc:
        stopped = exc.message
        screen.print(stopped, style="red", markup=False, highlight=False, soft_wrap=True)
    if not interrupted and not stopped and progress.nothing_new():
        screen.print(f"sweep {spec.name}: {progress.last.done}/{progress.last.total} trials already done; "
                     "rewriting the tables")
    screen.print()
    summary = finalize(plan, opts.run_dir, opts.storage, opts.prefix, th, resume)
    from ..files import SUMMARY_FILE, TRIALS_FILE

    finish_tracking(tracking, summary, opts.run_dir, [SUMMARY_FILE, TRIALS_FILE])
    return _report(screen, spec, summary, opts.run_dir, interrupted, stopped, level)


def _report(screen: Console, spec: SweepSpec, summary: Summary, run_dir: Path, interrupted: int,
            stopped: str = "", level: int = INTERVAL_LEVEL) -> int:
    """The sweep's status, its tables per swept axis (and per searched key) with their notes, every interval at
    ``level`` %, the files written and the next command; returns the exit code: ``interrupted``'s, else 1 when
    the sweep ``stopped`` on a repeated failure (its line) or every trial failed (then the failure is named, not
    the grid, and no transfer is offered)."""
    from ..analysis.failures import all_failed
    from ..files import TRIALS_FILE
    from .common import LEVEL_OPTION
    from .display import answer_lines, batch_table, failure_fix, summary_table, verdict_notes

    status = summary.status or {}
    screen.print(f"sweep {spec.name}: {status['line']}" + ("" if status["complete"] else
                 " — every verdict below is partial; transfer, verify and compare refuse this run until it is "
                 "finished (or pass --partial)"), highlight=False, soft_wrap=True)
    for label, stop in summary.stopped.items():
        screen.print(f"{label}: stopped when decided at look {stop['look']} of {stop['looks']} ({stop['verdict']} on "
                     f"widths {', '.join(map(str, stop['widths']))}); `stop=false` trains the rest of the design",
                     highlight=False, soft_wrap=True)
    screen.print()
    if summary.setups():
        for axis in spec.swept():
            screen.print(summary_table(summary, axis=axis, level=level, level_option=LEVEL_OPTION))
            for note in verdict_notes(summary, axis, level):
                screen.print(f"[yellow]{note}[/]")
        batches = batch_table(summary)
        if batches is not None:
            screen.print(batches)
    for line in answer_lines(summary):
        screen.print(line, highlight=False, markup=False, soft_wrap=True)
    for key in summary.other_keys():
        for axis in spec.swept():
            screen.print(summary_table(summary, axis=axis, key=key, level=level, level_option=LEVEL_OPTION))
    written = sorted(p.name for p in run_dir.iterdir() if p.is_file() and not p.name.startswith("."))
    screen.print(f"run directory: {run_dir} ({', '.join(written)})", soft_wrap=True)
    failures = all_failed(run_dir / TRIALS_FILE)
    failed = stopped or (failures.line() if failures is not None else "")
    if failed and not interrupted:
        screen.print(failed, style="red", markup=False, highlight=False, soft_wrap=True)
        screen.print(f"next: {failure_fix(str(status.get('resume') or ''))}", highlight=False, soft_wrap=True)
        return 1
    screen.print(next_step(spec, summary, run_dir, interrupted), highlight=False, soft_wrap=True)
    return interrupted


def next_step(spec: SweepSpec, summary: Summary, run_dir: Path, interrupted: int = 0) -> str:
    """The command to run after a sweep: ``transfer`` to 4× the largest swept value of each axis (width at least
    4096; the batch at the largest swept, since the optimal LR stops following the batch past the critical batch),
    from this run; resuming the sweep when it was interrupted or finished no trial."""
    import shlex

    from ..schema import axis_named

    if interrupted or not summary.setups():
        return "next: run the same command again to resume the sweep"
    targets = {axis: (1 if axis == "batch" else 4) * max(spec.listed(axis))
               for axis in spec.swept()}
    targets["width"] = max(4096, targets["width"])
    command = " ".join(["mutransfer transfer", *(f"{axis_named(axis).option} {value}" if axis_named(axis).option
                                                 else f"--at {axis}={value}" for axis, value in targets.items()),
                        "--from", shlex.quote(str(run_dir))])
    if any(info.verdict == Verdict.TRANSFERS for info in summary.setups().values()):
        return f"next: {command}"
    return f"next: {command} (no setup transfers yet: transfer takes the one whose optimum moves least, and warns)"


def interrupt_code(exc: KeyboardInterrupt) -> int:
    """The exit code after an interruption: 143 for SIGTERM, 130 for Ctrl-C."""
    from ..sweep.interrupts import Terminated

    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
