"""Weight decay per parameter: the rules, which roles decay, how λ scales with width, and the number a torch
parameter group takes. Pure math: an LR may be a float or a tensor of per-trial LRs (anything that divides).

With m = width / base_width, a decayed role's λ_p = λ · m^-wd (``parametrization.roles.<role>.wd``), and at
the schedule's factor s(t) one step does

    lr_scaled    p ← p − s(t)·η_p·λ_p·p    PyTorch's AdamW; Muon as Liu et al. apply it ("Muon is Scalable
                                           for LLM Training")
    independent  p ← p − s(t)·λ_p·p        Wortsman et al. ("Small-scale proxies for large-scale Transformer
                                           training instabilities"): the LR does not multiply it
    l2           g ← g + λ_p·p             SGD's L2 penalty, through the gradient (and its momentum)

``optimizer.weight_decay_timescale`` τ gives λ instead: the decay's averaging window is τ·T steps of a T-step
run, so one step decays s(t)/(τ·T) × m^-wd under either decoupled rule (Wang & Aitchison's τ_iter = 1/(ηλ),
"How to set AdamW's weight decay as you scale model and dataset size", with the LR folded in): λ_p =
m^-wd/(τ·T) under ``independent``, m^-wd/(η_p·τ·T) under ``lr_scaled``.
"""

from __future__ import annotations

import math
from typing import Any, Optional, TypeVar

from ..fingerprint import DECAY_OFF, config_later_keys, later_defaults, omit_at_defaults
from ..schema import FAMILIES, OptimizerConfig

__all__ = ["DECAY_OFF_VALUES", "DECAY_SYMBOLS", "DECAY_OFF_OVERRIDES", "DECAY_RULES",
           "RULE_FORMULAS", "decay_on", "decay_rule", "decay_problem",
           "decay_factor", "weight_decay", "group_weight_decay", "decay_per_step", "later_decay_keys",
           "omit_at_defaults"]

DECAY_RULES: tuple[str, ...] = ("lr_scaled", "independent", "l2")
RULE_FORMULAS: dict[str, str] = {"lr_scaled": "p ← p − s(t)·η_p·λ_p·p",
                                 "independent": "p ← p − s(t)·λ_p·p", "l2": "g ← g + λ_p·p"}

DECAY_OFF_VALUES: dict[str, float] = {"optimizer.weight_decay": 0.0, "optimizer.weight_decay_timescale": math.inf}
"""The keys that give the decay, each with its value when decay is off (no timescale: an infinite window)."""
DECAY_SYMBOLS: dict[str, str] = {"optimizer.weight_decay": "λ", "optimizer.weight_decay_timescale": "τ"}
DECAY_OFF_OVERRIDES: tuple[str, ...] = ("optimizer.weight_decay=0.0", "optimizer.weight_decay_timescale=null")
"""The config overrides that turn weight decay off."""

LR = TypeVar("LR")


def decay_on(opt: OptimizerConfig) -> bool:
    """Whether the optimizer decays at all (λ > 0 or a timescale)."""
    return opt.weight_decay > 0 or opt.weight_decay_timescale is not None


def decay_rule(opt: OptimizerConfig) -> str:
    """The rule in force: ``optimizer.weight_decay_rule``, or the optimizer's own (lr_scaled; l2 for SGD)."""
    return opt.weight_decay_rule or FAMILIES.named(opt.name, "optimizer").decay_rules[0]


def decay_problem(opt: OptimizerConfig) -> Optional[tuple[str, str]]:
    """(what is wrong, how to fix it) for decay settings that cannot work, or None."""
    if not opt.weight_decay >= 0:
        return f"optimizer.weight_decay={opt.weight_decay:g} is negative", "give λ >= 0 (0 turns decay off)"
    if opt.weight_decay_timescale is not None and not opt.weight_decay_timescale > 0:
        return (f"optimizer.weight_decay_timescale={opt.weight_decay_timescale:g} is not positive",
                "give τ > 0, the decay's window as a fraction of the run (e.g. 0.2), or null")
    rule = opt.weight_decay_rule
    if rule is not None and rule not in DECAY_RULES:
        return f"unknown optimizer.weight_decay_rule '{rule}'", f"choose one of: {', '.join(DECAY_RULES)}"
    allowed = FAMILIES.named(opt.name, "optimizer").decay_rules
    if decay_rule(opt) not in allowed:
        return (f"optimizer.weight_decay_rule={rule} cannot be applied by optimizer '{opt.name}'",
                f"use {' or '.join(allowed)} with {opt.name}")
    if opt.weight_decay_timescale is not None:
        if opt.weight_decay > 0:
            return (f"optimizer.weight_decay={opt.weight_decay:g} and optimizer.weight_decay_timescale="
                    f"{opt.weight_decay_timescale:g} both give the decay", "set one of them (the other to 0 / null)")
        if decay_rule(opt) == "l2":
            return ("optimizer.weight_decay_timescale needs a decoupled rule, but SGD applies l2",
                    "give optimizer.weight_decay instead")
    return None


def decay_factor(decayed: bool, m: float, wd: float) -> float:
    """λ_p / λ for a role: m^-wd where it decays, 0 where ``optimizer.decayed`` turns it off."""
    return m ** -wd if decayed else 0.0


def weight_decay(opt: OptimizerConfig, factor: float, lr: LR, steps: Optional[int]) -> LR | float:
    """λ_p in the rule's own units for a parameter with ``decay_factor`` ``factor`` and peak LR ``lr`` (η_p),
    in a run of ``steps`` steps (needed only by a timescale)."""
    tau = opt.weight_decay_timescale
    if tau is None:
        return factor * opt.weight_decay
    if steps is None:
        raise ValueError("optimizer.weight_decay_timescale needs the run's length; give the number of steps")
    per_step = factor / (tau * steps)
    return per_step / lr if decay_rule(opt) == "lr_scaled" and factor else per_step


def group_weight_decay(opt: OptimizerConfig, factor: float, lr: LR, steps: Optional[int]) -> LR | float:
    """The ``weight_decay`` a torch parameter group takes (``torch.optim.AdamW``, ``SGD``, ``SteepestDescent``
    multiply it by the group's scheduled LR, or add λ·p to the gradient for SGD): λ_p, or λ_p / η_p under
    ``independent`` so that the LR the optimizer multiplies by leaves s(t)·λ_p."""
    value = weight_decay(opt, factor, lr, steps)
    return value / lr if decay_rule(opt) == "independent" and factor else value


def decay_per_step(opt: OptimizerConfig, factor: float, lr: LR, steps: Optional[int]) -> LR | float:
    """The fraction of a parameter one step at the schedule's peak removes: η_p·λ_p (lr_scaled, and l2 before
    SGD's momentum), λ_p (independent)."""
    value = weight_decay(opt, factor, lr, steps)
    return value if decay_rule(opt) == "independent" else value * lr


def later_decay_keys() -> dict[str, Any]:
    """The config keys weight decay added (dotted), at their defaults: a config leaves them out at these values
    while decay is off (``fingerprint.config_later_keys`` declares them)."""
    return later_defaults(config_later_keys(), DECAY_OFF)
