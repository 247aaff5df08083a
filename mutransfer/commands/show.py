"""``mutransfer show``: every parameter's role, shape, init, multiplier, LR, update rule and weight decay (or the
config)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # the command imports these late (start-up: a bad key answers before torch loads)
    from rich.table import Table

    from ..schema import Config
    from ..table.plan import Plan

__all__ = ["run"]

COLUMNS = ("parameter", "role", "shape", "init std", "init mean", "multiplier", "lr", "depth factor", "shape factor",
           "effective lr", "weight decay", "decay/step", "update")
DEPTH_COLUMNS = ("depth factor",)
"""Shown only when the depth rules are on (``parametrization.depth_alpha`` > 0)."""
DECAY_COLUMNS = ("weight decay", "decay/step")
"""Shown only when the optimizer decays (λ > 0 or a timescale): λ_p in the rule's units, and the fraction of the
parameter one step at the schedule's peak removes."""
LEFT = ("parameter", "role", "update")


def run(overrides: Sequence[str], print_config: bool) -> None:
    from ..config import compose, to_yaml

    cfg = compose(overrides)  # before torch is imported: a bad key fails fast
    from rich.table import Table

    from ..model_kinds import model_plan
    from ..table.decay import decay_on
    from ..train.data import vocab_size
    from .common import console, format_number, warn_model

    out = console(160 + 40 * (cfg.model.hf is not None) + 30 * decay_on(cfg.optimizer))
    if print_config:
        out.print(to_yaml(cfg), markup=False, highlight=False)
        return
    plan = model_plan(cfg, vocab_size(cfg.data))
    title = (f"{plan.preset} + {plan.optimizer_name} at width {plan.width} (base {plan.base_width}, "
             f"m={plan.ratio:g}), base lr {format_number(plan.lr)}")
    table = Table(title=title)
    decaying = decay_on(cfg.optimizer)
    columns = [c for c in COLUMNS if (plan.depth_alpha or c not in DEPTH_COLUMNS)
               and (decaying or c not in DECAY_COLUMNS)]
    for column in columns:
        table.add_column(column, justify="left" if column in LEFT else "right", no_wrap=True)
    for row in plan.rows():
        update = row["update"]
        if row["scale_rule"]:
            update += f" ({row['scale_rule']} at {'×'.join(map(str, row['scale_shape']))})"
        if row["blocks"] > 1:
            update += f" per block ×{row['blocks']}"
        if row["transposed"]:
            update += " [stored din×dout]"
        if row["eps"] is not None:
            update += f" eps={row['eps']:.3g}"
        cells = {"parameter": row["name"], "role": row["role"], "shape": "×".join(map(str, row["shape"])),
                 "init std": f"{row['init_std']:.4g}", "init mean": f"{row['init_mean']:.4g}",
                 "multiplier": f"{row['multiplier']:.4g}", "lr": f"{row['lr']:.4g}",
                 "depth factor": f"{row['depth_lr_factor']:.4g}", "shape factor": f"{row['shape_factor']:.4g}",
                 "effective lr": f"{row['effective_lr']:.4g}", "update": update,
                 "weight decay": f"{row['weight_decay']:.4g}" if row["decay_factor"] else "off",
                 "decay/step": f"{row['decay_per_step']:.4g}" if row["decay_factor"] else "off"}
        table.add_row(*(cells[c] for c in columns))
    if cfg.model.hf is not None:
        out.print(hf_header(cfg, plan), markup=False, highlight=False)
    out.print(table)
    out.print(decay_line(cfg, plan), markup=False, highlight=False)
    warn_model(cfg)
    if plan.depth_alpha:
        out.print(depth_table(plan))
    else:
        out.print("depth rules: off (parametrization.depth_alpha=0: no residual scaling, every depth factor 1)")


def hf_header(cfg: Config, plan: Plan) -> str:
    """What the Hugging Face model was built with: its class and the config keywords mutransfer set."""
    from ..hf.architectures import ARCHITECTURES
    from ..hf.build import config_kwargs
    from ..train.data import vocab_size

    arch = ARCHITECTURES[cfg.model.hf.architecture]
    sizes = config_kwargs(cfg.model, vocab_size(cfg.data))
    set_keys = ", ".join(f"{key}={value}" for key, value in sizes.items())
    tied = ("tied: one role serves the embedding and the readout (their table rows agree)" if cfg.model.tie_embeddings
            else "untied (model.tie_embeddings=false, the default: the two ends scale differently)")
    return (f"transformers {arch.model_class}({arch.config_class}({set_keys})), randomly initialised by the "
            f"table; embeddings {tied}; {len(plan.params)} parameters")


def decay_line(cfg: Config, plan: Plan) -> str:
    """Weight decay in one line: the rule and its formula, λ or τ, the width exponents and the roles it reaches."""
    from ..schema import ROLES
    from ..table.decay import RULE_FORMULAS, decay_on

    opt = cfg.optimizer
    on = [role for role in ROLES.names() if opt.decayed[role]]
    off = [role for role in ROLES.names() if role not in on]
    reach = f"on for {', '.join(on) or 'no role'}" + (f", off for {', '.join(off)}" if off else "")
    if not decay_on(opt):
        return f"weight decay: off (optimizer.weight_decay=0); with λ > 0 it is {reach} (optimizer.decayed)"
    rule = plan.weight_decay_rule
    exponents = ", ".join(f"{role} {cfg.parametrization.roles[role].wd:g}" for role in on) or "—"
    tau = opt.weight_decay_timescale
    given = (f"τ={tau:g} of T={plan.steps} steps: a step at the peak decays 1/(τ·T)={1 / (tau * plan.steps):.4g}"
             if tau is not None else f"λ={opt.weight_decay:g}")
    return (f"weight decay: {rule} ({RULE_FORMULAS[rule]}), {given}, × m^-wd with wd: {exponents}; {reach} "
            "(optimizer.decayed)")


def depth_table(plan: Plan) -> Table:
    """The depth exponents (of m_L = depth / base_depth) of every role's in-block parameters, per optimizer
    family, at the plan's α (> 0); parameters outside the blocks (embedding, final norm, LM head) have none."""
    from rich.table import Table

    from ..schema import FAMILIES, ROLES
    from ..table.rules import depth_exponents

    alpha = plan.depth_alpha
    title = (f"depth {plan.depth} (base {plan.base_depth}, m_L={plan.depth_ratio:g}), depth_alpha {alpha:g}: "
             f"residual branches × {plan.branch_multiplier:.4g}")
    table = Table(title=title)
    eps = next(family for family in FAMILIES if family.scaled_eps)
    for column in ("role", "in-block parameters", *(f"lr exponent ({f.exponents})" for f in FAMILIES),
                   f"eps exponent ({eps.exponents})", "init exponent"):
        table.add_column(column, justify="left" if column in ("role", "in-block parameters") else "right")
    rules = {family.name: depth_exponents(family, alpha) for family in FAMILIES}
    for role in ROLES.names():
        inside = sum(p.in_block for p in plan.params if p.role == role)
        lr = [f"{rules[f.name].lr:+g}" if inside else "—" for f in FAMILIES]
        table.add_row(role, str(inside), *lr, f"{rules[eps.name].eps:+g}" if inside else "—",
                      f"{rules[eps.name].init:+g}" if inside else "—")
    return table
