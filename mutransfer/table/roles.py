"""Roles for a user's parameters: glob patterns tried in order, the first match wins. Pure, no torch."""

from __future__ import annotations

import fnmatch
from typing import Mapping, Sequence

from ..schema import ROLES

__all__ = ["match_roles"]


def match_roles(names: Sequence[str], patterns: Mapping[str, str]) -> dict[str, str]:
    """Role of each parameter name: the first glob pattern that matches wins; unmatched names are an error."""
    for pattern, role in patterns.items():
        if role not in ROLES:
            raise ValueError(f"roles['{pattern}'] = '{role}' is not a role; use one of: {', '.join(ROLES.names())}")
    roles, unmatched = {}, []
    for name in names:
        role = next((r for pattern, r in patterns.items() if fnmatch.fnmatchcase(name, pattern)), None)
        if role is None:
            unmatched.append(name)
        else:
            roles[name] = role
    if unmatched:
        raise ValueError(f"no role pattern matches: {', '.join(unmatched)}; add patterns for them (e.g. '*': 'hidden')")
    return roles
