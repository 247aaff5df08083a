"""The weight decay a transfer carries: the decay a sweep searched (``optimizer.weight_decay`` or
``optimizer.weight_decay_timescale``, best at each point's LR optimum), predicted at the target by the same rules
as the learning rate, under the setup's decay rule."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

from ..analysis.prediction import Prediction, predict_setup
from ..analysis.result import Summary
from ..analysis.trial_table import key_value
from ..errors import UserError
from ..schema import ROLES, Config
from ..table.decay import DECAY_OFF_VALUES, DECAY_SYMBOLS, decay_rule
from ..words import DecayVerdict
from ..words import Verdict

__all__ = ["DecayTransfer", "decay_rule_name", "decay_search", "decay_setups", "predict_decay", "with_decay",
           "decay_warnings", "decay_verdicts"]


@dataclass(frozen=True)
class DecayTransfer:
    """The decay predicted at the target: its key, its value, the prediction (log2 for a log2 search) and what
    the sweep measured of its effect."""

    key: str
    value: float
    prediction: Prediction
    log2: bool
    verdict: Optional[str]
    effects: Mapping[str, int]

    def as_dict(self) -> dict[str, Any]:
        interval = self.prediction.interval
        return {"key": self.key, "value": self.value, "verdict": self.verdict, "decay_effect": dict(self.effects),
                "range": [key_value(v, self.log2) for v in interval] if interval is not None else None,
                "log2": self.log2,
                "prediction": self.prediction.as_dict()}


def decay_rule_name(cfg: Config) -> str:
    """A setup's decay rule in words: the rule, then any role's λ width exponent and any role it does not
    decay against the defaults (``lr_scaled``, ``lr_scaled wd hidden -0.5 readout off``, ``independent``); a role
    ``like`` another is named only where it differs from that role."""
    rows, decayed = cfg.parametrization.roles, cfg.optimizer.decayed
    own = [role for role in ROLES if role.like is None]
    differing = [role for role in ROLES if role.like is not None]
    parts = [decay_rule(cfg.optimizer)]
    parts += [f"wd {role.name} {rows[role.name].wd:g}" for role in own if rows[role.name].wd]
    parts += [f"wd {role.name} {rows[role.name].wd:g}" for role in differing
              if rows[role.name].wd != rows[str(role.like)].wd]
    parts += [f"{role.name} {'on' if decayed[role.name] else 'off'}" for role in own
              if decayed[role.name] != role.decayed]
    parts += [f"{role.name} {'on' if decayed[role.name] else 'off'}" for role in differing
              if decayed[role.name] != decayed[str(role.like)]]
    return " ".join(parts)


def decay_search(record: Mapping[str, Any], label: str) -> Optional[Mapping[str, Any]]:
    """The setup's decay search in the sweep's record (its key and scale), or None."""
    for setup in (record.get("spec") or {}).get("setups", []):
        if setup.get("label") == label:
            return next((s for s in setup.get("search", []) if s.get("key") in DECAY_OFF_VALUES), None)
    return None


def decay_setups(record: Mapping[str, Any], configs: Mapping[str, Config], rule: str) -> list[str]:
    """The setups that searched a decay under the rule named ``rule`` (``decay_rule_name``)."""
    with_decay = {label: decay_rule_name(cfg) for label, cfg in configs.items() if decay_search(record, label)}
    chosen = [label for label, name in with_decay.items() if name == rule]
    if not chosen:
        names = sorted(set(with_decay.values()))
        raise UserError(f"--decay-rule '{rule}' names no setup's decay rule in this sweep",
                        f"choose one of: {'; '.join(names)}" if names else
                        "sweep a decay first (sweeps/weight_decay.yaml)")
    return chosen


def predict_decay(summary: Summary, record: Mapping[str, Any], label: str, target: Mapping[str, int],
                  tolerance: float) -> Optional[DecayTransfer]:
    """The decay at ``target`` (width, depth, steps) for setup ``label``, or None when the sweep searched none."""
    search = decay_search(record, label)
    if search is None:
        return None
    key = search["key"]
    info = summary.setups(key).get(label)
    if info is None or not info.line.estimated():
        return None
    prediction = predict_setup(info, target, False, tolerance)
    log2 = search.get("scale") == "log2"
    return DecayTransfer(key, key_value(prediction.log2_lr, log2), prediction, log2, info.verdict,
                         info.line.decay_counts or {})


def with_decay(cfg: Config, decay: DecayTransfer) -> Config:
    """``cfg`` with the predicted decay set (a timescale turns λ off, and λ the timescale)."""
    if not math.isfinite(decay.value) or decay.value <= 0:
        raise UserError(f"the predicted {decay.key} is {decay.value:g}", "check the sweep's decay search")
    if decay.key == "optimizer.weight_decay":
        return replace(cfg, optimizer=replace(cfg.optimizer, weight_decay=decay.value, weight_decay_timescale=None))
    return replace(cfg, optimizer=replace(cfg.optimizer, weight_decay=0.0, weight_decay_timescale=decay.value))


def decay_warnings(label: str, decay: DecayTransfer) -> list[str]:
    """What a reader of the transfer file should know about its decay: no measured effect, or a decay whose
    optimum does not stay put."""
    symbol = DECAY_SYMBOLS.get(decay.key, decay.key)
    out = []
    effect, points = decay.effects.get(DecayVerdict.EFFECT, 0), sum(decay.effects.values())
    if points and not effect:
        out.append(f"setup '{label}': the best {symbol} beat decay off by more than the seeds' noise at none of the "
                   f"{points} swept points (decay_effect): {symbol} = {decay.value:.4g} is carried, but the sweep "
                   "did not show it helps")
    if decay.verdict != Verdict.TRANSFERS:
        out.append(f"setup '{label}': the optimal {symbol} is '{decay.verdict}' across the swept points; its "
                   "predicted range says how far to trust it")
    return out


def decay_verdicts(summary: Summary) -> dict[str, str]:
    """Each setup's verdict on its searched decay's optimum (setups without a decay search left out)."""
    return {label: info.verdict for key in DECAY_OFF_VALUES for label, info in summary.setups(key).items()}
