"""The ``mutransfer`` command line: the Typer signatures only. Each command's work lives in
``mutransfer/commands/<command>.py``; those modules import torch, Hydra, Optuna and matplotlib when they
run, so ``--help`` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, List, Optional, TypeVar

import typer
from typer.core import TyperCommand

from . import defaults
from .defaults import option_text
from .errors import EXIT_USAGE, NO_SPACE, UserError, write_failure

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Tune a GPT's learning rate at small widths and transfer it to large ones (muP, Muon, Optuna).",
)

SOURCE = typer.Option(None, "--from", help="Sweep run directory (default: the latest in runs/).")
OVERRIDES = typer.Argument(None, help="Hydra overrides, e.g. model.width=256 optimizer=adamw parametrization=sp")
NPROC = typer.Option(None, "--nproc", help="Train on N ranks on this machine (torch.distributed: gloo on CPU, NCCL "
                     "on CUDA; train.parallel=ddp|fsdp); torchrun can start the ranks instead.")
SETUP = typer.Option(None, "--setup", help="Setup label (default: the best one that transfers).")
BATCH_SIZE = typer.Option(None, "--batch-size", help="Target batch size in sequences (default: the swept base "
                          "one); a sweep over batch_sizes measures how η* moves with it.")
BATCH_TOLERANCE = typer.Option(option_text(defaults.BATCH_TOLERANCE), "--batch-tolerance",
                               help="The critical batch: the largest batch whose loss "
                               "is within this fraction of the best batch's (a sweep across batch sizes).")
EFFECT_MARGIN = typer.Option(option_text(defaults.EFFECT_MARGIN), "--effect-margin",
                             help="Nats: a tuned constant (a spec's constants) matters when its gain over the "
                             "shipped value exceeds this beyond the seeds' noise.")
TOKENS = typer.Option(None, "--tokens", help="Target token budget (batch × steps × seq_len; default: the swept "
                      "one); the steps follow from it. Give --tokens or --steps.")
PARTIAL = typer.Option(False, "--partial", help="Answer from an unfinished sweep (refused otherwise); every output is "
                       "marked partial.")
STORAGE_ENV = "MUTRANSFER_STORAGE"
"""The environment variable ``--storage`` falls back to, so a database password need not sit in shell history."""
T = TypeVar("T")


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"mutransfer {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print mutransfer's version and exit.")) -> None:
    """Tune a GPT's learning rate at small widths and transfer it to large ones (muP, Muon, Optuna)."""


def _guarded(fn: Callable[[], T]) -> T:
    """Run a command body, after the modules ``MUTRANSFER_PLUGINS`` names have registered their entries; a
    UserError (or a write that found the disk full) becomes one line on stderr and exit code 2, a non-zero int the
    exit."""
    from .registry.plugins import load_plugins

    try:
        load_plugins()
        result = fn()
    except UserError as exc:
        typer.echo(f"error: {exc.one_line()}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as exc:
        if exc.errno not in NO_SPACE:
            raise
        typer.echo(f"error: {write_failure(exc).one_line()}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if isinstance(result, int) and not isinstance(result, bool) and result:
        raise typer.Exit(result)
    return result


@app.command()
def show(
    overrides: Optional[List[str]] = OVERRIDES,
    print_config: bool = typer.Option(False, "--config", help="Print the resolved config as YAML instead."),
) -> None:
    """Show every parameter's role, shape, init, forward multiplier, learning rate and update rule."""
    from .commands import show as command

    _guarded(lambda: command.run(overrides or [], print_config))


@app.command()
def train(
    overrides: Optional[List[str]] = OVERRIDES,
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default runs/train-<time>)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Train exactly this saved config or transfer file "
                                          "(overrides: plain key=value)."),
    nproc: Optional[str] = NPROC,
) -> None:
    """Train one model and write config.yaml, metrics.csv and result.json into a run directory."""
    from .commands import train as command
    from .commands.common import rank_count

    _guarded(lambda: command.run(overrides or [], out, config, rank_count(nproc)))


