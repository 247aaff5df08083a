"""``mutransfer verify``: measure LR* at the target width(s) around the predicted η*, report the prediction's
error and loss regret, write verify.csv / verify.json / verify.png into the sweep's run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..analysis.cells import format_bound, format_interval
from ..analysis.result import measured_point

if TYPE_CHECKING:  # the command imports these late (start-up: `mutransfer --help` loads no pandas or torch)
    import pandas as pd
    from rich.console import Console, RenderableType
    from rich.table import Table

    from ..sweep.store.completion import SweepStatus
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.spec.sweep_spec import SweepSpec
    from ..tracking.session import SweepTracking
    from ..tracking.spec import TrackerSpec
    from ..transfer.verify import Verification

__all__ = ["run", "EXIT_MISSED"]

EXIT_MISSED = 1
"""``--strict``: a target's |error| exceeded ``--tolerance`` (or its optimum was not measured)."""


def run(width_text: str, source: Optional[Path], setup_text: Optional[str], span_text: str, step_text: str,
        tolerance_text: str, strict: bool, correct_drift: bool, factors_text: Optional[str], storage: Optional[str],
        workers_text: str, threads: int, dry_run: bool, overrides: Sequence[str], depth_text: Optional[str] = None,
        steps_text: Optional[str] = None, batch_text: Optional[str] = None, tokens_text: Optional[str] = None,
        partial: bool = False, log: Optional[str] = None, nproc: Optional[int] = None) -> int:
    from ..errors import UserError
    from ..transfer.verify import parse_factors, parse_widths
    from .common import positive_integer, positive_number
    from .run_source import run_source
    from .workers import resolve_workers

    widths = parse_widths(width_text)
    span = positive_number("--span", span_text, "1.5")
    step = positive_number("--step", step_text, "0.5")
    tolerance = positive_number("--tolerance", tolerance_text, "0.5")
    factors = parse_factors(factors_text) if factors_text is not None else None
    depth = positive_integer("--depth", depth_text, "8") if depth_text is not None else None
    steps = positive_integer("--steps", steps_text, "600") if steps_text is not None else None
    batch = positive_integer("--batch-size", batch_text, "32") if batch_text is not None else None
    tokens = positive_integer("--tokens", tokens_text, "4194304") if tokens_text is not None else None
    workers, threads = resolve_workers(workers_text, threads, nproc or 1)
    bad = next((o for o in overrides if "=" not in o or o.startswith("-")), None)
    if bad is not None:
        raise UserError(f"override '{bad}' is not key=value", "e.g. mutransfer verify --width 512 train.device=cpu")
    run_dir = run_source(source)
    from ..tracking.session import recorded_tracker
    from ..tracking.spec import tracker_spec

    tracker = tracker_spec(log, recorded_tracker(run_dir, log.strip().lower()) if log else None)

    from ..analysis.run_files import declared_axes
    from ..transfer.verify import Verification, VerifyRequest, parse_setups
    from .common import console, unfinished_run
    from .sweep_checks import validate_trials

    if declared_axes(run_dir):
        raise UserError(f"{run_dir} is an imported table: verify needs a trainer to run the target, and an import "
                        "holds no model or training", "train the target with your own trainer at the η* that "
                        "`mutransfer transfer --from RUN_DIR --at AXIS=VALUE` gives, or sweep through a spec's "
                        "trainer section (docs/your-trainer.md)")
    unfinished = unfinished_run(run_dir, partial, "verify")
    request = VerifyRequest(widths, parse_setups(setup_text, run_dir), span, step, tolerance, correct_drift, factors,
                            tuple(overrides), depth, steps, batch, tokens)
    verification = Verification(run_dir, request)
    from ..sweep.plan.sweep_plan import SweepPlan

    specs = _on_ranks(verification.specs(), nproc)
    plans = [SweepPlan.of(spec) for spec in specs]
    warned: set[str] = set()
    configs = [_composed(spec) if dry_run else validate_trials(spec, warned) for spec in specs]
    _warn_conditions(verification, configs)
    screen = console()
    if workers is None:
        from ..sweep.run.layout import choose_layout

        workers, threads, message = choose_layout(plans[-1])
        screen.print(f"--workers auto: {message}")
    screen.print(_targets_table(verification))
    screen.print(_outputs_line(verification, dry_run), markup=False, highlight=False, soft_wrap=True)
    if dry_run:
        for plan, trees in zip(plans, configs):
            screen.print(_dry_run_estimate(verification, plan, trees, workers, threads))
        return 0
    tracker = tracker.named(verification.prefix) if tracker is not None and not tracker.experiment else tracker
    tracking, rows, interrupted = _execute(screen, verification, plans, storage, workers, threads, tracker)
    document = _finish(screen, verification, rows, unfinished)
    if tracking is not None:
        from ..files import VERIFY_FILE, VERIFY_PLOT, VERIFY_REPORT
        from ..tracking.answer import verify_answer

        run_dir = verification.run_dir
        tracking.answer(verify_answer(document, [run_dir / name for name in (VERIFY_REPORT, VERIFY_FILE, VERIFY_PLOT)]))
        tracking.close()
    if interrupted:
        return interrupted
    return EXIT_MISSED if strict and not document["passed"] else 0


