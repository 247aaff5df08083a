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

SOURCE = typer.Option(None, "--from", help="Sweep run directory (default: the latest in runs/).")
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

        from .build import model_plan
        from .config import compose, to_yaml
        from .data import vocab_size

        cfg = compose(overrides or [])
        console = Console(width=None if sys.stdout.isatty() else 160)
        if print_config:
            console.print(to_yaml(cfg), markup=False, highlight=False)
            return
        plan = model_plan(cfg, vocab_size(cfg.data))
        title = (f"{plan.preset} + {plan.optimizer_name} at width {plan.width} (base {plan.base_width}, "
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
    config: Optional[Path] = typer.Option(None, "--config", help="Train exactly this saved config or transfer file "
                                          "(overrides: plain key=value)."),
) -> None:
    """Train one model and write config.yaml, metrics.csv and result.json into a run directory."""

    def body() -> None:
        from .config import compose, load_config_file, to_dict, to_yaml
        from .data import load_corpus
        from .runs import CONFIG_FILE, METRICS_COLUMNS, METRICS_FILE, RESULT_FILE, atomic_write_text, new_run_dir, \
            write_csv, write_json

        if config is not None:
            cfg = load_config_file(config, overrides or [])
            _warn_horizon(load_config_file(config), cfg)
        else:
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


def _warn_horizon(saved: Any, cfg: Any) -> None:
    changed = [f"train.{k}: {getattr(saved.train, k)} → {getattr(cfg.train, k)}" for k in ("steps", "batch_size", "seq_len")
               if getattr(saved.train, k) != getattr(cfg.train, k)]
    if changed:
        typer.echo(f"warning: {', '.join(changed)}; learning rates are not known to transfer across training horizon or "
                   "batch size without further evidence", err=True)


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
    workers: str = typer.Option("1", "--workers", help="Local worker processes, or 'auto' (measure workers × threads "
                                "layouts on this machine and use the fastest)."),
    threads: int = typer.Option(0, "--threads", help="Torch threads per worker (0: cores / workers)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and a measured time estimate; train nothing."),
    heartbeat: int = typer.Option(10, "--heartbeat", help="Database storages: seconds between worker heartbeats "
                                  "(a trial silent for 3 heartbeats is retried by another worker)."),
) -> None:
    """Run an Optuna learning-rate sweep at several widths; write trials.csv, curves.csv, summary.json, plots."""

    def body() -> None:
        from .orchestrate import run_sweep_command

        name, words = _split_spec(spec, overrides)
        code = run_sweep_command(name, words, out, storage, study, workers, threads, dry_run, heartbeat)
        if code:
            raise typer.Exit(code)

    _guarded(body)


@app.command()
def export(
    storage: str = typer.Option(..., "--storage", help="The sweep's Optuna storage URL (or journal file path)."),
    study: str = typer.Option(..., "--study", help="The sweep's study prefix (its --study, default the spec name)."),
    out: Path = typer.Option(..., "--out", help="Run directory to write."),
) -> None:
    """Write a sweep's run directory (config.yaml, trials.csv, curves.csv, summary.json, plots) from its storage."""

    def body() -> None:
        from .orchestrate import run_export

        summary = run_export(storage, study, out)
        typer.echo(f"exported {sum(len(v['widths']) for v in summary['setups'].values())} optima of "
                   f"{len(summary['setups'])} setups to {out}")

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


