"""``mutransfer sweep``: validate everything, claim the run directory, run the workers with a live display,
then write the tables, summary and plots (also after Ctrl-C)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from ..errors import UserError

__all__ = ["run", "split_spec", "resolve_workers", "validate_trials", "finalize", "precheck", "EXIT_INTERRUPTED",
           "EXIT_TERMINATED", "interrupt_code",
           "DEFAULT_SPEC"]

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


def resolve_workers(workers: str, threads: int) -> tuple[Optional[int], int]:
    """``--workers N`` (N ≥ 1) or ``auto`` (None: measured later); threads default to cores / workers."""
    from ..train.device import available_cores

    if threads < 0:
        raise UserError(f"--threads {threads} must be >= 0", "use 0 for cores / workers")
    if workers == "auto":
        return None, threads
    try:
        count = int(workers)
    except ValueError:
        raise UserError(f"--workers {workers} is not a number", "use --workers N (N >= 1) or --workers auto") from None
    if count < 1:
        raise UserError(f"--workers {count} must be at least 1", "use --workers 1 or more, or --workers auto")
    return count, threads or max(1, available_cores() // count)


def validate_trials(spec: Any) -> dict[str, Any]:
    """Compose every (setup, width) config once so a bad override or width fails before any training."""
    from ..sweep.studies import study_keys
    from ..sweep.trial import setup_configs, trial_config
    from ..train.data import load_corpus

    checked: set[str] = set()
    for key in study_keys(spec):
        cfg = trial_config(spec, key, key.search.grid()[0])
        if cfg.model.hf is not None and spec.batch_trials not in ("auto", 1):
            raise UserError(f"batch_trials={spec.batch_trials} stacks learning-rate trials of the built-in GPT, not "
                            f"model=hf (setup {key.setup})", "set batch_trials=1 (or auto)")
        tag = repr((cfg.data, cfg.train.seq_len))
        if tag not in checked:
            load_corpus(cfg.data, cfg.train.seq_len)
            checked.add(tag)
    return setup_configs(spec)


def precheck(spec: Any, steps: int = 3) -> dict[str, list[str]]:
    """``coord_check: true`` in a spec: a short coordinate check of every setup across the spec's widths."""
    from ..analysis.stability import judge
    from ..config import compose
    from ..train.coordcheck import coord_check
    from ..train.data import load_corpus

    unstable: dict[str, list[str]] = {}
    if spec.model:
        return unstable
    for setup in spec.setups:
        cfg = compose([*setup.overrides, *spec.overrides, f"model.width={spec.widths[0]}"])
        table = coord_check(cfg, load_corpus(cfg.data, cfg.train.seq_len), spec.widths, steps, cfg.optimizer.lr,
                            [spec.seeds[0]])
        modules = judge(table)["modules"] if len(spec.widths) > 1 else {}
        unstable[setup.label] = [m for m, e in modules.items() if e["verdict"] != "stable"]
    return unstable


def finalize(spec: Any, run_dir: Path, storage_url: Optional[str], prefix: str) -> dict[str, Any]:
    """Storage → trials.csv, curves.csv → summary.json → plots. Returns the summary."""
    from ..analysis.draw import draw
    from ..analysis.summary import write_summary, write_tables
    from ..sweep.storage import open_storage
    from ..sweep.tables import collect

    trials, curves = collect(spec, open_storage(storage_url, run_dir), prefix)
    write_tables(run_dir, trials, curves)
    if trials.empty:
        return {"setups": {}, "keys": {}}
    summary = write_summary(run_dir, trials)
    draw([run_dir])
    return summary


def _report_precheck(out: Any, spec: Any) -> None:
    for label, unstable in precheck(spec).items():
        if unstable:
            out.print(f"[bold red]warning:[/] coord check of setup '{label}': not stable: {', '.join(unstable)} "
                      "— its optimum may not transfer (see `mutransfer coord-check`)")
        else:
            out.print(f"coord check of setup '{label}': every module stable")