def _on_ranks(specs: list[SweepSpec], nproc: Optional[int]) -> list[SweepSpec]:
    """``--nproc N``: each target's trials on N ranks (``devices_per_trial``), the built-in trainer only."""
    if nproc is None:
        return specs
    import dataclasses

    from ..errors import UserError

    if any(spec.trainer is not None for spec in specs):
        raise UserError(f"--nproc {nproc} trains the built-in model on ranks, but this sweep ran your own command",
                        "give your command its GPUs with trainer.devices_per_trial instead")
    return [dataclasses.replace(spec, devices_per_trial=nproc) for spec in specs]


def _composed(spec: SweepSpec) -> dict[str, Any]:
    """Each setup's config at the target (a bad override fails here); the dry run leaves composing every trial and
    the corpus checks, which read the data and import torch, to the run."""
    from ..sweep.plan.trial import setup_configs

    return setup_configs(spec)


def _dry_run_estimate(verification: Verification, plan: SweepPlan, trees: dict[str, Any], workers: int,
                      threads: int) -> RenderableType:
    """The trials at one target width, priced by the sweep's finished trials (``trials.csv``; a setup's seconds
    scaled by its steps here over the sweep's); a built-in sweep whose trials recorded no time is measured on this
    machine instead."""
    from ..sweep.plan.finished import read_finished
    from ..transfer.target import read_sweep_record
    from ..transfer.verify import SHIPPED
    from .dry_run import dry_run_table, measured_estimate, measured_table

    spec = plan.spec
    swept = read_sweep_record(verification.run_dir)["setups"]

    def sweep_label(label: str) -> str:
        return label[:-len(SHIPPED)] if label.endswith(SHIPPED) else label

    steps = {label: (tree["train"].get("steps"), swept.get(sweep_label(label), {}).get("train", {}).get("steps"))
             for label, tree in trees.items()}
    horizons = {label: here / there for label, (here, there) in steps.items() if here and there}
    estimate = measured_estimate(plan, read_finished(verification.run_dir), workers, horizons, sweep_label)
    if estimate is not None:
        return measured_table(f"verify at width {spec.widths[0]}", estimate, resumed=False)
    if spec.trainer is None:
        return dry_run_table(plan, workers, threads)
    return (f"no time estimate: {verification.run_dir}'s trials.csv records no trained trial's seconds for your "
            "command's setups")


def _warn_conditions(verification: Verification, configs: Sequence[dict[str, Any]]) -> None:
    """Warn when verify's trials train at another horizon, batch, depth or data than the prediction is for (extra
    overrides such as ``train.steps=10``; ``--steps`` and ``--depth`` move the prediction with them)."""
    from ..config import config_from_dict
    from .common import condition_changes, warn_conditions

    by_setup = [{label: config_from_dict(tree) for label, tree in per_spec.items()} for per_spec in configs]
    widths = list(verification.request.widths)
    changes = [change for t in verification.targets
               for change in condition_changes(t.config, by_setup[widths.index(t.width)][t.setup])]
    warn_conditions(changes, f"the sweep in {verification.run_dir}",
                    "; verify --steps N, --tokens D, --batch-size B or --depth L verifies at another horizon, budget, "
                    "batch or depth with what the sweep measured")


def _outputs_line(verification: Verification, dry_run: bool) -> str:
    """Where verify's results go, said before any training."""
    from ..files import VERIFY_FILE, VERIFY_PLOT, VERIFY_REPORT

    files = f"{VERIFY_REPORT}, {VERIFY_FILE} and {VERIFY_PLOT} into {verification.run_dir}"
    studies = f"its trials as studies {verification.prefix}.* in the sweep's storage"
    if dry_run:
        return f"verify would write {files} and {studies} (--dry-run writes nothing)"
    return f"verify writes {files}, {studies}"