@app.command()
def transfer(
    width: int = typer.Option(..., "--width", help="Target width."),
    source: Optional[Path] = SOURCE,
    setup: Optional[str] = typer.Option(None, "--setup", help="Setup label (default: the best one that transfers)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output file (default RUN_DIR/transfer_w<N>.yaml)."),
    fmt: str = typer.Option("yaml", "--format", help="yaml or json."),
    correct_drift: bool = typer.Option(False, "--correct-drift", help="Apply the fitted drift LR* ∝ width^slope."),
) -> None:
    """Write the config for width N: η* from the sweep and every parameter's init std, multiplier and LR."""

    def body() -> None:
        from rich.console import Console
        from rich.table import Table

        from .transfer import latest_run, make_transfer, write_transfer

        if fmt not in ("yaml", "json"):
            raise UserError(f"--format {fmt} is not supported", "use yaml or json")
        run_dir = source or latest_run()
        result = make_transfer(run_dir, width, setup, correct_drift)
        path = out or run_dir / f"transfer_w{width}.{'json' if fmt == 'json' else 'yaml'}"
        write_transfer(result, path, fmt)
        doc = result.document
        console = Console(width=None if sys.stdout.isatty() else 140)
        src = doc["source"]
        table = Table(title=f"{src['setup']} at width {width}: η* = 2^{doc['log2_lr']:.2f} = {doc['lr']:.4g}")
        for column in ("parameter", "role", "shape", "init std", "multiplier", "lr", "update"):
            table.add_column(column, justify="left" if column in ("parameter", "role", "update") else "right")
        for row in doc["param_groups"]:
            init = f"const {row['init_mean']:.4g}" if row["role"] == "gain" else f"{row['init_std']:.4g}"
            table.add_row(row["name"], row["role"], "×".join(map(str, row["shape"])), init,
                          f"{row['multiplier']:.4g}", f"{row['lr']:.4g}", row["update"])
        console.print(table)
        ci = src["slope_ci"]
        console.print(f"from {src['run_dir']} (widths {src['swept_widths']}): verdict [bold]{src['verdict']}[/], "
                      f"slope {src['slope']:+.2f} octaves/doubling" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "") +
                      f"; implied error at width {width}: {doc['implied_error_octaves']:.2f} octaves"
                      + (" (drift corrected)" if correct_drift else ""))
        for warning in result.warnings:
            console.print(f"[bold red]warning:[/] {warning}")
        console.print(f"wrote {path}")

    _guarded(body)


@app.command()
def verify(
    width: int = typer.Option(..., "--width", help="Width to verify at (e.g. 4× the largest swept width)."),
    source: Optional[Path] = SOURCE,
    factors: str = typer.Option("0.5,1,2", "--factors", help="Multiples of the transferred η* to train."),
    setup: Optional[str] = typer.Option(None, "--setup", help="Setup label (default as in transfer)."),
    overrides: Optional[List[str]] = typer.Argument(None, help="Plain key=value overrides, e.g. train.device=cpu"),
) -> None:
    """Train width N at η*·factor for each factor and report whether the transferred η* wins."""

    def body() -> None:
        from .report import draw
        from .transfer import latest_run
        from .verify import parse_factors
        from .verify import verify as run_verify

        run_dir = source or latest_run()
        parsed = parse_factors(factors)
        result = run_verify(run_dir, width, parsed, setup, overrides or [],
                            on_trial=lambda f: typer.echo(f"training width {width} at {f:g} × η*", err=True))
        for row in result["rows"].itertuples():
            typer.echo(f"factor {row.factor:>6g}  log2 lr {row.log2_lr:7.2f}  val_loss {row.val_loss:.4f}  {row.status}")
        verdict = "wins" if result["middle_wins"] else "does not win"
        typer.echo(f"η* × {result['middle']:g} {verdict} at width {width} (margin {result['margin']:+.4f} nats over "
                   f"the best other factor); appended to {run_dir / 'verify.csv'}")
        draw([run_dir])

    _guarded(body)


@app.command("coord-check")
def coord_check(
    overrides: Optional[List[str]] = OVERRIDES,
    widths: str = typer.Option("32,64,128,256", "--widths", help="Comma-separated widths."),
    steps: int = typer.Option(5, "--steps", help="Training steps after the initial measurement."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Base LR η (default: the optimizer's default)."),
    seeds: int = typer.Option(2, "--seeds", help="Seeds per width (the slope bands widen by their spread)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default runs/coord-check-<time>)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any module is not stable."),
) -> None:
    """Measure forward, update and dependency stability per module across widths, and judge each module."""

    def body() -> None:
        from .coordcheck_run import run_coord_check

        code = run_coord_check(overrides or [], widths, steps, lr, seeds, out, strict)
        if code:
            raise typer.Exit(code)

    _guarded(body)


def main() -> None:
    app()
