"""Per-role constants as searched quantities: a role's forward multiplier, init scale or LR multiplier (and AdamW's
ε), each searched as a log2 factor on its shipped value, so that a rule such as ``1/fan_in`` stays a rule, scaled,
and "no change" is the factor 1 (log2 factor 0). Which sets of constants can be told apart: under an optimizer
whose step ignores the gradient's scale (Adam, Muon) a role's multiplier, init and LR multiplier have one
symmetry (the multiplier divided by θ, the init and the LR multiplied by θ give the same function at every step;
the abc symmetry of Yang & Hu, "Tensor Programs IV"), so at most two of them per role. Pure data, no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..errors import UserError, did_you_mean
from ..registry.families import OptimizerFamily
from ..schema import LR_KEY, ROLES

__all__ = ["CONSTANT_KINDS", "MAX_CONSTANTS", "MAX_PER_ROLE", "EPS_KEY", "Constant", "parse_constant",
           "check_constants", "constant_keys", "scaled", "RULE_FACTOR", "coordinate_stages"]

CONSTANT_KINDS = ("multiplier", "init", "lr_mult")
"""The per-role constants of the optimizer config (``optimizer.<kind>.<role>``)."""
EPS_KEY = "optimizer.eps"
"""AdamW's ε: a constant of its own, searched only where the setup's optimizer is AdamW."""
MAX_CONSTANTS = 4
MAX_PER_ROLE = 2
RULE_FACTOR = "*"
"""How a scaled rule is written: ``0.5*1/fan_in`` is half of ``1/fan_in`` (``table.rules.base_value``)."""


@dataclass(frozen=True)
class Constant:
    """One searched constant: ``optimizer.<kind>.<role>``, or AdamW's ε (kind ``eps``, no role)."""

    kind: str
    role: str = ""

    @property
    def key(self) -> str:
        return EPS_KEY if self.kind == "eps" else f"optimizer.{self.kind}.{self.role}"


def constant_keys() -> list[str]:
    """Every key a constant search may name."""
    return [f"optimizer.{kind}.{role}" for kind in CONSTANT_KINDS for role in ROLES.names()] + [EPS_KEY]


def parse_constant(key: str) -> Constant:
    """The constant ``key`` names; anything else is refused in one line, with the nearest key."""
    if key == EPS_KEY:
        return Constant("eps")
    parts = key.split(".")
    if len(parts) == 3 and parts[0] == "optimizer" and parts[1] in CONSTANT_KINDS and parts[2] in ROLES:
        return Constant(parts[1], parts[2])
    raise UserError(f"'{key}' is not a per-role constant",
                    f"{did_you_mean(key, constant_keys())}search optimizer.<{'|'.join(CONSTANT_KINDS)}>.<role> "
                    f"(roles: {', '.join(ROLES.names())}) or {EPS_KEY}")


def check_constants(keys: Sequence[str], family: OptimizerFamily, inits: Mapping[str, str],
                    where: str = "constants") -> list[Constant]:
    """The constants ``keys`` name, checked for a setup whose optimizer is ``family`` and whose shipped inits are
    ``inits`` (role → rule): at most ``MAX_CONSTANTS``, each once, at most ``MAX_PER_ROLE`` per role, ε only under
    an optimizer with a per-role ε (AdamW), no init of a role initialised at zero (a factor on zero is zero)."""
    constants = [parse_constant(k) for k in keys]
    if not constants:
        raise UserError(f"{where}: no constant to search", "name one to four, e.g. [optimizer.lr_mult.readout]")
    if len(constants) > MAX_CONSTANTS:
        raise UserError(f"{where}: {len(constants)} constants; at most {MAX_CONSTANTS} can be tuned at once",
                        f"keep the {MAX_CONSTANTS} you expect to matter most")
    if len(set(constants)) != len(constants):
        raise UserError(f"{where} names a constant twice", "name each once")
    for role in ROLES.names():
        kinds = [c.kind for c in constants if c.role == role]
        if len(kinds) > MAX_PER_ROLE:
            raise UserError(f"{where}: {', '.join(f'optimizer.{k}.{role}' for k in kinds)} cannot be told apart: under "
                            "a step that ignores the gradient's scale (Adam, Muon) one of a role's multiplier, init and "
                            "LR multiplier is absorbed by the other two",
                            f"search at most {MAX_PER_ROLE} of them for role {role}")
    for c in constants:
        if c.kind == "eps" and not family.scaled_eps:
            raise UserError(f"{where}: {EPS_KEY} is AdamW's ε; this setup's optimizer has none",
                            "search it only in an AdamW setup")
        if c.kind == "init" and _is_zero(inits.get(c.role, "1.0")):
            raise UserError(f"{where}: optimizer.init.{c.role} is 0 (a zero init), and a factor on zero is zero",
                            f"search another constant of role {c.role}")
    return constants


def _is_zero(rule: str) -> bool:
    try:
        return float(rule) == 0.0
    except ValueError:
        return False


def scaled(shipped: str | float, log2_factor: float) -> str | float:
    """A shipped value times 2^``log2_factor``: a number as a number, a rule as ``factor*rule``."""
    factor = 2.0**log2_factor
    if isinstance(shipped, (int, float)):
        return float(shipped) * factor
    try:
        return float(shipped) * factor
    except ValueError:
        pass
    if log2_factor == 0:
        return shipped
    head, _, rule = shipped.partition(RULE_FACTOR)
    if rule:
        return f"{float(head) * factor:.9g}{RULE_FACTOR}{rule}"
    return f"{factor:.9g}{RULE_FACTOR}{shipped}"


def coordinate_stages(keys: Sequence[str], rounds: int, lr_key: str = LR_KEY) -> list[str]:
    """The keys of the coordinate rounds in order: the LR, then each constant, each round, then the LR again."""
    return [key for _ in range(rounds) for key in (lr_key, *keys)] + [lr_key]
