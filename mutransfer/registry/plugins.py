"""A user's entries for the registries, from modules named in ``MUTRANSFER_PLUGINS``: each is imported once in
every process the tool starts (the command, each sweep worker), and registers what it adds when imported."""

from __future__ import annotations

import importlib
import os
from typing import Mapping

from ..errors import UserError

__all__ = ["PLUGINS_ENV", "load_plugins"]

PLUGINS_ENV = "MUTRANSFER_PLUGINS"
"""Comma-separated importable modules that register optimizer families, axes or roles."""


def load_plugins(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Import every module ``MUTRANSFER_PLUGINS`` names (a module already imported is not imported again); the
    names imported. One line for a module that cannot be imported."""
    names = tuple(name.strip() for name in environ.get(PLUGINS_ENV, "").split(",") if name.strip())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UserError(f"{PLUGINS_ENV}: cannot import '{name}' ({exc})",
                            f"put the module on PYTHONPATH, or remove it from {PLUGINS_ENV}") from None
    return names
