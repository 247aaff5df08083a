"""``mutransfer compare RUN_A RUN_B``: did a change move the optimum? Writes compare.json, compare.md (a table
for a pull-request comment) and compare.png; prints the same table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..analysis.cells import format_interval
from ..analysis.result import point_key
from ..defaults import COMPARE_TOLERANCE, option_text

if TYPE_CHECKING:  # the command imports these late (start-up: `mutransfer --help` loads no pandas)
    import pandas as pd
    from rich.table import Table

    from ..analysis.compare import Comparison, PointComparison, RunLine, SetupComparison
    from ..schema import Axis

__all__ = ["run", "markdown", "EXIT_MOVED"]

EXIT_MOVED = 1
"""``--strict``: some setup's verdict is ``moved``."""
WIDTH_HEADERS = ("width", "log2 LR* A", "log2 LR* B", "B − A (octaves) [95 %]", "p (Holm)", "best loss A",
                 "best loss B", "B − A (nats) [95 %]")
MAX_CHANGES = 25
READING = ("LR* is log2 of the base learning rate η at the optimum with its 95 % interval (… marks an end left open "
           "by an optimum at the grid's edge). The pooled shift is B − A averaged over the widths both runs measured, "
           "weighted by precision, its error keeping what the widths share (seeds, the bowl's asymmetry). The "
           "pooled shift and the widths form one family of tests (Holm's weighted step-down at 5 %: the pooled "
           "shift carries half the error rate, the widths share the other half). **moved**: the pooled shift's "
           "adjusted p is below 0.05 and its 90 % interval is not inside ±{tolerance:g} octave, or a width's "
           "adjusted p is below 0.05 and its 95 % interval is not inside ±{tolerance:g}. **same**: the pooled "
           "shift's 90 % interval lies inside ±{tolerance:g} (two one-sided tests at 5 %), the seeds' noise was "
           "measured and no width moved. Otherwise **inconclusive**. Best loss is the fitted minimum of the seeds' "
           "mean curve; its difference's interval comes from each seed's own fitted minimum.")


def run(run_a: Path, run_b: Optional[Path], out: Optional[Path], strict: bool,
        tolerance: str = option_text(COMPARE_TOLERANCE), partial: bool = False) -> int:
    from ..analysis.compare import compare, config_changes
    from ..analysis.compare_plot import compare_figure
    from ..analysis.plots import mark_partial, save
    from ..analysis.run_files import read_tables
    from ..errors import UserError
    from ..files import COMPARE_PLOT, COMPARE_REPORT, COMPARE_TABLE, atomic_write_text, write_json
    from .common import console, positive_number, unfinished_run

    margin = positive_number("--tolerance", tolerance, option_text(COMPARE_TOLERANCE))
    if run_b is None:
        raise UserError(f"compare needs two sweep run directories, got only {run_a}",
                        "use mutransfer compare RUN_A RUN_B (e.g. a baseline and the run with your change)")
    target = out or run_b
    if target.exists() and not target.is_dir():
        raise UserError(f"--out {target} is an existing file", "give a directory for compare.json, .md and .png")
    unfinished = {label: status.as_dict() for label, status in
                  (("A", unfinished_run(run_a, partial, "compare")), ("B", unfinished_run(run_b, partial, "compare")))
                  if status is not None}
    trials_a, trials_b = read_tables(run_a)[0], read_tables(run_b)[0]
    axis = _compared_axis(run_a, trials_a, run_b, trials_b)
    keys_a, keys_b = sorted(set(trials_a["search_key"])), sorted(set(trials_b["search_key"]))
    if keys_a != keys_b:
        raise UserError(f"{run_a} swept {', '.join(keys_a)} but {run_b} swept {', '.join(keys_b)}",
                        "compare two sweeps of the same keys")
    setups_a, setups_b = list(dict.fromkeys(trials_a["setup"])), list(dict.fromkeys(trials_b["setup"]))
    shared = [s for s in setups_a if s in setups_b]
    if not shared:
        raise UserError(f"{run_a} (setups {', '.join(setups_a)}) and {run_b} (setups {', '.join(setups_b)}) "
                        "share no setup", "compare two sweeps with a setup label in common")
    a, b = _analysed(run_a, trials_a, axis), _analysed(run_b, trials_b, axis)
    names = _names(run_a, run_b)
    comparison = replace(compare(a["summary"], b["summary"], str(run_a), str(run_b), margin), axis=axis.name)
    if comparison.widths.empty:
        raise UserError(f"{run_a} and {run_b} share no {axis.name} with an estimated optimum in setups "
                        f"{', '.join(shared)}", f"sweep (or import) a {axis.name} both runs have")
    changes = config_changes(a["record"], b["record"])
    target.mkdir(parents=True, exist_ok=True)
    report = {**({"partial": unfinished} if unfinished else {}), **comparison.as_dict(), "config_changes": changes}
    write_json(target / COMPARE_REPORT, report)
    warning = _partial_line(unfinished)
    text = markdown(comparison, changes)
    atomic_write_text(target / COMPARE_TABLE, f"**{warning}**\n\n{text}" if warning else text)
    figure = compare_figure(a["points"], b["points"], comparison.widths, comparison.setups, names, margin,
                            (a["summary"], b["summary"]), axis.name)
    if warning:
        mark_partial(figure, warning)
    save(figure, target / COMPARE_PLOT)
    screen = console()
    for table in _tables(comparison):
        screen.print(table)
    for line in _verdict_lines(comparison) + _only_lines(comparison) + _change_lines(changes):
        screen.print(line, markup=False, highlight=False)
    if warning:
        screen.print(warning, markup=False, highlight=False)
    screen.print(f"wrote {target / COMPARE_TABLE}, {COMPARE_REPORT}, {COMPARE_PLOT}")
    return EXIT_MOVED if strict and comparison.moved else 0


