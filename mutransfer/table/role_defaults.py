"""The per-role tables of a config completed for every registered role: a role a table leaves out gets the row of
the role it is ``like``, else the role's default (``registry.roles``). Pure, no torch."""

from __future__ import annotations

import dataclasses
from typing import Mapping, TypeVar

from ..schema import FAMILIES, ROLES, Config

__all__ = ["with_role_defaults", "keyed_names"]

V = TypeVar("V")
BASE_VALUE = "1.0"
"""A role's base init, LR factor (and, as a number, multiplier) when no table gives one."""


def keyed_names(kind: str) -> tuple[str, ...]:
    """The keys a mapping keyed by ``kind`` may hold (``schema.ROLE_KEYED``, ``schema.EXPONENT_KEYED``)."""
    if kind == "role":
        return ROLES.names()
    return tuple(dict.fromkeys(family.exponents for family in FAMILIES))


def _completed(table: Mapping[str, V], default: Mapping[str, V]) -> dict[str, V]:
    """``table`` with every registered role: a role it leaves out gets its ``like`` role's entry, else ``default``'s
    (a role with no default stays out, for the checks to name)."""
    out = dict(table)
    for role in ROLES:
        if role.name not in out:
            source = out.get(role.like) if role.like is not None else None
            value = source if source is not None else default.get(role.name)
            if value is not None:
                out[role.name] = value
    return out


def with_role_defaults(cfg: Config) -> Config:
    """``cfg`` with every role in ``optimizer.init``, ``lr_mult``, ``multiplier``, ``decayed`` and the preset's
    rows (a preset row a role cannot inherit stays out: ``config_checks`` refuses it)."""
    o, p = cfg.optimizer, cfg.parametrization
    names = ROLES.names()
    optimizer = dataclasses.replace(
        o, init=_completed(o.init, dict.fromkeys(names, BASE_VALUE)),
        lr_mult=_completed(o.lr_mult, dict.fromkeys(names, BASE_VALUE)),
        multiplier=_completed(o.multiplier, dict.fromkeys(names, 1.0)),
        decayed=_completed(o.decayed, {role.name: role.decayed for role in ROLES}))
    return dataclasses.replace(cfg, optimizer=optimizer,
                               parametrization=dataclasses.replace(p, roles=_completed(p.roles, {})))
