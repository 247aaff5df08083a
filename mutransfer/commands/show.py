"""``mutransfer show``: every parameter's role, shape, init, multiplier, LR and update rule (or the config)."""

from __future__ import annotations

from typing import Sequence

__all__ = ["run"]

COLUMNS = ("parameter", "role", "shape", "init std", "init mean", "multiplier", "lr", "shape factor",
           "effective lr", "update")
LEFT = ("parameter", "role", "update")


def run(overrides: Sequence[str], print_config: bool) -> None:
    from rich.table import Table

    from ..config import compose, to_yaml
    from ..model.build import model_plan
    from ..train.data import vocab_size
    from .common import console, format_number

    cfg = compose(overrides)
    out = console(160)
    if print_config:
        out.print(to_yaml(cfg), markup=False, highlight=False)
        return
    plan = model_plan(cfg, vocab_size(cfg.data))
    title = (f"{plan.preset} + {plan.optimizer_name} at width {plan.width} (base {plan.base_width}, "
             f"m={plan.ratio:g}), base lr {format_number(plan.lr)}")
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in LEFT else "right", no_wrap=True)
    for row in plan.rows():
        update = row["update"]
        if row["scale_rule"]:
            update += f" ({row['scale_rule']} at {'×'.join(map(str, row['scale_shape']))})"
        if row["eps"] is not None:
            update += f" eps={row['eps']:.3g}"
        table.add_row(row["name"], row["role"], "×".join(map(str, row["shape"])), f"{row['init_std']:.4g}",
                      f"{row['init_mean']:.4g}", f"{row['multiplier']:.4g}", f"{row['lr']:.4g}",
                      f"{row['shape_factor']:.4g}", f"{row['effective_lr']:.4g}", update)
    out.print(table)