def _compared_axis(run_a: Path, trials_a: pd.DataFrame, run_b: Path, trials_b: pd.DataFrame) -> Axis:
    """The axis both runs are compared along: a sweep's width, an import's first analysed axis; refused when the
    two differ."""
    from ..analysis.run_files import declared_axes
    from ..analysis.trial_table import swept_axes
    from ..errors import UserError

    first_a = swept_axes(trials_a, declared_axes(run_a))[0]
    first_b = swept_axes(trials_b, declared_axes(run_b))[0]
    if first_a != first_b:
        raise UserError(f"{run_a} is analysed along {first_a.name} but {run_b} along {first_b.name}",
                        "compare two runs whose first axis is the same (an import's first --axis)")
    return first_a


def _analysed(run_dir: Path, trials: pd.DataFrame, axis: Axis) -> dict[str, Any]:
    """A run's trials, their searched values as the analysis sees them (on ``axis``'s line through the base
    point, its values under the column ``width``), its summary (computed afresh from trials.csv) and its config
    record (empty when config.yaml is missing)."""
    import pandas as pd

    from ..analysis.run_files import declared_axes, search_settings
    from ..analysis.summary import summarize_dir
    from ..analysis.trial_table import axis_rows, searched_values, swept_axes
    from ..files import CONFIG_FILE, load_yaml

    settings = search_settings(run_dir, trials)
    named = declared_axes(run_dir)
    summary = summarize_dir(run_dir, trials)
    line = axis_rows(trials, axis, swept_axes(trials, named)) if named else trials
    points = pd.concat([pd.DataFrame({"key": key, "setup": part["setup"], "width": part[axis.column],
                                      "seed": part["seed"], "x": searched_values(part, str(key), settings.get(
                                          str(key), {})), "loss": part["val_loss"], "status": part["status"]})
                        for key, part in line.groupby("search_key", sort=False)], ignore_index=True)
    config = run_dir / CONFIG_FILE
    record = load_yaml(config, "sweep config") if config.is_file() else {}
    return {"trials": trials, "points": points, "summary": summary,
            "record": record if isinstance(record, dict) else {}}


def _names(run_a: Path, run_b: Path) -> tuple[str, str]:
    """Short labels for the figure: the directories' names, told apart when they are the same."""
    a, b = run_a.name or str(run_a), run_b.name or str(run_b)
    return (f"A {a}", f"B {b}") if a == b else (a, b)


def _headers(comparison: Comparison) -> tuple[str, ...]:
    """The point table's headers, its first the compared axis."""
    return (comparison.axis, *WIDTH_HEADERS[1:])


def _x(value: float, ci: tuple[float, float]) -> str:
    return f"{value:.2f} {format_interval(ci)}"


def _width_cells(point: PointComparison) -> list[str]:
    loss_ci = point.loss_ci
    loss_text = f"{point.loss_difference:+.4f} " + (format_interval(loss_ci, "+.4f") if loss_ci[0] == loss_ci[0]
                                                     else "(one seed)")
    shift = f"{point.difference:+.2f} {format_interval(point.ci)}"
    holm = "bound" if point.p_holm != point.p_holm else f"{point.p_holm:.3f}"
    return [point_key(point.width), _x(point.x_a, point.ci_a), _x(point.x_b, point.ci_b),
            f"**{shift}**" if point.moved else shift, holm, f"{point.loss_a:.4f}", f"{point.loss_b:.4f}", loss_text]


def _slope(line: RunLine) -> str:
    if line.slope != line.slope:
        return f"no slope ({line.verdict})"
    return f"{line.slope:+.2f} {format_interval(line.ci)} ({line.verdict})"


