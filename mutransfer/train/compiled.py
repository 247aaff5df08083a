"""``train.compile``: whether a run's training steps go through ``torch.compile`` of its model (forward and
backward), and the callable they go through. Evaluations and the optimizer stay eager: compiling the optimizer's
per-role math (Newton–Schulz included) saved nothing measurable on CPU (docs/performance.md)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from typing import Any, Callable, Optional

import torch

from ..schema import TrainConfig

__all__ = ["AUTO_MIN_STEPS", "AUTO_WIDTHS", "compile_wanted", "compiler_problem", "TrainingForward"]

AUTO_MIN_STEPS = 6000
"""``auto`` compiles a CPU run of at least this many steps: compiling took 20–23 s cold and saved 4–21 ms a step at
widths 32–256 on 2 cores (``scripts/bench_compile.py``, docs/performance.md), paying back after 900–5,500 steps
of one shape; a sweep's trials (150 steps in the default sweep) stay eager."""
AUTO_WIDTHS = (32, 256)
"""The widths ``auto`` may compile at: those the break-even was measured at."""


def compiler_problem(device: torch.device) -> Optional[str]:
    """Why ``torch.compile`` cannot run here (no C++ compiler for CPU code, no Triton for CUDA), or None."""
    if device.type == "cuda":
        return None if importlib.util.find_spec("triton") is not None else "Triton is not installed"
    names = [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "clang++", "c++"]
    return None if any(shutil.which(name) for name in names) else f"no C++ compiler ({' or '.join(names)}) on PATH"


def compile_wanted(cfg: TrainConfig, width: int, device: torch.device) -> bool:
    """Whether the run asks for a compiled step: ``on``; ``auto`` where it was measured to pay (a CPU run of at
    least ``AUTO_MIN_STEPS`` steps at a width within ``AUTO_WIDTHS``); never with ``off``."""
    if cfg.compile != "auto":
        return cfg.compile == "on"
    low, high = AUTO_WIDTHS
    return device.type == "cpu" and cfg.steps >= AUTO_MIN_STEPS and low <= width <= high


class TrainingForward:
    """The model as the training steps call it: ``torch.compile`` of it when ``use``, else the model itself.

    Where no compiler is available, or compiling the first call fails, it warns once and runs eager;
    ``compiled`` says which way the steps ran. Compiled code is cached by torch per shape for the process's
    lifetime, so later runs of the same shape in one sweep worker reuse it."""

    def __init__(self, model: torch.nn.Module, use: bool, device: torch.device) -> None:
        self.model = model
        self._compiled: Optional[Callable[..., Any]] = None
        self._checked = False
        if use:
            problem = compiler_problem(device)
            if problem is None:
                self._compiled = torch.compile(model)
            else:
                _fallback(problem)

    @property
    def compiled(self) -> bool:
        return self._compiled is not None

    def __call__(self, x: torch.Tensor) -> Any:
        if self._compiled is None:
            return self.model(x)
        if self._checked:
            return self._compiled(x)
        try:
            out = self._compiled(x)
        except Exception as exc:  # the compiler's failures have no common base class
            self._compiled = None
            _fallback(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            return self.model(x)
        self._checked = True
        return out


def _fallback(reason: str) -> None:
    warnings.warn(f"train.compile: torch.compile is unavailable ({reason}); training eager. "
                  "Set train.compile=off to silence this.", RuntimeWarning, stacklevel=3)