def _execute(screen: Console, verification: Verification, plans: Sequence[SweepPlan], storage: Optional[str],
             workers: int, threads: int, tracker: Optional[TrackerSpec] = None
             ) -> tuple[Optional[SweepTracking], pd.DataFrame, int]:
    """Train every target's points (resuming what the storage holds) and collect the rows; the tracker's parent
    (``--log``) and the exit code of an interruption (0 when none)."""
    import pandas as pd

    from ..sweep.interrupts import Interrupts
    from ..sweep.run.runner import run_sweep
    from ..sweep.store.storage import open_storage
    from ..sweep.store.tables import collect
    from ..sweep.run.worker import SweepOptions
    from .display import progress_view
    from .sweep import interrupt_code
    from .tracker import start_tracking

    run_dir = verification.run_dir
    opts = SweepOptions(run_dir=run_dir, storage=storage, prefix=verification.prefix, workers=workers,
                        threads=threads)
    store = open_storage(storage, run_dir)
    tracking, opts = start_tracking(tracker, plans[0], opts)
    interrupted = 0
    try:
        with Interrupts().catching():
            for plan in plans:
                display, live = progress_view(screen, plan, workers)
                with live:
                    run_sweep(plan, opts, on_progress=display.update)
    except KeyboardInterrupt as exc:
        interrupted = interrupt_code(exc)
        screen.print("[yellow]interrupted:[/] running trials are marked failed and re-run when verify runs again")
    tables = [collect(plan, store, verification.prefix)[0] for plan in plans]
    return tracking, pd.concat(tables, ignore_index=True), interrupted


def _finish(screen: Console, verification: Verification, rows: pd.DataFrame,
            unfinished: Optional[SweepStatus] = None) -> dict[str, Any]:
    """verify.csv, verify.json, verify.png, and the report on screen; each marked partial when the sweep it
    verifies is unfinished (``unfinished``: its status)."""
    from ..analysis.draw import verify_figure_of
    from ..analysis.plots import mark_partial, save
    from ..files import VERIFY_FILE, VERIFY_PLOT, VERIFY_REPORT
    from ..transfer.verify import write_outputs

    run_dir = verification.run_dir
    document = verification.report(rows)
    if unfinished is not None:
        document = {"partial": unfinished.as_dict(), **document}
    write_outputs(run_dir, rows, document)
    figure = verify_figure_of(run_dir, rows, document)
    if unfinished is not None:
        mark_partial(figure, f"PARTIAL: the sweep is {unfinished.line()}")
    save(figure, run_dir / VERIFY_PLOT)
    screen.print(_factors_table(document) if document["mode"] == "factors" else _results_table(document))
    for target in document["targets"]:
        if target.get("decay"):
            screen.print(decay_result_line(target), highlight=False)
        if target.get("constants"):
            screen.print(constants_result_line(target), highlight=False, soft_wrap=True)
    for target in document["targets"]:
        for note in [target.get("note"), *target["warnings"]]:
            if note:
                screen.print(f"[yellow]{target['setup']} at width {target['width']}:[/] {note}")
    screen.print(f"wrote {', '.join(str(run_dir / f) for f in (VERIFY_REPORT, VERIFY_FILE, VERIFY_PLOT))}"
                 + (" (PARTIAL: the sweep is unfinished)" if unfinished is not None else ""), highlight=False)
    return document


def decay_result_line(target: dict[str, Any]) -> str:
    """The weight decay measured at a target's LR optimum against the prediction: error, regret, and whether the
    best decay beat decay off there."""
    decay = target["decay"]
    unit = "log2 " if decay["log2"] else ""
    found = measured_point(target["width"], decay.get("measured"))
    measured, interval = (found.x_star, found.ci) if found is not None else (None, None)
    regret = decay.get("regret") or {}
    effect = decay.get("effect")
    return (f"{target['setup']} at width {target['width']}: weight decay {decay['key']} predicted {unit}"
            f"{decay['prediction']['log2_lr']:.2f}, measured {format_bound(measured, '.2f')} {_ci(interval, '.2f')}, "
            f"error {format_bound(decay['error'])} {_ci(decay.get('error_ci'))}, regret "
            f"{format_bound(regret.get('nats'), '+.4f')} nats; best decay − decay off "
            f"{format_bound(effect, '+.4f')} ({decay.get('decay_effect')})")


