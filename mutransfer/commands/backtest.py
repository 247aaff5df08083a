"""``mutransfer backtest RUN_DIR``: how far to trust the run's law (or line) when it extrapolates. One refit per
axis with three or more values, without that axis's largest value, and per held-out point the miss, whether the
predictive interval held it and the loss given up (``analysis.backtest``); the figures go into summary.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # the command imports these late (start-up: `mutransfer --help` loads no pandas)
    from rich.table import Table

    from ..analysis.result import SetupResult, Summary

__all__ = ["run", "backtest_table"]


def run(run_dir: Path, setup: Optional[str]) -> None:
    from ..analysis.summary import refuse_unfitted, summarize_run
    from ..errors import UserError, did_you_mean
    from .common import console

    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such directory", "give a sweep's or an import's run directory")
    summary = summarize_run(run_dir)
    refuse_unfitted(summary)
    setups = summary.setups()
    if setup is not None and setup not in setups:
        raise UserError(f"--setup {setup} is not in {run_dir}", f"{did_you_mean(setup, setups)}its setups: "
                        f"{', '.join(setups)}")
    chosen = {label: s for label, s in setups.items() if setup is None or label == setup}
    if not any(s.backtest is not None and s.backtest.points for s in chosen.values()):
        reasons = sorted({f"{axis}: {why}" for s in chosen.values() if s.backtest is not None
                          for axis, why in s.backtest.skipped.items()})
        raise UserError(f"{run_dir} has no axis with three or more values to hold one out"
                        + (f" ({'; '.join(reasons)})" if reasons else ""),
                        "sweep or import a third value on an axis (e.g. a third width)")
    screen = console()
    for label, result in chosen.items():
        if result.backtest is None or not result.backtest.points:
            continue
        screen.print(backtest_table(label, result))
        screen.print(f"{label}: {result.backtest.line()}", highlight=False, markup=False, soft_wrap=True)
    _keep(run_dir, summary)
    screen.print(f"wrote the backtest into {run_dir / 'summary.json'}", highlight=False)


def backtest_table(label: str, result: SetupResult) -> Table:
    """One row per held-out point: where, the measured optimum (or its bound), the prediction with its interval,
    the miss, held or not, the loss given up."""
    from rich.table import Table

    from ..analysis.cells import format_interval

    assert result.backtest is not None
    table = Table(title=f"{label}: the {result.backtest.fit} refitted without each axis's largest value, at the points left out")
    for column in ("held out", "at", "log2 η* measured", "predicted", "95 % predictive", "miss", "held",
                   "loss given up"):
        table.add_column(column, justify="left" if column in ("held out", "at", "held") else "right")
    for point in result.backtest.points:
        at = ", ".join(f"{name} {value:g}" for name, value in point.at.items())
        measured = f"{'≤' if point.bound == 'low' else '≥'} {point.measured:.2f}" if point.bound else \
            f"{point.measured:.2f}"
        table.add_row(f"{point.axis} {point.at[point.axis]:g}", at, measured, f"{point.predicted:.2f}",
                      format_interval(point.interval), "bound" if point.miss is None else f"{point.miss:+.2f}",
                      ("yes" if point.held else "NO") + (" (bound)" if point.bound else ""),
                      "-" if point.regret is None else f"{point.regret:.4f}")
    table.caption = ("miss: predicted − measured, octaves; held: the measured optimum inside the refit's 95 % range "
                     "combined with the point's own error (a censored point: its bound consistent with it); loss "
                     "given up: read off the point's own bowl at the predicted LR, only inside its LRs")
    return table


def _keep(run_dir: Path, summary: Summary) -> None:
    """Write each setup's backtest into summary.json, keeping the rest of the file as written (a sweep's status);
    the whole summary where summary.json is missing or unreadable."""
    from ..analysis.result import SUMMARY_VERSION
    from ..files import SUMMARY_FILE, write_json
    from ..schema import LR_KEY

    path = run_dir / SUMMARY_FILE
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
        setups = document["keys"][LR_KEY]["setups"]
        if document.get("version") != SUMMARY_VERSION or not set(summary.setups()) <= set(setups):
            raise KeyError("layout")
    except (OSError, ValueError, KeyError, TypeError):
        write_json(path, summary.to_json())
        return
    for label, result in summary.setups().items():
        if result.backtest is not None:
            setups[label]["backtest"] = result.backtest.to_json()
    write_json(path, document)
