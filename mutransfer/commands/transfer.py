"""``mutransfer transfer``: the config for width N, with every parameter's init std, multiplier and LR."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..defaults import BATCH_TOLERANCE, option_text

if TYPE_CHECKING:  # the command imports these late (start-up: `mutransfer --help` loads no torch)
    from rich.table import Table

    from ..transfer.target import Transfer

__all__ = ["run", "prediction_line", "decay_line"]

COLUMNS = ("parameter", "role", "shape", "init std", "multiplier", "lr", "depth factor", "effective lr", "update")
LEFT = ("parameter", "role", "update")


def run(width: int, source: Optional[Path], setup: Optional[str], out: Optional[Path], fmt: str,
        correct_drift: bool, tolerance: str = "1", depth: Optional[str] = None, steps: Optional[str] = None,
        decay_rule: Optional[str] = None, batch_size: Optional[str] = None, tokens: Optional[str] = None,
        tolerance_text: str = option_text(BATCH_TOLERANCE), partial: bool = False) -> None:
    from ..files import latest_run, transfer_file
    from ..transfer.target import make_transfer, write_transfer
    from .common import batch_tolerance, console, positive_integer, positive_number, unfinished_run

    target_width = positive_integer("--width", str(width), "4096")
    octaves = positive_number("--tolerance", tolerance, "1")
    blocks = positive_integer("--depth", depth, "48") if depth is not None else None
    horizon = positive_integer("--steps", steps, "100000") if steps is not None else None
    batch = positive_integer("--batch-size", batch_size, "256") if batch_size is not None else None
    budget = positive_integer("--tokens", tokens, "1000000000") if tokens is not None else None
    run_dir = source or latest_run()
    th = batch_tolerance(tolerance_text)
    unfinished = unfinished_run(run_dir, partial, "transfer")
    result = make_transfer(run_dir, target_width, setup, correct_drift, octaves, blocks, horizon, decay_rule, batch, budget,
                           th)
    if unfinished is not None:
        result.document = {"partial": unfinished.as_dict(), **result.document}
    path = out or run_dir / transfer_file(width, fmt, partial=unfinished is not None)
    write_transfer(result, path, fmt)
    screen = console()
    screen.print(f"transfer from {run_dir}" + (" (the latest sweep in runs/; --from RUN_DIR for another)"
                                               if source is None else ""), highlight=False)
    screen.print(prediction_line(result.document["prediction"]))
    if result.document.get("decay"):
        screen.print(decay_line(result.document["decay"]), highlight=False)
    screen.print(_table(result.document, width))
    if result.document.get("depth_alpha"):
        doc = result.document
        screen.print(f"depth {doc['depth']} (base {doc['base_depth']}, depth_alpha {doc['depth_alpha']:g}): every "
                     f"residual branch × {doc['branch_multiplier']:.4g}; in-block LRs carry the depth factor shown")
    src = result.document["source"]
    ci = src["slope_ci"]
    slope = f"slope {src['slope']:+.2f} octaves/doubling" if src["slope"] is not None else "no slope"
    screen.print(f"from {src['run_dir']} (widths {src['swept_widths']}): verdict [bold]{src['verdict']}[/], "
                 + slope + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "") + (" (drift corrected)" if correct_drift
                                                                              else ""))
    for warning in result.warnings:
        screen.print(f"[bold red]warning:[/] {warning}")
    screen.print(f"wrote {path}" + (f" (PARTIAL: made from an unfinished sweep, {unfinished.line()})"
                                    if unfinished is not None else ""), highlight=False)
    screen.print(_next_check(run_dir, result), highlight=False, soft_wrap=True)


def _next_check(run_dir: Path, result: Transfer) -> str:
    from ..config import config_from_dict
    from ..transfer.next_check import next_check
    from ..transfer.target import read_sweep_record

    label = result.document["source"]["setup"]
    swept = config_from_dict(read_sweep_record(run_dir)["setups"][label], where=str(run_dir))
    return next_check(run_dir, label, swept, result.config)


def prediction_line(prediction: dict[str, Any]) -> str:
    """What ``transfer`` prints after the run it reads: log2 η* at the target with its 95 % range, and on the next
    line the fit's lack of fit and the between-point scatter the range carries."""
    depth = "".join(f", {name} {prediction[name]:,}" for name in ("depth", "steps", "batch", "tokens")
                    if prediction.get(name) is not None)
    head = f"prediction at width {prediction['width']}{depth}: log2 η* = {prediction['log2_lr']:.2f}"
    if prediction["interval"] is None:
        return f"{head}, range unknown — {prediction['narrow']}"
    lo, hi = prediction["interval"]
    line = (f"{head}, 95 % range [{lo:.2f}, {hi:.2f}] (up to {prediction['half_width']:.2f} octaves from it, "
            f"{'within' if prediction['within_tolerance'] else 'wider than'} transfer's --tolerance "
            f"{prediction['tolerance']:g})")
    return line + (f"\n  {prediction['lack_of_fit']}" if prediction.get("lack_of_fit") else "")


def decay_line(decay: dict[str, Any]) -> str:
    """The weight decay the file carries: its key, value and predicted 95 % range, the rule, the sweep's verdict
    and how often the decay beat decay off."""
    rng = decay.get("range")
    where = f", 95 % range [{rng[0]:.4g}, {rng[1]:.4g}]" if rng else ", range unknown"
    effects = decay.get("decay_effect") or {}
    return (f"weight decay: {decay['key']} = {decay['value']:.4g}{where} under rule '{decay['rule']}' "
            f"(verdict {decay.get('verdict')}; beat decay off at {effects.get('effect', 0)} of "
            f"{sum(effects.values())} swept points)")


def _table(doc: dict[str, Any], width: int) -> Table:
    from rich.table import Table

    model = doc["model"]
    shape = f"model.factory {model['factory']}" if model.get("factory") else f"depth {model['depth']}"
    table = Table(title=f"{doc['source']['setup']} at width {width}, {shape}: η* = 2^{doc['log2_lr']:.2f} = "
                        f"{doc['lr']:.4g}")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in LEFT else "right")
    for row in doc["param_groups"]:
        init = f"const {row['init_mean']:.4g}" if row["role"] == "gain" else f"{row['init_std']:.4g}"
        update = row["update"] + (f" eps={row['eps']:.3g}" if row.get("eps") is not None else "")
        table.add_row(row["name"], row["role"], "×".join(map(str, row["shape"])), init,
                      f"{row['multiplier']:.4g}", f"{row['lr']:.4g}", f"{row.get('depth_lr_factor', 1.0):.4g}",
                      f"{row['effective_lr']:.4g}", update)
    return table
