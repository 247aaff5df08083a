"""docs/cli.md, the command-line reference, rendered from the Typer app itself: every command, its arguments and
every option with its default and help text.

    python scripts/cli_doc.py [--out docs/cli.md]

``tests/project/test_docs.py`` renders it again and fails when the page differs, so the page lists exactly the options the
app has.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import typer.main

from mutransfer.cli import app

ROOT = Path(__file__).resolve().parents[1]
INTRO = """# Command-line reference

Every command and option of `mutransfer`, rendered from the program by `python scripts/cli_doc.py` (a test checks
that this page is what it renders). `mutransfer COMMAND --help` prints the same. The words `overrides` take are
config keys ([configuration](configuration.md)) or, for `sweep`, spec keys ([sweeps](sweeps.md#specs)). Bad input
gets one line naming the key and the fix, exit code 2, and nothing on disk changes
([bad input and faults](robustness.md)). `mutransfer --version` prints the version.
"""


def _cell(text: str) -> str:
    """Help text as one table cell: ``|`` escaped for the table, ``<`` and ``>`` for the browser (``runs/<spec
    name>`` would otherwise be read as a tag and vanish)."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _spec_help() -> str:
    """``sweep``'s spec argument as ``--help`` shows it: with the shipped specs' names, read from ``sweeps/``."""
    from mutransfer.sweep.spec.sweep_spec import shipped_specs

    names = ", ".join(f"`{name}`" for name in shipped_specs())
    return f"Sweep spec: a YAML path or a shipped name: {names} ([shipped specs](sweeps.md#shipped-specs))."


def _is_argument(param: Any) -> bool:
    return not any(opt.startswith("-") for opt in param.opts)


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return "off"
    default = param.default
    if default is None or default == () or default == []:
        return "—"
    return f"`{default}`"


def command_section(name: str, command: Any) -> list[str]:
    usage = [p.name for p in command.params if _is_argument(p)]
    lines = [f"## `mutransfer {name}`", "", _cell(command.help or ""), "",
             f"`mutransfer {name}{''.join(f' [{u}]' for u in usage)} [OPTIONS]`", "",
             "| argument or option | default | what it does |", "|---|---|---|"]
    for param in command.params:
        if _is_argument(param):
            label = f"`{param.name}`" + (" (any number)" if param.nargs == -1 else "")
            help_text = getattr(param, "help", None) or ""
            if name == "sweep" and param.name == "spec":
                lines.append(f"| {label} | {_default(param)} | {_spec_help()} |")
                continue
        else:
            label = ", ".join(f"`{opt}`" for opt in param.opts) + (" (required)" if param.required else "")
            help_text = param.help or ""
            if param.envvar:
                help_text += f" Environment variable: `{param.envvar}`."
        lines.append(f"| {label} | {_default(param)} | {_cell(help_text)} |")
    return lines + [""]


def render() -> str:
    group: Any = typer.main.get_command(app)
    parts = [INTRO]
    for name in group.commands:
        parts.append("\n".join(command_section(name, group.commands[name])))
    return "\n".join(parts).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "cli.md")
    args = parser.parse_args()
    args.out.write_text(render())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
