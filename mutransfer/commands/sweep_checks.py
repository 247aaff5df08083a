"""What a sweep checks before it trains: every trial's config composed (a bad override or width fails before torch
loads), what a composed config cannot say alone (stacked trials of a Hugging Face model or a mixture of experts,
trunks, each corpus against what the trials read), and a spec's optional short coordinate check of every setup."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

from ..errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from ..schema import Config
    from ..sweep.plan.keys import StudyKey
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.spec.sweep_spec import SweepSpec

__all__ = ["compose_trials", "validate_trials", "check_trials", "precheck", "report_precheck"]


def compose_trials(plan: SweepPlan) -> list[tuple[StudyKey, Config]]:
    """Each study's key with its trial config at the first grid point: a bad override or width fails here, before
    torch is imported."""
    from ..sweep.plan.trial import trial_config

    return [(key, trial_config(plan.spec, key, key.search.grid()[0])) for key in plan.studies]


def validate_trials(spec: SweepSpec, warned: Optional[set[str]] = None,
                    composed: Optional[list[tuple[StudyKey, Config]]] = None) -> dict[str, Any]:
    """Compose every (setup, width) config once (``composed``, when the caller has) so a bad override or width fails
    before any training; check each corpus against what the trials read, warning once per data and horizon that
    reads more than one epoch (once across calls that share ``warned``). Returns each setup's config."""
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.plan.trial import setup_configs

    check_trials(spec, compose_trials(SweepPlan.of(spec)) if composed is None else composed, warned)
    return setup_configs(spec)


def check_trials(spec: SweepSpec, composed: list[tuple[StudyKey, Config]], warned: Optional[set[str]] = None) -> None:
    """What a composed config cannot say alone: model=hf or model=moe with stacked trials, trunks the schedule cannot branch,
    each corpus against what the trials read (an epoch warning once across calls that share ``warned``)."""
    from ..train.data import Corpora, check_validation_split, epochs_warning
    from .parallel_checks import check_parallel
    from ..train.trunk import trunk_problem

    corpora = Corpora()
    warned = set() if warned is None else warned
    for key, cfg in composed:
        if (cfg.model.hf is not None or cfg.model.moe is not None) and spec.batch_trials not in ("auto", 1):
            raise UserError(f"batch_trials={spec.batch_trials} stacks learning-rate trials of the built-in GPT, "
                            f"not model={'hf' if cfg.model.hf is not None else 'moe'} (setup {key.setup})",
                            "set batch_trials=1 (or auto)")
        if spec.devices_per_trial > 1:
            check_parallel(cfg, spec.devices_per_trial)
        problem = trunk_problem(cfg.train, spec.listed("steps")) if spec.branches(cfg.train) else None
        if problem is not None:
            raise UserError(*problem)
        corpus = corpora.get(cfg.data, cfg.train.seq_len)
        check_validation_split(corpus, cfg.data, cfg.train)
        warning = epochs_warning(corpus, cfg.train)
        if warning and warning not in warned:
            print(f"warning: {warning}", file=sys.stderr)
            warned.add(warning)


def precheck(spec: SweepSpec, steps: int = 3) -> dict[str, list[str]]:
    """``coord_check: true`` in a spec: a short coordinate check of every setup across the spec's widths."""
    from ..analysis.stability import judge
    from ..config import compose
    from ..train.coordcheck import coord_check
    from ..train.data import load_corpus

    unstable: dict[str, list[str]] = {}
    if spec.model:
        return unstable
    for setup in spec.setups:
        cfg = compose([*setup.overrides, *spec.overrides, f"model.width={spec.widths[0]}"])
        table = coord_check(cfg, load_corpus(cfg.data, cfg.train.seq_len), spec.widths, steps, cfg.optimizer.lr,
                            [spec.seeds[0]])
        modules = judge(table)["modules"] if len(spec.widths) > 1 else {}
        unstable[setup.label] = [m for m, e in modules.items() if e["verdict"] != "stable"]
    return unstable


def report_precheck(out: Console, spec: SweepSpec) -> None:
    for label, unstable in precheck(spec).items():
        if unstable:
            out.print(f"[bold red]warning:[/] coord check of setup '{label}': not stable: {', '.join(unstable)} "
                      "— its optimum may not transfer (see `mutransfer coord-check`)")
        else:
            out.print(f"coord check of setup '{label}': every module stable")
