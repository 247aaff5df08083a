"""What ``mutransfer sweep`` does, step by step: validate everything, claim the run directory, run the
workers with a live display, then write the tables, summary and plots (also after Ctrl-C)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional


from .errors import UserError
from .runs import claim_run_dir, dump_yaml
from .spec import SweepSpec, load_spec

__all__ = ["run_sweep_command", "run_export", "finalize", "resolve_workers", "EXIT_INTERRUPTED"]

EXIT_INTERRUPTED = 130


def resolve_workers(workers: str, threads: int) -> tuple[Optional[int], int]:
    """``--workers N`` (N ≥ 1) or ``auto`` (None: measured later); threads default to cores / workers."""
    if workers == "auto":
        if threads < 0:
            raise UserError(f"--threads {threads} must be >= 0", "use 0 for cores / workers")
        return None, threads
    try:
        count = int(workers)
    except ValueError:
        raise UserError(f"--workers {workers} is not a number", "use --workers N (N >= 1) or --workers auto") from None
    if count < 1:
        raise UserError(f"--workers {count} must be at least 1", "use --workers 1 or more, or --workers auto")
    if threads < 0:
        raise UserError(f"--threads {threads} must be >= 0", "use 0 for cores / workers")
    cores = os.cpu_count() or 1
    return count, threads or max(1, cores // count)


def _validate_trials(spec: SweepSpec) -> dict[str, Any]:
    """Compose every (setup, width) config once so a bad override or width fails before any training."""
    from .data import load_corpus
    from .studies import study_keys
    from .sweep import setup_configs, trial_config

    checked: set[str] = set()
    for key in study_keys(spec):
        cfg = trial_config(spec, key, key.search.grid()[0])
        tag = repr((cfg.data, cfg.train.seq_len))
        if tag not in checked:
            load_corpus(cfg.data, cfg.train.seq_len)
            checked.add(tag)
    return setup_configs(spec)


def precheck(spec: SweepSpec, steps: int = 3) -> dict[str, list[str]]:
    """``coord_check: true`` in a spec: a short coordinate check of every setup across the spec's widths."""
    from .config import compose
    from .coordcheck import coord_check
    from .coordcheck_run import judge
    from .data import load_corpus

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


def finalize(spec: SweepSpec, run_dir: Path, storage_url: Optional[str], prefix: str) -> dict[str, Any]:
    """Storage → trials.csv, curves.csv → summary.json → plots. Returns the summary."""
    from .report import draw, write_summary, write_tables
    from .results import collect
    from .studies import open_storage

    trials, curves = collect(spec, open_storage(storage_url, run_dir), prefix)
    write_tables(run_dir, trials, curves)
    if trials.empty:
        return {"setups": {}, "keys": {}}
    summary = write_summary(run_dir, trials)
    draw([run_dir])
    return summary


def run_sweep_command(spec_name: str, overrides: list[str], out: Optional[Path], storage: Optional[str],
                      study: Optional[str], workers_text: str, threads: int, dry_run: bool, heartbeat: int = 10) -> int:
    from rich.console import Console
    from rich.live import Live

    from .display import SweepDisplay, summary_table
    from .sweep import SweepOptions, run_sweep

    console = Console(width=None if sys.stdout.isatty() else 140)
    spec = load_spec(spec_name, overrides)
    workers, threads = resolve_workers(workers_text, threads)
    configs = _validate_trials(spec)
    if workers is None:
        from .threads import choose_layout

        workers, threads, message = choose_layout(spec)
        console.print(f"--workers auto: {message}")
    if dry_run:
        from .dryrun import dry_run_table

        console.print(dry_run_table(spec, workers, threads))
        return 0
    run_dir = out or Path("runs") / spec.name
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out {run_dir} is an existing file", "give a directory path")
    record = {"kind": "sweep", "spec": {k: v for k, v in spec.as_dict().items() if k != "batch_trials"},
              "setups": configs}
    fingerprint = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()[:16]
    if heartbeat < 1:
        raise UserError(f"--heartbeat {heartbeat} must be at least 1 second", "e.g. --heartbeat 10")
    opts = SweepOptions(run_dir=run_dir, storage=storage, prefix=study or spec.name, workers=workers, threads=threads,
                        heartbeat=heartbeat, record={"fingerprint": fingerprint, **record})
    if storage is not None:
        from .studies import open_storage

        open_storage(storage, run_dir, heartbeat)
    run_dir.mkdir(parents=True, exist_ok=True)
    claim_run_dir(run_dir, fingerprint, dump_yaml({"fingerprint": fingerprint, **record}))
    if spec.coord_check:
        for label, unstable in precheck(spec).items():
            if unstable:
                console.print(f"[bold red]warning:[/] coord check of setup '{label}': not stable: {', '.join(unstable)} "
                              "— its optimum may not transfer (see `mutransfer coord-check`)")
            else:
                console.print(f"coord check of setup '{label}': every module stable")
    console.print(f"sweep [bold]{spec.name}[/]: {len(spec.setups)} setups × {len(spec.widths)} widths × "
                  f"{len(spec.seeds)} seeds · {workers} worker(s) × {threads} thread(s) · batch_trials={spec.batch_trials} · "
                  f"{run_dir}")
    display = SweepDisplay()
    interrupted = False
    try:
        with Live(display, console=console, refresh_per_second=2, transient=False):
            run_sweep(spec, opts, on_progress=display.update)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted:[/] running trials are marked failed and re-run on resume")
    summary = finalize(spec, run_dir, storage, opts.prefix)
    if summary["setups"]:
        console.print(summary_table(summary))
    console.print(f"run directory: {run_dir} (trials.csv, curves.csv, summary.json, transfer.png, lr_drift.png)")
    return EXIT_INTERRUPTED if interrupted else 0


def run_export(storage_url: str, prefix: str, out: Path) -> dict[str, Any]:
    """A run directory (config.yaml, tables, summary, plots) rebuilt from a storage alone."""
    import optuna

    from .spec import spec_from_dict
    from .studies import RECORD_ATTR, open_storage, prefixed_studies

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is an existing file", "give a directory path")
    storage = open_storage(storage_url, out if out.is_dir() else Path("."))
    names = prefixed_studies(storage, prefix)
    if not names:
        raise UserError(f"no studies named '{prefix}.*' in {storage_url}", "check --study (the sweep's study prefix)")
    record = optuna.load_study(study_name=names[0], storage=storage).user_attrs.get(RECORD_ATTR)
    if not isinstance(record, dict):
        raise UserError(f"study {names[0]} was not written by `mutransfer sweep`", "export a mutransfer sweep")
    spec = spec_from_dict(record["spec"])
    out.mkdir(parents=True, exist_ok=True)
    claim_run_dir(out, record["fingerprint"], dump_yaml(record))
    return finalize(spec, out, storage_url, prefix)
