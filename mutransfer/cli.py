"""The ``mutransfer`` command line: parse, call one function, print with rich.

Heavy modules (torch, Hydra, Optuna, matplotlib) are imported inside the commands so ``--help`` stays fast.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, TypeVar

import typer

from .errors import EXIT_USAGE, UserError

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Tune a GPT's learning rate at small widths and transfer it to large ones (muP, Muon, Optuna).",
)

OVERRIDES = typer.Argument(None, help="Hydra overrides, e.g. model.width=256 optimizer=adamw parametrization=sp")
T = TypeVar("T")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _guarded(fn: Callable[[], T]) -> T:
    """Run a command body; a UserError becomes one line on stderr and exit code 2."""
    try:
        return fn()
    except UserError as exc:
        _fail(exc.one_line())
        raise AssertionError("unreachable") from exc


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    exponent = math.log2(abs(value))
    if abs(exponent - round(exponent)) < 1e-9 and abs(exponent) >= 3:
        return f"2^{int(round(exponent))}"
    return f"{value:.4g}"


@app.command()
def show(
    overrides: Optional[List[str]] = OVERRIDES,
    print_config: bool = typer.Option(False, "--config", help="Print the resolved config as YAML instead."),
) -> None:
    """Show every parameter's role, shape, init, forward multiplier, learning rate and update rule."""

    def body() -> None:
        from rich.console import Console
        from rich.table import Table

        from .build import gpt_plan
        from .config import compose, to_yaml

        cfg = compose(overrides or [])
        console = Console(width=None if sys.stdout.isatty() else 160)
        if print_config:
            console.print(to_yaml(cfg), markup=False, highlight=False)
            return
        plan = gpt_plan(cfg, vocab_size=256)
        title = (f"{plan.preset} + {plan.optimizer} at width {plan.width} (base {plan.base_width}, "
                 f"m={plan.ratio:g}), base lr {_fmt(plan.lr)}")
        table = Table(title=title)
        for column in ("parameter", "role", "shape", "init std", "init mean", "multiplier", "lr", "update"):
            table.add_column(column, justify="left" if column in ("parameter", "role", "update") else "right",
                             no_wrap=True)
        for row in plan.rows():
            update = row["update"]
            if row["scale_rule"]:
                update += f" ({row['scale_rule']} at {'×'.join(map(str, row['scale_shape']))})"
            if row["eps"] is not None:
                update += f" eps={row['eps']:.3g}"
            table.add_row(row["name"], row["role"], "×".join(map(str, row["shape"])), f"{row['init_std']:.4g}",
                          f"{row['init_mean']:.4g}", f"{row['multiplier']:.4g}", f"{row['lr']:.4g}", update)
        console.print(table)

    _guarded(body)


@app.command()
def train(
    overrides: Optional[List[str]] = OVERRIDES,
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default runs/train-<time>)."),
) -> None:
    """Train one model and write config.yaml, metrics.csv and result.json into a run directory."""

    def body() -> None:
        from .config import compose, to_dict, to_yaml
        from .data import load_corpus
        from .runs import CONFIG_FILE, METRICS_COLUMNS, METRICS_FILE, RESULT_FILE, atomic_write_text, new_run_dir, \
            write_csv, write_json

        cfg = compose(overrides or [])
        corpus = load_corpus(cfg.data, cfg.train.seq_len)
        run_dir = new_run_dir(out, "train")
        atomic_write_text(run_dir / CONFIG_FILE, to_yaml(cfg))
        result, plan, env = _train_with_progress(cfg, corpus)
        write_csv(run_dir / METRICS_FILE, result.curve, METRICS_COLUMNS)
        write_json(run_dir / RESULT_FILE, {**result.summary(), "evals": result.evals, "corpus": corpus.describe(),
                                           "environment": env, "config": to_dict(cfg)})
        _report_run(result, run_dir)

    _guarded(body)


def _train_with_progress(cfg: Any, corpus: Any) -> tuple[Any, Any, dict[str, Any]]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .train import environment, resolve_device, train_model

    columns = (TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=False, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("train", total=cfg.train.steps, loss="-")
        result, plan = train_model(cfg, corpus, on_step=lambda step, loss: progress.update(
            task, completed=step, loss=f"{loss:.4f}"))
    return result, plan, environment(resolve_device(cfg.train.device))


def _report_run(result: Any, run_dir: Path) -> None:
    from rich.console import Console

    console = Console()
    if result.status == "diverged":
        console.print(f"[yellow]warning:[/] {result.message}; the run stopped early (status: diverged)")
    val = "n/a" if result.val_loss is None else f"{result.val_loss:.4f}"
    console.print(f"status {result.status} · val_loss {val} · steps {result.steps} · "
                  f"{result.tokens_per_s:,.0f} tokens/s · optimizer {100 * result.optimizer_fraction:.0f}% of step time")
    console.print(f"run directory: {run_dir}")


def _split_spec(spec: Optional[str], overrides: Optional[List[str]]) -> tuple[str, list[str]]:
    """``mutransfer sweep widths=[64]`` has no spec: the first word is an override, the spec is 'default'."""
    words = list(overrides or [])
    if spec is None:
        return "default", words
    if "=" in spec:
        return "default", [spec, *words]
    return spec, words


@app.command()
def sweep(
    spec: Optional[str] = typer.Argument(None, help="Sweep spec: a YAML path or a shipped name (default, smoke, gpu)."),
    overrides: Optional[List[str]] = typer.Argument(None, help="Spec keys (widths=[64,128]) or config overrides."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default runs/<spec name>)."),
    storage: Optional[str] = typer.Option(None, "--storage", help="Optuna storage URL (default: a journal file in "
                                          "the run directory; postgresql://USER:PASS@HOST/DB for several machines)."),
    study: Optional[str] = typer.Option(None, "--study", help="Prefix of every study name (default: the spec name)."),
    workers: int = typer.Option(1, "--workers", help="Local worker processes."),
    threads: int = typer.Option(0, "--threads", help="Torch threads per worker (0: cores / workers)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and a measured time estimate; train nothing."),
) -> None:
    """Run an Optuna learning-rate sweep at several widths; write trials.csv, curves.csv, summary.json, plots."""

    def body() -> None:
        from .orchestrate import run_sweep_command

        name, words = _split_spec(spec, overrides)
        code = run_sweep_command(name, words, out, storage, study, workers, threads, dry_run)
        if code:
            raise typer.Exit(code)

    _guarded(body)


@app.command()
def plot(
    run_dirs: List[Path] = typer.Argument(..., help="One or more sweep run directories."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default: the first run directory)."),
) -> None:
    """Draw transfer.png, lr_drift.png and curves.png from a sweep's CSVs (several runs: side by side)."""

    def body() -> None:
        from .report import draw

        for path in draw(run_dirs, out):
            typer.echo(f"wrote {path}")

    _guarded(body)


def main() -> None:
    app()