class _SweepCommand(TyperCommand):
    """``sweep --help`` names every shipped spec, read from ``sweeps/`` when the help is shown (not at import)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from .sweep.spec.sweep_spec import shipped_specs

        for param in self.params:
            if param.name == "spec":
                param.help = f"Sweep spec: a YAML path or a shipped name ({', '.join(shipped_specs())})."
        super().format_help(ctx, formatter)


LOG = typer.Option(None, "--log", help="Log each trial as a run to a tracker: mlflow or wandb (the extra "
                   "mutransfer[mlflow] or mutransfer[wandb]); a spec's log: section sets its URI or project.")


@app.command(cls=_SweepCommand)
def sweep(
    spec: Optional[str] = typer.Argument(None, help="Sweep spec: a YAML path or a shipped name."),
    overrides: Optional[List[str]] = typer.Argument(None, help="Spec keys (widths=[64,128]) or config overrides."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default runs/<spec name>)."),
    storage: Optional[str] = typer.Option(None, "--storage", envvar=STORAGE_ENV,
                                          help="Optuna storage URL (default: a journal file in the run directory; "
                                          "postgresql://USER:PASS@HOST/DB for several machines; or set "
                                          "MUTRANSFER_STORAGE)."),
    study: Optional[str] = typer.Option(None, "--study", help="Prefix of every study name (default: the spec name)."),
    workers: str = typer.Option("1", "--workers", help="Local worker processes, or 'auto' (measure workers × threads "
                                "layouts on this machine and use the fastest)."),
    threads: int = typer.Option(0, "--threads", help="Torch threads per worker (0: cores / workers)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and a measured time estimate; train nothing."),
    heartbeat: int = typer.Option(10, "--heartbeat", help="Database storages: seconds between worker heartbeats "
                                  "(a trial silent for 3 heartbeats is retried by another worker)."),
    batch_tolerance: str = BATCH_TOLERANCE,
    effect_margin: str = EFFECT_MARGIN,
    retry_failed: bool = typer.Option(False, "--retry-failed", help="On resume, train the failed trials' points "
                                      "again (without it a failed point stays failed)."),
    log: Optional[str] = LOG,
    level: str = typer.Option(option_text(defaults.INTERVAL_LEVEL), "--level", help="Percent of every interval the "
                              "tables and their notes print: 95, or 90 (the slope's 90 % interval is the one the "
                              "verdict reads)."),
) -> None:
    """Run an Optuna learning-rate sweep at several widths; write trials.csv, curves.csv, summary.json, plots."""
    from .commands import sweep as command

    _guarded(lambda: command.run(spec, overrides or [], out, storage, study, workers, threads, dry_run, heartbeat,
                                 batch_tolerance, effect_margin, retry_failed, log, level))


@app.command()
def export(
    storage: str = typer.Option(..., "--storage", envvar=STORAGE_ENV,
                                help="The sweep's Optuna storage URL (or journal file path; or set "
                                "MUTRANSFER_STORAGE)."),
    study: str = typer.Option(..., "--study", help="The sweep's study prefix (its --study, default the spec name)."),
    out: Path = typer.Option(..., "--out", help="Run directory to write."),
) -> None:
    """Write a sweep's run directory (config.yaml, trials.csv, curves.csv, summary.json, plots) from its storage."""
    from .commands import export as command

    typer.echo(_guarded(lambda: command.run(storage, study, out)))


@app.command("import")
def import_(
    source: Optional[Path] = typer.Argument(None, help="The table: CSV/TSV (also .gz), JSON lines or Parquet; "
                                            "or none with --storage and --study."),
    out: Path = typer.Option(..., "--out", help="Run directory to write (never a sweep's)."),
    lr: Optional[str] = typer.Option(None, "--lr", help="The column holding each run's learning rate (an experiment "
                                     "a sweep logged: lr)."),
    loss: Optional[str] = typer.Option(None, "--loss", help="The column holding each run's final loss (e.g. "
                                       "'val/loss'; an experiment a sweep logged: loss)."),
    axis: List[str] = typer.Option([], "--axis", help="NAME[=COLUMN], repeatable: an axis of the analysis (width, "
                                   "depth, steps, batch, tokens or any name, e.g. params=n_params)."),
    seed: Optional[str] = typer.Option(None, "--seed", help="The column telling seeds apart (none: one run per "
                                       "point and LR, noise from the fits' residuals)."),
    setup: Optional[str] = typer.Option(None, "--setup", help="The column naming each run's setup (e.g. the "
                                        "optimizer)."),
    status: Optional[str] = typer.Option(None, "--status", help="The column with each run's state (finished, "
                                         "failed, diverged, pruned …)."),
    where: List[str] = typer.Option([], "--where", help="\"COLUMN OP VALUE\", repeatable: keep only these rows."),
    diverged_above: Optional[str] = typer.Option(None, "--diverged-above", help="A loss above this counts as "
                                                 "diverged (a non-finite one always does)."),
    duplicates: str = typer.Option("refuse", "--duplicates", help="Rows with a loss repeating a point and LR "
                                   "without a seed: refuse, mean or first (a failed run is never a duplicate)."),
    step: Optional[str] = typer.Option(None, "--step", help="Bin the LRs on a log2 grid this many octaves apart "
                                       "(default: the table's own LRs, the step inferred)."),
    lr_range: Optional[str] = typer.Option(None, "--lr-range", help="LO,HI: the LRs the search could reach "
                                           "(default: the table's own range)."),
    storage: Optional[str] = typer.Option(None, "--storage", help="An Optuna storage (journal file or database "
                                          "URL) to import a study from."),
    study: Optional[str] = typer.Option(None, "--study", help="The Optuna study's name (with --storage)."),
    force: bool = typer.Option(False, "--force", help="Replace a different import already in --out."),
    mlflow: Optional[str] = typer.Option(None, "--mlflow", help="An MLflow tracking URI to import an experiment's "
                                         "runs from (with --experiment)."),
    experiment: Optional[str] = typer.Option(None, "--experiment", help="The MLflow experiment's name (with "
                                             "--mlflow)."),
    wandb: Optional[Path] = typer.Option(None, "--wandb", help="A wandb/ folder of runs written offline "
                                         "(WANDB_MODE=offline) to import."),
) -> None:
    """Turn a table of finished runs (W&B/MLflow exports, an Optuna study, an MLflow experiment, a paper's table)
    into a run directory: trials.csv, config.yaml, summary.json and the figures, on any numeric axes."""
    from .commands import import_runs as command

    _guarded(lambda: command.run(source, out, lr, loss, axis, seed, setup, status, where, diverged_above,
                                 duplicates, step, lr_range, storage, study, force, mlflow, experiment, wandb))