def run(spec_name: Optional[str], words: Sequence[str], out: Optional[Path], storage: Optional[str],
        study: Optional[str], workers_text: str, threads: int, dry_run: bool, heartbeat: int = 10) -> int:
    """The sweep command; returns the exit code (130 after Ctrl-C, with the tables written)."""
    from ..files import claim_run_dir, dump_yaml
    from ..sweep.spec import load_spec
    from ..sweep.storage import open_storage
    from ..sweep.trial import sweep_record
    from ..sweep.worker import SweepOptions
    from .common import console

    name, overrides = split_spec(spec_name, words)
    spec = load_spec(name, overrides)
    workers, threads = resolve_workers(workers_text, threads)
    if heartbeat < 1:
        raise UserError(f"--heartbeat {heartbeat} must be at least 1 second", "e.g. --heartbeat 10")
    configs = validate_trials(spec)
    screen = console()
    if workers is None:
        from ..sweep.layout import choose_layout

        workers, threads, message = choose_layout(spec)
        screen.print(f"--workers auto: {message}")
    if dry_run:
        from .dry_run import dry_run_table

        screen.print(dry_run_table(spec, workers, threads))
        return 0
    run_dir = out or Path("runs") / spec.name
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out {run_dir} is an existing file", "give a directory path")
    record = sweep_record(spec, configs)
    opts = SweepOptions(run_dir=run_dir, storage=storage, prefix=study or spec.name, workers=workers, threads=threads,
                        heartbeat=heartbeat, record=record)
    if storage is not None:
        open_storage(storage, run_dir, heartbeat)
    run_dir.mkdir(parents=True, exist_ok=True)
    claim_run_dir(run_dir, record["fingerprint"], dump_yaml(record))
    if spec.coord_check:
        _report_precheck(screen, spec)
    sizes = [(len(spec.setups), "setups"), (len(spec.widths), "widths"), (len(spec.depths), "depths"),
             (len(spec.steps), "horizons"), (len(spec.seeds), "seeds")]
    combined = f" (axes: {spec.axes})" if len(spec.swept()) > 1 else ""
    screen.print(f"sweep [bold]{spec.name}[/]: {' × '.join(f'{n} {what}' for n, what in sizes if n)}{combined} · "
                 f"{workers} worker(s) × {threads} thread(s) · "
                 f"batch_trials={spec.batch_trials} · {run_dir}")
    return _execute(screen, spec, opts)


def _execute(screen: Any, spec: Any, opts: Any) -> int:
    """Run the workers under a live display, then write the outputs; Ctrl-C still writes them."""
    from rich.live import Live

    from ..files import CURVES_FILE, DRIFT_PLOT, SUMMARY_FILE, TRIALS_FILE, transfer_plot
    from ..sweep.interrupts import Interrupts
    from ..sweep.runner import run_sweep
    from .display import SweepDisplay, summary_table, verdict_notes

    display = SweepDisplay()
    interrupted = 0
    try:
        with Interrupts().catching(), Live(display, console=screen, refresh_per_second=2, transient=False):
            run_sweep(spec, opts, on_progress=display.update)
    except KeyboardInterrupt as exc:
        interrupted = interrupt_code(exc)
        screen.print("[yellow]interrupted:[/] running trials are marked failed and re-run on resume")
    summary = finalize(spec, opts.run_dir, opts.storage, opts.prefix)
    if summary["setups"]:
        for axis in spec.swept():
            screen.print(summary_table(summary, axis=axis))
            for note in verdict_notes(summary, axis):
                screen.print(f"[yellow]{note}[/]")
    outputs = (TRIALS_FILE, CURVES_FILE, SUMMARY_FILE, *map(transfer_plot, spec.swept()), DRIFT_PLOT)
    screen.print(f"run directory: {opts.run_dir} ({', '.join(outputs)})")
    return interrupted


def interrupt_code(exc: KeyboardInterrupt) -> int:
    """The exit code after an interruption: 143 for SIGTERM, 130 for Ctrl-C."""
    from ..sweep.interrupts import Terminated

    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
