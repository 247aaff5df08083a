"""mutransfer: tune a language model's learning rate at small widths and transfer it to large ones.

The public API is imported lazily so that ``import mutransfer`` (and ``mutransfer --help``) stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["parametrize", "Config", "Plan", "ParamPlan", "GPT", "SteepestDescent", "msign", "compose", "build_model",
           "train_model", "train_trials", "attach_multipliers", "UserError", "__version__"]

__version__ = "0.1.0"

_EXPORTS = {
    "parametrize": "api",
    "attach_multipliers": "parametrization",
    "Config": "schema",
    "Plan": "parametrization",
    "ParamPlan": "parametrization",
    "GPT": "model",
    "SteepestDescent": "optim",
    "msign": "optim",
    "compose": "config",
    "build_model": "build",
    "train_model": "train",
    "train_trials": "train",
    "UserError": "errors",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'mutransfer' has no attribute {name!r}")