@app.command()
def plot(
    run_dirs: List[Path] = typer.Argument(..., help="One or more sweep run directories."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default: the first run directory)."),
    batch_tolerance: str = BATCH_TOLERANCE,
) -> None:
    """Draw transfer.png, lr_drift.png and curves.png from a sweep's CSVs (several runs: side by side)."""
    from .commands import plot as command

    for path in _guarded(lambda: command.run(run_dirs, out, batch_tolerance)):
        typer.echo(f"wrote {path}")


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="Sweep run directory A (e.g. the baseline)."),
    run_b: Optional[Path] = typer.Argument(None, help="Sweep run directory B (e.g. the run with your change)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default: RUN_B)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when some setup's verdict is 'moved'."),
    tolerance: str = typer.Option(option_text(defaults.COMPARE_TOLERANCE), "--tolerance",
                                  help="Octaves: a pooled shift whose 90 % interval lies "
                                  "inside ±this is 'same'."),
    partial: bool = PARTIAL,
) -> None:
    """Did a change move the optimum? The pooled shift B − A with its interval, per-width differences (Holm),
    same / moved / inconclusive; overlaid curves and compare.md for a PR."""
    from .commands import compare as command

    _guarded(lambda: command.run(run_a, run_b, out, strict, tolerance, partial))


@app.command()
def backtest(
    run_dir: Path = typer.Argument(..., help="A sweep's or an import's run directory."),
    setup: Optional[str] = typer.Option(None, "--setup", help="Only this setup (default: every setup)."),
) -> None:
    """How far to trust the law when it extrapolates: refit without each axis's largest value (three or more
    values) and report the miss at the points left out, whether the predictive interval held them, and the loss
    given up; the figures go into summary.json."""
    from .commands import backtest as command

    _guarded(lambda: command.run(run_dir, setup))


@app.command()
def transfer(
    width: Optional[int] = typer.Option(None, "--width", help="Target width (a spelling of --at width=N)."),
    source: Optional[Path] = SOURCE,
    setup: Optional[str] = SETUP,
    out: Optional[Path] = typer.Option(None, "--out", help="Output file (default RUN_DIR/transfer_w<N>.yaml)."),
    fmt: str = typer.Option("yaml", "--format", help="yaml or json."),
    correct_drift: bool = typer.Option(False, "--correct-drift", help="Apply the fitted drift LR* ∝ width^slope."),
    tolerance: str = typer.Option(option_text(defaults.TRANSFER_TOLERANCE), "--tolerance",
                                  help="Octaves: warn when the predicted range at N is wider."),
    depth: Optional[str] = typer.Option(None, "--depth", help="Target depth (number of blocks; default: the swept "
                                        "one): the table's depth rule moves every in-block LR."),
    steps: Optional[str] = typer.Option(None, "--steps", help="Target training horizon in steps (default: the "
                                        "swept one); a sweep over steps measures how η* moves with it."),
    decay_rule: Optional[str] = typer.Option(None, "--decay-rule", help="Transfer a setup whose searched weight "
                                             "decay used this rule (e.g. independent; default: the one whose decay "
                                             "transfers)."),
    batch_size: Optional[str] = BATCH_SIZE,
    tokens: Optional[str] = TOKENS,
    batch_tolerance: str = BATCH_TOLERANCE,
    partial: bool = PARTIAL,
    at: List[str] = typer.Option([], "--at", help="AXIS=VALUE, repeatable: the target on any axis (an import's too, "
                                 "e.g. --at params=7e9 --at tokens=2e12)."),
) -> None:
    """Write the config for width N (and depth L, batch B, horizon S or budget D): η* with its predicted range,
    the searched weight decay at N with its range, and every parameter's init std, multiplier, LR and decay.
    From an imported table: η* with its range at the target on its own axes."""
    from .commands import transfer as command

    _guarded(lambda: command.run(width, source, setup, out, fmt, correct_drift, tolerance, depth, steps, decay_rule,
                                 batch_size, tokens, batch_tolerance, partial, at))


