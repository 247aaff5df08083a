"""Which tests exercise each module: the Markdown table docs/development.md holds ("Tests by module"), computed
from the import statements of tests/test_*.py (a test that drives a module through the command line only, and
imports nothing from it, is not listed against it).

    python scripts/test_map.py
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules() -> list[str]:
    """Every module of the package, dotted, sorted (``__init__`` files and ``__main__`` left out)."""
    package = ROOT / "mutransfer"
    return sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in package.rglob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))


def imported(test: Path, known: set[str]) -> set[str]:
    """The package's modules a test file imports (``from mutransfer.x import y`` counts ``mutransfer.x``, and
    ``mutransfer.x.y`` when that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(test.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name for name in names if name in known}
    return found


def table() -> str:
    known = set(modules())
    tests = {path.name: imported(path, known) for path in sorted((ROOT / "tests").rglob("test_*.py"))}
    lines = ["| module | tests that import it |", "|---|---|"]
    for module in sorted(known):
        users = [name.removesuffix(".py") for name, used in tests.items() if module in used]
        lines.append(f"| `{module.removeprefix('mutransfer.')}` | {', '.join(users) or '— (through the CLI)'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
