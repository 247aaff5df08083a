"""The measured numbers the documentation shows, kept in one file, ``docs/data/numbers.yaml``: one section per
script that measures them, each number stored as the text a page shows (``35 s``, ``67 trials``,
``-0.06 [-0.21, +0.08]``).

A script that measures writes its section with ``write_numbers``; a page shows a number as ``{{ section.key }}``,
which the site's build hook (``scripts/mkdocs_hooks.py``) replaces with its text and which fails the build when the
file has no such number. The README, read raw on a repository page, keeps its literals; ``tests/project/test_docs.py``
compares them with this file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import yaml

__all__ = ["MEASURED", "NUMBERS", "QUOTED_OR_REFERENCE", "REFERENCE", "duration_text", "kept_run_numbers",
           "prose_lines", "read_numbers", "references", "shown", "unowned_literals", "write_numbers"]

NUMBERS = Path(__file__).resolve().parents[1] / "docs" / "data" / "numbers.yaml"
REFERENCE = re.compile(r"\{\{\s*([a-z0-9_]+)\.([a-z0-9_]+)\s*\}\}")
"""A page's reference to a number: ``{{ section.key }}``."""
QUOTED_OR_REFERENCE = re.compile(r"(`[^`\n]*`)|" + REFERENCE.pattern)
"""Inline code (group 1, left as written) or a reference (section and key)."""
SIGNED = r"[−+-]?\d+\.\d+"
MEASURED = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:–\d+(?:\.\d+)?)?\s?(?:ms|s|min|h|seconds?|minutes?|hours?)\b"  # a duration
    r"|(?<![\w.-])\d+(?:/\d+)? (?:[a-z-]+ )?trials\b"                                        # a trial count
    rf"|{SIGNED}\s*\[{SIGNED},\s*{SIGNED}\]|\bslopes? (?:is )?(?:about )?{SIGNED}")                     # a slope
"""A measured number written as a literal: a duration, a trial count, or a slope (with or without its interval)."""


def duration_text(seconds: float) -> str:
    """How the docs write a measured duration: whole seconds under 10 s, to 5 s under 90 s, else minutes (to a half
    under 10 min)."""
    if seconds < 10:
        return f"{max(1, round(seconds)):.0f} s"
    if seconds < 90:
        return f"{5 * round(seconds / 5):.0f} s"
    minutes = seconds / 60
    return f"{round(minutes * 2) / 2:g} min" if minutes < 10 else f"{round(minutes):.0f} min"


def kept_run_numbers(folder: Path) -> dict[str, str]:
    """What a run kept under docs/data/ cost: ``trials`` and ``training`` (its trials' own seconds, summed) from
    its trials.csv, and ``verify_trials`` and ``verify_training`` from its verify.csv where it has one."""
    import pandas as pd

    out = {}
    for table, prefix in (("trials.csv", ""), ("verify.csv", "verify_")):
        if (folder / table).exists():
            trials = pd.read_csv(folder / table)
            out[f"{prefix}trials"] = f"{len(trials)} trials"
            out[f"{prefix}training"] = duration_text(float(trials["seconds"].sum()))
    return out


def read_numbers(path: Path = NUMBERS) -> dict[str, dict[str, str]]:
    """Section → key → the text a page shows."""
    if not path.exists():
        return {}
    return {section: dict(body["numbers"]) for section, body in (yaml.safe_load(path.read_text()) or {}).items()}


def write_numbers(section: str, script: str, numbers: Mapping[str, str], path: Path = NUMBERS) -> None:
    """Replace ``section``'s numbers (measured by ``script``, a path from the repository's root) and keep the
    others."""
    bad = [key for key in [section, *numbers] if not re.fullmatch(r"[a-z0-9_]+", key)]
    if bad:
        raise ValueError(f"number names are lower-case words joined by _, not {', '.join(bad)}")
    kept = yaml.safe_load(path.read_text()) if path.exists() else {}
    kept = kept or {}
    kept[section] = {"script": script, "numbers": {key: str(text) for key, text in numbers.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# Written by the script each section names; run it again to change a number (scripts/doc_numbers.py).\n"
    path.write_text(header + yaml.safe_dump(dict(sorted(kept.items())), sort_keys=True, allow_unicode=True,
                                            width=120))


def prose_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, text) of the page's prose and of its shell commands' comments; not the rest of fenced code
    (commands, printed output), table rows, inline code (quoted commands and output, which may span a line break)
    or references."""
    kept, comments, fence = [], {}, None
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line.strip()[3:]
            kept.append("")
        elif fence is not None:
            if fence in ("bash", "sh", "console") and "#" in line:
                comments[number] = line.split("#", 1)[1]
            kept.append("")
        else:
            kept.append("" if line.lstrip().startswith("|") else line)
    prose = re.sub(r"`(?:[^`\n]|\n(?![ \t]*\n))*`", lambda span: re.sub(r"[^\n]", " ", span.group(0)), "\n".join(kept))
    lines = dict(enumerate(prose.split("\n"), 1)) | comments
    return [(number, REFERENCE.sub("", text)) for number, text in sorted(lines.items()) if text.strip()]


def unowned_literals(markdown: str, settings: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """(line number, literal) of each measured number the prose writes out instead of referring to the numbers
    file. Not one: a literal that a table of the same page shows (a table is its script's printout, which the docs
    tests compare with the script), or one inside one of ``settings`` (phrases that state a setting of the code,
    such as a timeout, not a measurement)."""
    def plain(text: str) -> str:
        return text.replace("−", "-").replace("+", "")

    tables = plain(" ".join(line for line in markdown.splitlines() if line.lstrip().startswith("|")))
    found = []
    for number, line in lines_without(prose_lines(markdown), settings):
        found += [(number, match.group(0)) for match in MEASURED.finditer(line)
                  if not re.search(rf"(?<![\w.]){re.escape(plain(match.group(0)))}(?![\w.])", tables)]
    return found


def lines_without(lines: list[tuple[int, str]], phrases: tuple[str, ...]) -> list[tuple[int, str]]:
    """``lines`` with each of ``phrases`` cut out (a phrase may span a line break of the page)."""
    text = "\n".join(line for _, line in lines)
    for phrase in phrases:
        text = re.sub(r"\s+".join(map(re.escape, phrase.split())), lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return [(number, line) for (number, _), line in zip(lines, text.split("\n"))]


def references(markdown: str) -> list[tuple[str, str]]:
    """(section, key) of each reference the page makes; one inside inline code is quoted, not made."""
    return [(m.group(2), m.group(3)) for m in QUOTED_OR_REFERENCE.finditer(markdown) if m.group(1) is None]


def shown(markdown: str, numbers: Mapping[str, Mapping[str, str]]) -> str:
    """``markdown`` with each ``{{ section.key }}`` outside inline code replaced by its text; a reference the file
    lacks raises ``KeyError`` naming it and the script that would write it."""
    def text(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        section, key = match.group(2), match.group(3)
        if key not in numbers.get(section, {}):
            raise KeyError(f"{{{{ {section}.{key} }}}}: docs/data/numbers.yaml has no such number; run the script "
                           f"that measures it (its section names it) or fix the reference")
        return numbers[section][key]

    return QUOTED_OR_REFERENCE.sub(text, markdown)
