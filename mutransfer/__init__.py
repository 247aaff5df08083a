"""mutransfer: tune a language model's learning rate at small widths and transfer it to large ones.

The public API is imported lazily so that ``import mutransfer`` (and ``mutransfer --help``) stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["parametrize", "Config", "Plan", "ParamPlan", "GPT", "SteepestDescent", "msign", "compose", "build_model",
           "build_optimizer", "initialize", "train_model", "train_trials", "attach_multipliers", "UserError",
           "trial", "report", "Trial", "__version__"]

__version__ = "0.8.0"

_EXPORTS = {
    "parametrize": "api",
    "attach_multipliers": "model.apply",
    "build_optimizer": "model.apply",
    "initialize": "model.apply",
    "Config": "schema",
    "Plan": "table.plan",
    "ParamPlan": "table.plan",
    "GPT": "model.gpt",
    "SteepestDescent": "optim.steepest",
    "msign": "optim.newton_schulz",
    "compose": "config",
    "build_model": "model_kinds",
    "train_model": "train.loop",
    "train_trials": "train.loop",
    "UserError": "errors",
    "trial": "trainer_api",
    "report": "trainer_api",
    "Trial": "trainer_api",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'mutransfer' has no attribute {name!r}")
