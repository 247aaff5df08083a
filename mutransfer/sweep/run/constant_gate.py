"""What a spec's ``constants`` hold each study to: the coordinate rounds at their width run stage after stage, each
with the other keys at the best found so far; the learning-rate studies at every width wait for the rounds and
train with the tuned constants; a constant is measured again at the re-check widths, at each width's
learning-rate optimum, only when it matters at the tuning width. Each value comes from the trials alone (the
analysis of a finished study), so every worker and every machine finds the same."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional

import numpy as np
import optuna
from optuna.trial import TrialState

from ...analysis.constant_effect import constant_effect
from ...analysis.drift import PointTrials, setup_optima
from ...analysis.optimum import fit_halfwidth
from ...analysis.result import ConstantEffect
from ...analysis.thresholds import Thresholds
from ...schema import LR_KEY, config_value
from ...table.constants import scaled
from ...words import Effect, TrialStatus
from ..store.completion import study_finished
from ..store.attrs import TrialAttrs
from ..plan.keys import StudyKey
from ..plan.sweep_plan import SweepPlan, Wait
from ..spec.sweep_spec import SweepSpec
from .stage_gate import StageGate
from ..store.studies import live_trials, load_study, seed_of

__all__ = ["StageOutcome", "ConstantGate", "stage_outcome", "shipped_values"]


@dataclass(frozen=True)
class StageOutcome:
    """A finished 1-D stage: its optimum (log2; a bound at an edge counts; None when nothing trained fine) and,
    for a constant, its effect over factor 1."""

    x_star: Optional[float]
    effect: Optional[ConstantEffect] = None


def stage_outcome(study: optuna.Study, key: StudyKey, th: Thresholds = Thresholds()) -> StageOutcome:
    """The optimum of one study's trials as the analysis places it, and a constant's effect over factor 1."""
    rows = [(t.params[key.search.column], seed_of(t, key), attrs.val_loss, attrs.status)
            for t in live_trials(study, (TrialState.COMPLETE,)) if key.search.column in t.params
            for attrs in [TrialAttrs.of(t)]]
    if not rows:
        return StageOutcome(None)
    x = np.array([r[0] for r in rows], dtype=float)
    seed = np.array([r[1] for r in rows], dtype=int)
    loss = np.array([r[2] if isinstance(r[2], (int, float)) else math.nan for r in rows], dtype=float)
    ok = np.array([r[3] == TrialStatus.OK for r in rows]) & np.isfinite(loss)
    diverged = np.array([r[3] == TrialStatus.DIVERGED for r in rows])
    step = key.search.step
    optima, _, _ = setup_optima({key.width: PointTrials(x, seed, loss, ok, diverged)}, step,
                                fit_halfwidth(step, True, th), th)
    if not optima:
        return StageOutcome(None)
    best = optima[0]
    if key.search.key == LR_KEY:
        return StageOutcome(float(best.x_star))
    at_one = np.array([loss[(x == 0.0) & (seed == s) & ok].mean() for s in np.unique(seed[(x == 0.0) & ok])])
    return StageOutcome(float(best.x_star), constant_effect(best.best_loss, best.seed_best_losses, at_one,
                                                            th.effect_margin))


def shipped_values(spec: SweepSpec) -> dict[str, dict[str, Any]]:
    """Each setup's shipped value of every searched constant (a number or a rule), from its config."""
    from ..plan.trial import setup_config

    out: dict[str, dict[str, Any]] = {}
    assert spec.constants is not None
    for setup in spec.setups:
        cfg = setup_config(spec, setup.label, [*setup.overrides, *spec.overrides])
        out[setup.label] = {key: config_value(cfg, key) for key in spec.constants.keys}
    return out


class ConstantGate:
    """Holds studies to the order a spec's ``constants`` need and gives each the values it trains with."""

    def __init__(self, plan: SweepPlan, storage: optuna.storages.BaseStorage, prefix: str, optimum: StageGate,
                 th: Thresholds = Thresholds()) -> None:
        self.plan, self.storage, self.prefix, self.optimum, self.th = plan, storage, prefix, optimum, th
        self.outcomes: dict[str, StageOutcome] = {}

    @cached_property
    def shipped(self) -> dict[str, dict[str, Any]]:
        return shipped_values(self.plan.spec)

    def _outcome(self, key: StudyKey) -> Optional[StageOutcome]:
        """A study's outcome once it is finished (kept: a finished study's trials do not change), else None."""
        name = key.name(self.prefix)
        if name not in self.outcomes:
            study = load_study(self.storage, key, self.prefix)
            if not study_finished(study, key):
                return None
            self.outcomes[name] = stage_outcome(study, key, self.th)
        return self.outcomes[name]

    def _best(self, setup: str, before: Optional[int] = None) -> Optional[dict[str, float]]:
        """Each key's best (log2) from its latest stage before stage ``before`` (every stage when None); None
        while one of those stages runs."""
        best: dict[str, float] = {}
        for key in self.plan.stages(setup):
            if before is not None and key.stage is not None and key.stage >= before:
                break
            outcome = self._outcome(key)
            if outcome is None:
                return None
            if outcome.x_star is not None:
                best[key.search.key] = outcome.x_star
        return best

    def tuned(self, setup: str) -> Optional[dict[str, float]]:
        """The setup's tuned constants and LR at the tuning width (log2), once the rounds are finished."""
        return self._best(setup)

    def effect(self, setup: str, constant: str) -> Optional[ConstantEffect]:
        """A constant's effect at its last stage, once the rounds are finished."""
        last = [k for k in self.plan.stages(setup) if k.search.key == constant][-1]
        outcome = self._outcome(last)
        return outcome.effect if outcome is not None else None

    def ready(self, key: StudyKey) -> bool:
        """Whether ``key`` may train now: the stages it waits for are finished (a stage of the rounds), or its
        setup's rounds are (any other study)."""
        if self.plan.waits(key, Wait.EARLIER_STAGES):
            return self._best(key.setup, key.stage) is not None
        return not self.plan.waits(key, Wait.ROUNDS) or self.tuned(key.setup) is not None

    def skipped(self, key: StudyKey) -> bool:
        """A re-check study of a constant that does not matter at the tuning width: not trained."""
        constants = self.plan.spec.constants
        if constants is None or key.stage is not None or key.search.key not in constants.keys:
            return False
        effect = self.effect(key.setup, key.search.key) if self.tuned(key.setup) is not None else None
        return effect is not None and effect.verdict != Effect.MATTERS

    def overrides(self, key: StudyKey) -> list[str]:
        """The config overrides ``key``'s trials train with: the other keys at their best so far (a stage of the
        rounds), the tuned constants (a learning-rate study), or the tuned constants and the width's learning-
        rate optimum (a re-check), every constant as its shipped value times the factor."""
        if self.plan.spec.constants is None:
            return []
        best = self._best(key.setup, key.stage) if key.stage is not None else self.tuned(key.setup)
        values = dict(best or {})
        values.pop(key.search.key, None)
        if key.stage is None:
            values.pop(LR_KEY, None)
            if key.search.key != LR_KEY:
                lr = self.optimum.optimum(key)
                if lr is not None and not math.isnan(lr):
                    values[LR_KEY] = lr
        return [f"{name}={self.value(key.setup, name, x)}" for name, x in values.items()]

    def value(self, setup: str, name: str, x: float) -> Any:
        """The config value of searched value ``x`` of ``name``: 2^x for the LR, the shipped constant times 2^x."""
        if name == LR_KEY:
            return repr(2.0**x)
        return scaled(self.shipped[setup][name], x)
