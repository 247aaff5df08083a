"""``mutransfer coord-check``: validate, measure, fit, judge, write the files, print the table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..errors import UserError

if TYPE_CHECKING:  # the command imports rich late
    from rich.table import Table

__all__ = ["run", "parse_widths", "parse_depths", "EXIT_UNSTABLE", "DEFAULT_WIDTHS"]

DEFAULT_WIDTHS = "32,64,128,256"

EXIT_UNSTABLE = 1
VERDICT_COLORS = {"stable": "green", "grows": "red", "shrinks": "yellow"}


def parse_widths(text: str, head_dim: int) -> list[int]:
    from ..config import check_width

    try:
        widths = sorted({int(w) for w in text.split(",") if w.strip()})
    except ValueError:
        raise UserError(f"--widths {text} must be comma-separated integers", "e.g. --widths 32,64,128,256") from None
    if len(widths) < 2:
        raise UserError(f"--widths {text} needs at least two widths", "e.g. --widths 32,64,128,256")
    for w in widths:
        check_width(f"width {w} in --widths", w, head_dim)
    return widths


def parse_depths(text: str) -> list[int]:
    try:
        depths = sorted({int(d) for d in text.split(",") if d.strip()})
    except ValueError:
        raise UserError(f"--depths {text} must be comma-separated integers", "e.g. --depths 2,4,8,16") from None
    if len(depths) < 2 or depths[0] < 1:
        raise UserError(f"--depths {text} needs at least two depths of 1 block or more", "e.g. --depths 2,4,8,16")
    return depths


def _check_options(steps: int, seeds: int, lr: Optional[float]) -> None:
    if steps < 1:
        raise UserError(f"--steps {steps} must be at least 1", "e.g. --steps 5")
    if seeds < 1:
        raise UserError(f"--seeds {seeds} must be at least 1", "e.g. --seeds 2")
    if lr is not None and not lr > 0:
        raise UserError(f"--lr {lr} must be positive", "e.g. --lr 0.01")


def run(overrides: Sequence[str], widths_text: Optional[str], steps: int, lr: Optional[float], seeds: int,
        out: Optional[Path], strict: bool, depths_text: Optional[str] = None) -> int:
    """The coord-check command: across widths, or across depths at the configured width (``--depths``);
    returns the exit code (1 under ``--strict`` when a module is not stable)."""
    from ..config import compose, to_dict

    cfg = compose(overrides)  # before torch is imported: a bad key fails fast
    import pandas as pd

    from ..analysis.coord_figure import coord_check_figure
    from ..analysis.plots import save
    from ..analysis.stability import judge
    from ..files import COORD_CHECK_FILES, atomic_write_text, new_run_dir, write_json
    from ..train.coordcheck import coord_check
    from ..train.data import load_corpus
    from .common import console, warn_model

    warn_model(cfg)
    if cfg.model.factory:
        raise UserError("coord-check measures the built-in GPT's modules or a model=hf architecture's",
                        "drop model.factory for coord-check")
    if depths_text is not None and widths_text is not None:
        raise UserError("--widths and --depths were both given", "measure one axis at a time: across depth the "
                        "width is model.width (e.g. --depths 2,4,8,16 model.width=64)")
    axis = "depth" if depths_text is not None else "width"
    sizes = parse_depths(depths_text) if depths_text is not None else \
        parse_widths(widths_text or DEFAULT_WIDTHS, cfg.model.head_dim)
    _check_options(steps, seeds, lr)
    base_lr = lr if lr is not None else cfg.optimizer.lr
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    screen = console()
    table = coord_check(cfg, corpus, sizes, steps, base_lr, list(range(cfg.train.seed, cfg.train.seed + seeds)),
                        on_width=lambda n, s: screen.print(f"measuring {axis} {n} (seed {s})", style="dim"),
                        axis=axis)
    result = judge(table, axis=axis)
    run_dir = new_run_dir(out, "coord-check")
    atomic_write_text(run_dir / COORD_CHECK_FILES["table"], table.to_csv(index=False))
    where = {"widths": sizes} if axis == "width" else {
        "axis": "depth", "depths": sizes, "width": cfg.model.width,
        "depth_alpha": cfg.parametrization.depth_alpha, "base_depth": cfg.parametrization.base_depth}
    write_json(run_dir / COORD_CHECK_FILES["summary"], {
        "preset": cfg.parametrization.name, "optimizer": cfg.optimizer.name, "lr": base_lr, **where,
        "steps": steps, "seeds": seeds, **result, "config": to_dict(cfg)})
    alpha = f", depth_alpha {cfg.parametrization.depth_alpha:g} at width {cfg.model.width}" if axis == "depth" else ""
    setup = (f"{cfg.parametrization.name} + {cfg.optimizer.name}, η={base_lr:.4g}{alpha}, {steps} steps, "
             f"{seeds} seed{'s' if seeds > 1 else ''} ({run_dir.name})")
    save(coord_check_figure(table, pd.DataFrame(result["slopes"]), sorted({0, 1, steps}), axis, title=setup),
         run_dir / COORD_CHECK_FILES["plot"])
    title = (f"coord check: {cfg.parametrization.name} + {cfg.optimizer.name}, η={base_lr:.4g}, {axis}s {sizes}"
             f"{alpha}, {steps} steps")
    screen.print(_verdict_table(result, title))
    bad = [m for m, e in result["modules"].items() if e["verdict"] != "stable"]
    screen.print(("all modules stable" if not bad else f"not stable: {', '.join(bad)}") +
                 f" · wrote {run_dir}/{', '.join(COORD_CHECK_FILES.values())}")
    return EXIT_UNSTABLE if strict and bad else 0


def _verdict_table(result: dict[str, Any], title: str) -> Table:
    from rich.table import Table

    view = Table(title=title)
    for column in ("module", "verdict", "offending quantity", "slope", "required"):
        view.add_column(column)
    for module, entry in result["modules"].items():
        worst = entry["worst"] or {}
        view.add_row(module, f"[{VERDICT_COLORS[entry['verdict']]}]{entry['verdict']}[/]",
                     f"{worst.get('quantity', '-')} (step {worst['step']})" if worst else "-",
                     f"{worst['slope']:+.2f}" if worst else "-", worst.get("required", "-"))
    return view