def constants_result_line(target: dict[str, Any]) -> str:
    """What the tuned constants bought at a target: the best loss with the shipped constants minus with the tuned
    ones, each at its own LR optimum on the same grid."""
    c = target["constants"]
    return (f"{target['setup']} at width {target['width']}: tuned constants ({', '.join(c['overrides'])}) best loss "
            f"{format_bound(c['tuned_best_loss'], '.4f')} against the shipped constants' "
            f"{format_bound(c['shipped_best_loss'], '.4f')}: gain {format_bound(c['gain'], '+.4f')} nats "
            f"{_ci(c['gain_ci'], '+.4f')} ({c['verdict']})")


def _ci(values: Optional[Sequence[float]], fmt: str = "+.2f") -> str:
    """An interval as verify's tables write it: ``format_interval``, ``(no interval)`` where there is none."""
    return format_interval(values, fmt, missing="(no interval)")


def _targets_table(verification: Verification) -> Table:
    from rich.table import Table

    point = "".join(f", {o.replace('model.', '').replace('train.', '').replace('=', ' ')}"
                    for o in verification.point_overrides())
    table = Table(title=f"verify {verification.sweep.name}: predicted η* at the target width(s){point}")
    for column in ("setup", "width", "predicted log2 η*", "95 % range", "trains log2 η in"):
        table.add_column(column, justify="left" if column == "setup" else "right")
    for t in verification.targets:
        points = (f"{', '.join(f'{x:.2f}' for x in t.search.anchors)}" if verification.request.factors else
                  f"[{t.search.min:.2f}, {t.search.max:.2f}] step {t.search.step:g}, and η* (every seed)")
        table.add_row(t.setup, str(t.width), f"{t.prediction.log2_lr:.2f}", _ci(t.prediction.interval), points)
    return table


def _results_table(document: dict[str, Any]) -> Table:
    from rich.table import Table

    tol = document["tolerance"]
    table = Table(title=f"measured at the target: error = measured − predicted log2 η* (verify's --tolerance {tol:g})")
    for column in ("setup", "width", "predicted", "measured", "interval", "error (octaves)", "regret (nats)",
                   "regret (%)", "result"):
        table.add_column(column, justify="left" if column in ("setup", "result") else "right")
    for t in document["targets"]:
        measured, regret = measured_point(t["width"], t["measured"]), t["regret"] or {}
        bound = "≥ " if regret.get("bound") else ""
        result = "[green]within tolerance[/]" if t["passed"] else f"[red]misses by more than {tol:g}[/]"
        if t["passed"] and t["error_ci"] and not -tol <= t["error_ci"][0] <= t["error_ci"][1] <= tol:
            result += f" (its interval reaches past ±{tol:g})"
        table.add_row(t["setup"], str(t["width"]), f"{t['predicted_log2_lr']:.2f}",
                      format_bound(measured.x_star if measured else None, ".2f"),
                      _ci(measured.ci if measured else None, ".2f"),
                      f"{format_bound(t['error'])} {_ci(t['error_ci'])}",
                      f"{bound}{format_bound(regret.get('nats'), '+.4f')} {_ci(regret.get('nats_ci'), '+.4f')}" if regret else "-",
                      f"{bound}{format_bound(regret.get('percent'))} {_ci(regret.get('percent_ci'))}" if regret else "-", result)
    table.caption = "intervals: 95 %; the error's is the measured optimum's (the prediction is the number transfer wrote)"
    return table


def _factors_table(document: dict[str, Any]) -> Table:
    from rich.table import Table

    table = Table(title="η* × factor at the target width")
    for column in ("setup", "width", "factor", "log2 η", "val_loss", "status"):
        table.add_column(column, justify="left" if column in ("setup", "status") else "right")
    for t in document["targets"]:
        for point in t["factors"]:
            table.add_row(t["setup"], str(t["width"]), f"{point['factor']:g}", f"{point['log2_lr']:.2f}",
                          format_bound(point["val_loss"], ".4f"), point["status"])
        verdict = "wins" if t["passed"] else "does not win"
        table.add_row("", "", "", "", "", f"η* × {t['middle']:g} {verdict} (margin {format_bound(t['margin'], '+.4f')} nats)")
        table.add_section()
    return table
