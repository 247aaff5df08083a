"""``mutransfer transfer``: the config for width N, with every parameter's init std, multiplier and LR."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ..defaults import BATCH_TOLERANCE, INTERVAL_LEVEL, option_text
from ..schema import TRANSFER_AXES

if TYPE_CHECKING:  # the command imports these late (start-up: `mutransfer --help` loads no torch)
    from rich.table import Table

    from ..transfer.target import Transfer
    from ..sweep.store.completion import SweepStatus

__all__ = ["run", "prediction_line", "decay_line", "target_values", "transfer_import", "spellings"]

COLUMNS = ("parameter", "role", "shape", "init std", "multiplier", "lr", "depth factor", "effective lr", "update")
LEFT = ("parameter", "role", "update")


def spellings() -> dict[str, str]:
    """The options that name a target on one axis, as spellings of ``--at AXIS=VALUE``."""
    return {axis.option: axis.name for axis in TRANSFER_AXES if axis.option}


def target_values(at: Sequence[str], spelled: Mapping[str, Optional[str]]) -> dict[str, float]:
    """``--at NAME=VALUE`` (repeatable) and the axis options (``spelled``: option → text) as {axis: value}; one
    line for a malformed or repeated axis or a value that is not a positive number."""
    from ..errors import UserError
    from .common import positive_number

    values: dict[str, float] = {}
    pairs = [(f"--at {text}", *text.partition("=")[::2]) for text in at]
    pairs += [(option, spellings()[option], text) for option, text in spelled.items() if text is not None]
    for option, name, text in pairs:
        name = name.strip()
        if not name or not text.strip():
            raise UserError(f"{option} is not AXIS=VALUE", "e.g. --at params=7e9 --at tokens=2e12")
        if name in values:
            raise UserError(f"the target on {name} is given twice ({option})", "give each axis once")
        values[name] = positive_number(option, text.strip(), "7e9")
    return values


def run(width: Optional[int], source: Optional[Path], setup: Optional[str], out: Optional[Path], fmt: str,
        correct_drift: bool, tolerance: str = "1", depth: Optional[str] = None, steps: Optional[str] = None,
        decay_rule: Optional[str] = None, batch_size: Optional[str] = None, tokens: Optional[str] = None,
        tolerance_text: str = option_text(BATCH_TOLERANCE), partial: bool = False, at: Sequence[str] = ()) -> None:
    from ..errors import UserError
    from .common import batch_tolerance, positive_integer, positive_number
    from .run_source import run_source

    octaves = positive_number("--tolerance", tolerance, "1")
    th = batch_tolerance(tolerance_text)
    run_dir = run_source(source)

    from ..analysis.run_files import declared_axes  # pandas: after the checks that need none
    from ..files import transfer_file
    from ..transfer.target import make_transfer, write_transfer
    from ..transfer.target_warnings import SHAPED_AXES
    from .common import console, unfinished_run

    if declared_axes(run_dir):
        spelled = {"--width": None if width is None else str(width), "--depth": depth, "--steps": steps,
                   "--batch-size": batch_size, "--tokens": tokens}
        return transfer_import(run_dir, target_values(at, spelled), setup, out, fmt, octaves)
    given = _sweep_target(at, {"width": None if width is None else str(width), "depth": depth, "steps": steps,
                                "batch": batch_size, "tokens": tokens})
    depth, steps, batch_size, tokens = given["depth"], given["steps"], given["batch"], given["tokens"]
    others = {name: positive_number(f"--at {name}", text, "64") for name, text in given.items()
              if name not in SHAPED_AXES and text is not None}
    if given["width"] is None:
        raise UserError("transfer needs the target width", "give --width N (e.g. --width 4096) or --at width=N")
    target_width = positive_integer("--width", given["width"], "4096")
    blocks = positive_integer("--depth", depth, "48") if depth is not None else None
    horizon = positive_integer("--steps", steps, "100000") if steps is not None else None
    batch = positive_integer("--batch-size", batch_size, "256") if batch_size is not None else None
    budget = positive_integer("--tokens", tokens, "1000000000") if tokens is not None else None
    unfinished = unfinished_run(run_dir, partial, "transfer")
    result = make_transfer(run_dir, target_width, setup, correct_drift, octaves, blocks, horizon, decay_rule, batch, budget,
                           th, at=others)
    if unfinished is not None:
        result.document = {"partial": unfinished.as_dict(), **result.document}
    path = out or run_dir / transfer_file(target_width, fmt, partial=unfinished is not None)
    write_transfer(result, path, fmt)
    if out is None:
        from ..analysis.draw import redraw_drift

        redraw_drift(run_dir)
    screen = console()
    screen.print(f"transfer from {run_dir}" + (" (the latest sweep in runs/; --from RUN_DIR for another)"
                                               if source is None else ""), highlight=False)
    screen.print(prediction_line(result.prediction.as_dict()))
    if result.document.get("backtest"):
        screen.print(f"backtest: {result.document['backtest']['line']}", highlight=False, markup=False)
    if result.document.get("decay"):
        screen.print(decay_line(result.document["decay"]), highlight=False)
    for constant in result.constants:
        screen.print(f"tuned constant {constant.line()}", highlight=False, markup=False, soft_wrap=True)
    if "param_groups" in result.document:
        screen.print(_table(result.document, target_width))
    if result.trainer is not None:
        from ..transfer.trainer_target import trainer_text

        screen.print(trainer_text(result.document["trainer"], result.document["lr"], result.document["log2_lr"],
                                  target_width), highlight=False, markup=False, soft_wrap=True)
    if result.document.get("depth_alpha"):
        doc = result.document
        screen.print(f"depth {doc['depth']} (base {doc['base_depth']}, depth_alpha {doc['depth_alpha']:g}): every "
                     f"residual branch × {doc['branch_multiplier']:.4g}; in-block LRs carry the depth factor shown")
    src = result.source
    ci = src.slope_ci
    slope = f"slope {src.slope:+.2f} octaves/doubling" if src.slope is not None else "no slope"
    screen.print(f"from {src.run_dir} (widths {src.swept_widths}): verdict [bold]{src.verdict}[/], "
                 + slope + (f", {INTERVAL_LEVEL} % interval [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
                 + (" (drift corrected)" if correct_drift else ""))
    for warning in result.warnings:
        screen.print(f"[bold red]warning:[/] {warning}")
    screen.print(f"wrote {path}" + (f" ({_unfinished_mark(unfinished)})" if unfinished is not None else ""),
                 highlight=False)
    screen.print(_next_check(run_dir, result), highlight=False, soft_wrap=True)


def _unfinished_mark(status: SweepStatus) -> str:
    """How a transfer made from an unfinished sweep is marked: partial, and provisional while it trains."""
    if status.provisional is not None:
        return f"PARTIAL, PROVISIONAL: made from a sweep still training, on {status.provisional.line()}"
    return f"PARTIAL: made from an unfinished sweep, {status.line()}"


def _sweep_target(at: Sequence[str], spelled: dict[str, Optional[str]]) -> dict[str, Optional[str]]:
    """A sweep's target on its axes as the options' text: ``spelled`` (axis → its option's text) with ``--at``'s
    values added; an axis a sweep cannot have, or one given twice, refused in one line."""
    from ..errors import UserError

    known = {axis.name: axis.option or f"--at {axis.name}" for axis in TRANSFER_AXES}
    given = {**dict.fromkeys(known), **spelled}
    for name, value in target_values(at, {}).items():
        if name not in known:
            raise UserError(f"--at {name}: a sweep's axes are {', '.join(known)}",
                            "give them as --at width=N or --width N (any axis name works on an import)")
        if given[name] is not None:
            raise UserError(f"the target on {name} is given twice (--at {name} and {known[name]})",
                            "give each axis once")
        given[name] = str(int(value)) if float(value).is_integer() else str(value)
    return given


def transfer_import(run_dir: Path, target: dict[str, float], setup: Optional[str], out: Optional[Path], fmt: str,
                    tolerance: float) -> None:
    """η* with its range at ``target`` from an imported table (``transfer.imported``)."""
    from ..analysis.transfer_layout import write_transfer_file
    from ..errors import UserError
    from ..transfer.imported import ImportTarget, import_transfer_file, predict_import
    from .common import console

    if not target:
        raise UserError("transfer from an import needs a target", "give --at AXIS=VALUE for its axes, e.g. "
                        "--at params=7e9 --at tokens=2e12")
    prediction = predict_import(run_dir, ImportTarget(target), setup, tolerance)
    path = out or run_dir / import_transfer_file(target, fmt)
    write_transfer_file(prediction.as_dict(run_dir), path, fmt)
    screen = console()
    where = ", ".join(f"{name} {value:.4g}" for name, value in prediction.target.items())
    head = f"prediction at {where} ({prediction.setup}): log2 η* = {prediction.log2_lr:.2f} (η* = " \
           f"{2.0 ** prediction.log2_lr:.4g})"
    if prediction.interval is not None:
        lo, hi = prediction.interval
        head += f", 95 % range [{lo:.2f}, {hi:.2f}] (η* {2.0 ** lo:.3g} to {2.0 ** hi:.3g})"
    screen.print(head, highlight=False, soft_wrap=True)
    if prediction.backtest:
        screen.print(f"backtest: {prediction.backtest}", highlight=False, markup=False, soft_wrap=True)
    screen.print("law: " + ", ".join(f"{name} {slope:+.3f} octaves per doubling"
                                     for name, slope in prediction.slopes.items())
                 + f"; noise: {prediction.noise}{'' if prediction.calibrated else ' (uncalibrated)'}", highlight=False,
                 soft_wrap=True)
    for warning in prediction.warnings:
        screen.print(f"[bold red]warning:[/] {warning}", highlight=False, soft_wrap=True)
    screen.print(f"wrote {path} (η* and its range: an import names no model config)", highlight=False,
                 soft_wrap=True)


def _next_check(run_dir: Path, result: Transfer) -> str:
    from ..config import config_from_dict
    from ..transfer.next_check import next_check
    from ..transfer.target import read_sweep_record

    label = result.source.setup
    swept = config_from_dict(read_sweep_record(run_dir)["setups"][label], where=str(run_dir))
    return next_check(run_dir, label, swept, result.config)


def prediction_line(prediction: dict[str, Any]) -> str:
    """What ``transfer`` prints after the run it reads: log2 η* at the target with its 95 % range, and on the next
    line the fit's lack of fit and the between-point scatter the range carries."""
    depth = "".join(f", {axis.name} {prediction[axis.name]:,}" for axis in TRANSFER_AXES[1:]
                    if prediction.get(axis.name) is not None)
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
