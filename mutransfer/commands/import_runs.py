"""``mutransfer import SOURCE --out RUN_DIR``: a table of finished runs (or an Optuna study) as a run directory
that every analysis command reads."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # the command imports these late (start-up: `mutransfer --help` loads no pandas)
    from ..importing.run import ImportResult

__all__ = ["run", "report_lines", "warning_lines"]


def run(source: Optional[Path], out: Path, lr: Optional[str], loss: Optional[str], axes: Sequence[str],
        seed: Optional[str], setup: Optional[str], status: Optional[str], where: Sequence[str],
        diverged_above: Optional[str], duplicates: str, step: Optional[str], lr_range: Optional[str],
        storage: Optional[str], study: Optional[str], force: bool, mlflow: Optional[str] = None,
        experiment: Optional[str] = None, wandb: Optional[Path] = None) -> None:
    from ..errors import UserError
    from ..importing.mapping import (DUPLICATE_RULES, ImportMapping, parse_axis, parse_lr_range, parse_step,
                                     parse_where)
    from ..importing.run import MlflowSource, import_runs
    from .common import console, positive_number
    from .display import answer_lines, batch_table, summary_tables

    if duplicates not in DUPLICATE_RULES:
        raise UserError(f"--duplicates {duplicates} is not one of {', '.join(DUPLICATE_RULES)}",
                        "use --duplicates mean or --duplicates first")
    mapping = ImportMapping(lr=lr or "", loss=loss or "", axes=tuple(parse_axis(a) for a in axes), seed=seed,
                            setup=setup,
                            status=status, where=tuple(parse_where(w) for w in where),
                            diverged_above=(positive_number("--diverged-above", diverged_above, "10")
                                            if diverged_above is not None else None),
                            duplicates=duplicates, step=parse_step(step), lr_range=parse_lr_range(lr_range))
    result = import_runs(source, storage, study, mapping, out, force, mlflow=MlflowSource.of(mlflow, experiment),
                         wandb=wandb)
    for line in warning_lines(result):
        print(line, file=sys.stderr)
    screen = console()
    if result.unchanged:
        screen.print(f"{out} already holds this import (same source digest and mapping): nothing to do",
                     highlight=False, soft_wrap=True)
        return
    for line in report_lines(result):
        screen.print(line, highlight=False, markup=False, soft_wrap=True)
    assert result.summary is not None and result.imported is not None
    for table in summary_tables(result.summary, result.imported.axes):
        screen.print(table)
    batches = batch_table(result.summary)
    if batches is not None:
        screen.print(batches)
    for line in answer_lines(result.summary):
        screen.print(line, highlight=False, markup=False, soft_wrap=True)
    screen.print(f"wrote {out}: trials.csv, config.yaml, summary.json and {len(result.figures)} figures",
                 highlight=False)


def warning_lines(result: ImportResult) -> list[str]:
    """The conversion's warnings (an empty loss read as unfinished, a state column left unmapped), each as the
    ``warning: ...`` line printed on stderr."""
    return [f"warning: {line}" for line in result.imported.warnings] if result.imported is not None else []


def report_lines(result: ImportResult) -> list[str]:
    """What the import read and decided: rows, statuses, points, the LR grid, the axes left out, the noise."""
    imported, source = result.imported, result.source
    assert imported is not None
    counts = imported.counts
    name = f"study {source.study} in {source.path}" if source.study else source.path
    lines = [f"read {imported.rows_read:,} rows from {name} ({source.kind}, sha256 {source.sha256[:12]}); "
             f"{imported.rows_kept:,} pass the filters; {counts['dropped_unfinished']} unfinished left out",
             f"runs: {counts['ok']:,} ok, {counts['diverged']:,} diverged, {counts['failed']:,} failed"
             f"{_retried(counts)}; "
             f"{counts['duplicates_merged']} duplicates merged; {counts['points_skipped']} points with fewer than 3 "
             f"learning rates skipped"]
    steps = ", ".join(f"{step:g} ({label})" for label, step in imported.steps.items())
    how = "binned on that log2 grid" if imported.binned else "analysed as they are"
    lines.append(f"learning rates: step {steps} octaves, {imported.step_source}; {how}")
    for axis, left in imported.left_out.items():
        lines.append(f"axis {axis} left out of the analysis: {left.line(axis)}")
    for old, new in imported.renamed_setups.items():
        lines.append(f"setup '{old}' is written as '{new}' (characters a file name or Markdown table cannot hold)")
    if result.summary is not None and result.summary.noise is not None:
        lines.append(f"noise: {result.summary.noise.line()}")
    return lines


def _retried(counts: dict[str, int]) -> str:
    """The failed runs beside a run with a loss at their point and learning rate (a crash and its retry), as the
    ``runs:`` line adds them: `` (6 beside a run with a loss at their point and learning rate: flagged retried:N)``."""
    from ..importing.retried import RETRIED

    retried = counts.get("retried", 0)
    return (f" ({retried:,} beside a run with a loss at their point and learning rate: flagged {RETRIED}:N)"
            if retried else "")
