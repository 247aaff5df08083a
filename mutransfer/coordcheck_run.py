"""What ``mutransfer coord-check`` does: validate, measure, fit, judge, write the files, print the table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from .errors import UserError

__all__ = ["run_coord_check", "parse_widths", "judge"]

EXIT_UNSTABLE = 1


def parse_widths(text: str, head_dim: int) -> list[int]:
    try:
        widths = sorted({int(w) for w in text.split(",") if w.strip()})
    except ValueError:
        raise UserError(f"--widths {text} must be comma-separated integers", "e.g. --widths 32,64,128,256") from None
    if len(widths) < 2:
        raise UserError(f"--widths {text} needs at least two widths", "e.g. --widths 32,64,128,256")
    for w in widths:
        if w <= 0 or w % head_dim:
            raise UserError(f"width {w} in --widths is not a positive multiple of model.head_dim={head_dim}",
                            f"use multiples of {head_dim}")
    return widths


def judge(table: Any, tol: float = 0.2) -> dict[str, Any]:
    from .stability import fit_slopes, verdicts

    slopes = fit_slopes(table)
    result = verdicts(slopes, tol)
    result["slopes"] = slopes.to_dict(orient="records")
    return result


def run_coord_check(overrides: Sequence[str], widths_text: str, steps: int, lr: Optional[float], seeds: int,
                    out: Optional[Path], strict: bool) -> int:
    from rich.console import Console
    from rich.table import Table

    from .config import compose, to_dict
    from .coordcheck import coord_check
    from .data import load_corpus
    from .plots import coord_check_figure, save
    from .runs import atomic_write_text, new_run_dir, write_json

    cfg = compose(overrides)
    if cfg.model.factory:
        raise UserError("coord-check measures the built-in GPT's modules", "drop model.factory for coord-check")
    widths = parse_widths(widths_text, cfg.model.head_dim)
    if steps < 1:
        raise UserError(f"--steps {steps} must be at least 1", "e.g. --steps 5")
    if seeds < 1:
        raise UserError(f"--seeds {seeds} must be at least 1", "e.g. --seeds 2")
    if lr is not None and not lr > 0:
        raise UserError(f"--lr {lr} must be positive", "e.g. --lr 0.01")
    base_lr = lr if lr is not None else cfg.optimizer.lr
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    console = Console(width=None if sys.stdout.isatty() else 140, stderr=False)
    table = coord_check(cfg, corpus, widths, steps, base_lr, list(range(cfg.train.seed, cfg.train.seed + seeds)),
                        on_width=lambda w, s: console.print(f"measuring width {w} (seed {s})", style="dim"))
    result = judge(table)
    run_dir = new_run_dir(out, "coord-check")
    atomic_write_text(run_dir / "coord_check.csv", table.to_csv(index=False))
    write_json(run_dir / "coord_check.json", {"preset": cfg.parametrization.name, "optimizer": cfg.optimizer.name,
                                              "lr": base_lr, "widths": widths, "steps": steps, "seeds": seeds,
                                              **result, "config": to_dict(cfg)})
    import pandas as pd

    save(coord_check_figure(table, pd.DataFrame(result["slopes"]), sorted({0, 1, steps})), run_dir / "coord_check.png")
    view = Table(title=f"coord check: {cfg.parametrization.name} + {cfg.optimizer.name}, η={base_lr:.4g}, widths "
                       f"{widths}, {steps} steps")
    for column in ("module", "verdict", "offending quantity", "slope", "required"):
        view.add_column(column)
    colors = {"stable": "green", "grows": "red", "shrinks": "yellow"}
    for module, entry in result["modules"].items():
        worst = entry["worst"] or {}
        view.add_row(module, f"[{colors[entry['verdict']]}]{entry['verdict']}[/]",
                     f"{worst.get('quantity', '-')} (step {worst['step']})" if worst else "-",
                     f"{worst['slope']:+.2f}" if worst else "-", worst.get("required", "-"))
    console.print(view)
    bad = [m for m, e in result["modules"].items() if e["verdict"] != "stable"]
    console.print(("all modules stable" if not bad else f"not stable: {', '.join(bad)}") +
                  f" · wrote {run_dir}/coord_check.csv, .json, .png")
    return EXIT_UNSTABLE if strict and bad else 0
