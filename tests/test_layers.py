"""The layering the package promises, checked in fresh interpreters: each layer imports only what it may."""

from __future__ import annotations

import subprocess
import sys

import pytest

RULES = [
    ("mutransfer.table.plan", ("torch", "optuna", "hydra", "rich", "typer")),
    ("mutransfer.train.loop", ("optuna", "hydra", "rich", "typer")),
    ("mutransfer.model.apply", ("optuna", "hydra", "rich", "typer")),
    ("mutransfer.analysis.summary", ("torch",)),
    ("mutransfer.analysis.draw", ("torch",)),
    ("mutransfer.analysis.stability", ("torch",)),
    ("mutransfer.cli", ("torch", "optuna", "matplotlib", "hydra", "pandas")),
]


@pytest.mark.parametrize("module, forbidden", RULES, ids=[rule[0] for rule in RULES])
def test_layer_imports(module: str, forbidden: tuple[str, ...]) -> None:
    code = (f"import sys, {module}; "
            f"print(','.join(m for m in {forbidden!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", f"{module} imports {proc.stdout.strip()}"