@app.command()
def verify(
    width: str = typer.Option(..., "--width", help="Target width(s), comma-separated (e.g. 512 or 256,512)."),
    source: Optional[Path] = SOURCE,
    setup: Optional[str] = typer.Option(None, "--setup", help="Setup label(s), comma-separated, or 'all' (default: "
                                        "the one transfer chooses)."),
    span: str = typer.Option(option_text(defaults.VERIFY_SPAN), "--span",
                             help="Octaves each side of the predicted η* (the grid grows past an "
                             "edge that holds the optimum)."),
    step: str = typer.Option(option_text(defaults.VERIFY_STEP), "--step", help="Grid spacing in octaves."),
    tolerance: str = typer.Option(option_text(defaults.VERIFY_TOLERANCE), "--tolerance",
                                  help="Octaves of |measured − predicted| log2 η* that pass."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when a target's error exceeds --tolerance."),
    correct_drift: bool = typer.Option(False, "--correct-drift", help="Verify the drift-corrected prediction."),
    factors: Optional[str] = typer.Option(None, "--factors", help="The quick check instead: train only η*·f for each "
                                          "factor (e.g. 0.5,1,2) and say whether f = 1 wins."),
    storage: Optional[str] = typer.Option(None, "--storage", envvar=STORAGE_ENV,
                                          help="Optuna storage URL (default: the sweep's journal file; or set "
                                          "MUTRANSFER_STORAGE)."),
    workers: str = typer.Option("1", "--workers", help="Local worker processes, or 'auto'."),
    threads: int = typer.Option(0, "--threads", help="Torch threads per worker (0: cores / workers)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the targets and a measured time estimate; train "
                                 "nothing."),
    depth: Optional[str] = typer.Option(None, "--depth", help="Target depth, as transfer takes it."),
    steps: Optional[str] = typer.Option(None, "--steps", help="Target training horizon, as transfer takes it."),
    batch_size: Optional[str] = typer.Option(None, "--batch-size", help="Target batch size, as transfer takes it."),
    tokens: Optional[str] = typer.Option(None, "--tokens", help="Target token budget, as transfer takes it."),
    overrides: Optional[List[str]] = typer.Argument(None, help="Plain key=value overrides, e.g. train.device=cpu"),
    partial: bool = PARTIAL,
    log: Optional[str] = LOG,
    nproc: Optional[str] = typer.Option(None, "--nproc", help="Train each trial on N ranks (torch.distributed; "
                                        "train.parallel=ddp|fsdp)."),
) -> None:
    """Measure LR* at width N (depth L, batch B, horizon S or budget D) around the predicted η*; report the
    prediction's error and the loss regret."""
    from .commands import verify as command
    from .commands.common import rank_count

    _guarded(lambda: command.run(width, source, setup, span, step, tolerance, strict, correct_drift, factors, storage,
                                 workers, threads, dry_run, overrides or [], depth, steps, batch_size, tokens,
                                 partial, log, rank_count(nproc)))


@app.command("coord-check")
def coord_check(
    overrides: Optional[List[str]] = OVERRIDES,
    widths: Optional[str] = typer.Option(None, "--widths", help="Comma-separated widths (default 32,64,128,256)."),
    depths: Optional[str] = typer.Option(None, "--depths", help="Comma-separated depths, measured at model.width "
                                         "instead of across widths (e.g. 2,4,8,16)."),
    steps: int = typer.Option(5, "--steps", help="Training steps after the initial measurement."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Base LR η (default: the optimizer's default)."),
    seeds: int = typer.Option(2, "--seeds", help="Seeds per width (the slope bands widen by their spread)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default runs/coord-check-<time>)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any module is not stable."),
) -> None:
    """Measure forward, update and dependency stability per module across widths (or depths), and judge each."""
    from .commands import coord_check as command

    _guarded(lambda: command.run(overrides or [], widths, steps, lr, seeds, out, strict, depths))


def main() -> None:
    app()
