"""The layering the package promises, checked in fresh interpreters: each layer imports only what it may."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


LAYERS = ("mutransfer", "words", "errors", "registry", "schema", "yamldoc", "precision", "files", "trial_io", "defaults", "fingerprint", "table",
          "optim", "analysis", "model", "hf", "model_kinds", "dist", "train", "config_checks", "config", "tracking", "sweep", "importing", "simulation", "transfer",
          "api", "trainer_api", "commands", "cli", "__main__")
"""The package's own units, bottom to top: each may import only the units before it (its own modules aside).
``mutransfer`` is the package's ``__init__`` (lazy exports only); ``hf`` sits above ``model`` (it plans a Hugging
Face model with ``model.build``), ``model_kinds`` above both (it chooses among the kinds of model), so ``train``
builds any model without importing ``hf``; ``config`` composes above ``train`` (it checks a run's budget); ``tracking``
sits below ``sweep`` and ``importing``, which log to a tracker and read one back."""


SKIPPED = {("train", "hf"): "training builds any model through ``model_kinds``, knowing no kind of model"}
"""Arrows down ``LAYERS`` that still may not be drawn, and why."""


def _unit(module: str) -> str:
    """``mutransfer.analysis.summary`` → ``analysis``; ``mutransfer.cli`` → ``cli``; ``mutransfer`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def own_imports(root: Path) -> dict[tuple[str, str], list[str]]:
    """Every arrow between two units of the package under ``root`` (``from``/``import`` statements anywhere in a
    module, those inside functions too) → the modules that draw it."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                targets.append(".".join(base + ([node.module] if node.module else [])))
            elif isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            for target in targets:
                if target.split(".")[0] == "mutransfer" and _unit(target) != _unit(module):
                    arrows.setdefault((_unit(module), _unit(target)), []).append(module)
    return arrows


def upward(arrows: dict[tuple[str, str], list[str]]) -> list[str]:
    """The arrows ``LAYERS`` forbids (to a unit not below the importer, from or to a unit it does not list, or one
    of ``SKIPPED``)."""
    rank = {unit: i for i, unit in enumerate(LAYERS)}
    return [f"{a} → {b} ({', '.join(sorted(set(mods)))})" for (a, b), mods in sorted(arrows.items())
            if a not in rank or b not in rank or rank[b] >= rank[a] or (a, b) in SKIPPED]


def test_the_package_s_own_arrows_run_one_way() -> None:
    """Every import between the package's own units points down ``LAYERS``: no cycle, nothing upward."""
    arrows = own_imports(Path(__file__).resolve().parents[2] / "mutransfer")
    assert ("train", "model_kinds") in arrows and ("hf", "model") in arrows, "the check sees the package's arrows"
    assert upward(arrows) == []


SWEEP_LAYERS = ("interrupts", "spec", "plan", "store", "run")
"""The sweep's layers, bottom to top: the spec, the plan built from it, the Optuna storage, the processes that run
it; ``interrupts`` serves every layer."""


def test_the_sweep_s_layers_import_only_those_below() -> None:
    """Inside ``mutransfer/sweep/``: no sub-package imports one above it (``sweep.plan`` never imports
    ``sweep.store`` or ``sweep.run``), those inside functions too."""
    root = Path(__file__).resolve().parents[2] / "mutransfer"
    rank = {unit: i for i, unit in enumerate(SWEEP_LAYERS)}
    arrows: dict[tuple[str, str], list[str]] = {}
    for path in sorted((root / "sweep").rglob("*.py")):
        parts = path.relative_to(root / "sweep").with_suffix("").parts
        if parts[0] == "__init__":
            continue
        package = ".".join(["mutransfer", "sweep", *parts[:-1]])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else [])).split(".")
                if target[:2] == ["mutransfer", "sweep"] and len(target) > 2:
                    arrows.setdefault((parts[0], target[2]), []).append(path.name)
    assert ("run", "store") in arrows and ("plan", "spec") in arrows, "the check sees the sweep's arrows"
    assert set(rank) >= {unit for arrow in arrows for unit in arrow}
    assert [arrow for arrow in arrows if arrow[0] != arrow[1] and rank[arrow[1]] > rank[arrow[0]]] == []


def test_the_arrow_check_refuses_an_upward_arrow() -> None:
    """The check fails on the arrows the package once had: the model builder importing ``hf``, training
    importing ``config`` and ``hf``."""
    arrows = {("model", "hf"): ["mutransfer.model.build"], ("train", "config"): ["mutransfer.train.trunk"],
              ("train", "hf"): ["mutransfer.train.coordcheck"], ("train", "table"): ["mutransfer.train.loop"]}
    assert upward(arrows) == ["model → hf (mutransfer.model.build)", "train → config (mutransfer.train.trunk)",
                              "train → hf (mutransfer.train.coordcheck)"]