def _verdict(row: SetupComparison, points: list[PointComparison], tolerance: float) -> str:
    """``moved`` / ``same`` / ``inconclusive`` with the pooled shift and the widths that moved."""
    if row.shift != row.shift:
        pooled = "no pooled shift"
    else:
        pooled = (f"pooled shift {row.shift:+.2f} {format_interval(row.shift_ci, '+.2f')}"
                  f" octaves (95 %; p (Holm) {row.shift_p_holm:.3f}; 90 % {format_interval(row.shift_ci90, '+.2f')})")
    where = ", ".join(f"{point_key(p.width)} ({p.difference:+.2f})" for p in points if p.width in row.moved_widths)
    if row.verdict == "same":
        return f"same — {pooled}, inside ±{tolerance:g}"
    if row.verdict == "moved":
        return f"moved — {pooled}" + (f"; widths that moved (Holm): {where}" if where else "")
    return f"inconclusive — {pooled}; {row.reason}"


def _title(row: SetupComparison) -> str:
    from ..schema import LR_KEY

    return row.setup if row.key == LR_KEY else f"{row.setup} ({row.key})"


def markdown(comparison: Comparison, changes: list[dict[str, Any]]) -> str:
    """compare.md: a verdict line and a width table per setup, the config differences, how to read it."""
    lines = [f"### mutransfer compare: A = `{comparison.run_a}`, B = `{comparison.run_b}`", ""]
    for row, points in comparison.blocks():
        lines += [f"**{_title(row)}: {_verdict(row, points, comparison.tolerance)}.** Slope (octaves per "
                  f"{comparison.axis} doubling): A {_slope(row.a)}, B {_slope(row.b)}.", ""]
        headers = _headers(comparison)
        lines += ["| " + " | ".join(headers) + " |", "|" + "---:|" * len(headers)]
        lines += ["| " + " | ".join(_width_cells(point)) + " |" for point in points]
        if row.only_a or row.only_b:
            lines += ["", f"Not compared: {comparison.axis} values only in A {row.only_a}, only in B "
                      f"{row.only_b}."]
        lines.append("")
    only = _only_lines(comparison)
    lines += [f"- {line}" for line in only] + ([""] if only else [])
    if changes:
        lines += ["Config differences (B vs A):", ""]
        lines += [f"- {line}" for line in _change_lines(changes)[1:]]
        lines.append("")
    lines.append(READING.format(tolerance=comparison.tolerance))
    return "\n".join(lines) + "\n"


def _change_lines(changes: list[dict[str, Any]]) -> list[str]:
    """A heading and one line per config difference (the first ``MAX_CHANGES``), as the terminal and compare.md
    show them."""
    if not changes:
        return []
    lines = [f"{c['where']}: `{c['key']}`: {_change(c['a'], c['b'])}" for c in changes[:MAX_CHANGES]]
    if len(changes) > MAX_CHANGES:
        lines.append(f"… and {len(changes) - MAX_CHANGES} more (compare.json lists them all)")
    return ["Config differences (B vs A):", *lines]


def _partial_line(unfinished: dict[str, dict[str, Any]]) -> str:
    """``PARTIAL: run A is incomplete: …`` for each unfinished run compared under ``--partial``; empty otherwise."""
    return "; ".join(f"PARTIAL: run {label} is {status['line']}" for label, status in unfinished.items())


def _change(a: Any, b: Any) -> str:
    """`a` → `b`; for two lists (the spec's overrides), the items B added and removed."""
    if isinstance(a, list) and isinstance(b, list):
        added, removed = [x for x in b if x not in a], [x for x in a if x not in b]
        parts = ([f"added {', '.join(f'`{x}`' for x in added)}"] if added else []) + (
            [f"removed {', '.join(f'`{x}`' for x in removed)}"] if removed else [])
        return "; ".join(parts) or f"reordered to `{b}`"
    return f"`{a}` → `{b}`"


def _tables(comparison: Comparison) -> list[Table]:
    from rich.table import Table

    tables = []
    for row, points in comparison.blocks():
        color = {"moved": "red", "same": "green"}.get(row.verdict, "yellow")
        table = Table(title=f"{_title(row)}: [{color}]{row.verdict}[/]  "
                            f"(A {comparison.run_a} · B {comparison.run_b})")
        for header in _headers(comparison):
            table.add_column(header, justify="right")
        for point in points:
            table.add_row(*(cell.replace("**", "") for cell in _width_cells(point)))
        tables.append(table)
    return tables


def _verdict_lines(comparison: Comparison) -> list[str]:
    return [f"{_title(row)}: {_verdict(row, points, comparison.tolerance)}; slope A {_slope(row.a)}, "
            f"B {_slope(row.b)}" for row, points in comparison.blocks()]


def _only_lines(comparison: Comparison) -> list[str]:
    """The setups only one run swept (not compared)."""
    from ..schema import LR_KEY

    def named(pairs: list[tuple[str, str]]) -> str:
        return ", ".join(s if k == LR_KEY else f"{s} ({k})" for k, s in pairs)

    return ([f"only in A (not compared): {named(comparison.only_in_a)}"] if comparison.only_in_a else []) + (
        [f"only in B (not compared): {named(comparison.only_in_b)}"] if comparison.only_in_b else [])
