"""``mutransfer transfer``: the config for width N, with every parameter's init std, multiplier and LR."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

__all__ = ["run"]

COLUMNS = ("parameter", "role", "shape", "init std", "multiplier", "lr", "update")
LEFT = ("parameter", "role", "update")


def run(width: int, source: Optional[Path], setup: Optional[str], out: Optional[Path], fmt: str,
        correct_drift: bool) -> None:
    from ..errors import UserError
    from ..files import latest_run, transfer_file
    from ..transfer.target import FORMATS, make_transfer, write_transfer
    from .common import console

    if fmt not in FORMATS:
        raise UserError(f"--format {fmt} is not supported", f"use one of: {', '.join(FORMATS)}")
    run_dir = source or latest_run()
    result = make_transfer(run_dir, width, setup, correct_drift)
    path = out or run_dir / transfer_file(width, fmt)
    write_transfer(result, path, fmt)
    screen = console()
    screen.print(_table(result.document, width))
    src, doc = result.document["source"], result.document
    ci = src["slope_ci"]
    screen.print(f"from {src['run_dir']} (widths {src['swept_widths']}): verdict [bold]{src['verdict']}[/], "
                 f"slope {src['slope']:+.2f} octaves/doubling" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "") +
                 f"; implied error at width {width}: {doc['implied_error_octaves']:.2f} octaves"
                 + (" (drift corrected)" if correct_drift else ""))
    for warning in result.warnings:
        screen.print(f"[bold red]warning:[/] {warning}")
    screen.print(f"wrote {path}")


def _table(doc: dict[str, Any], width: int) -> Any:
    from rich.table import Table

    table = Table(title=f"{doc['source']['setup']} at width {width}: η* = 2^{doc['log2_lr']:.2f} = {doc['lr']:.4g}")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in LEFT else "right")
    for row in doc["param_groups"]:
        init = f"const {row['init_mean']:.4g}" if row["role"] == "gain" else f"{row['init_std']:.4g}"
        table.add_row(row["name"], row["role"], "×".join(map(str, row["shape"])), init,
                      f"{row['multiplier']:.4g}", f"{row['lr']:.4g}", row["update"])
    return table
