"""The docs cannot rot silently: links resolve, README commands exist with the options they use, the
README's error example is what the tool prints, and the README stays short."""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from conftest import load_script
from mutransfer.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 220
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [target for target in LINK.findall(text) if "://" not in target and not target.startswith("mailto:")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    assert links(page) or page.name == "references.md", f"{page.name} links to nothing"
    for target in links(page):
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        assert path.exists(), f"{page.name}: link to missing {target}"
        if anchor:
            assert path.suffix == ".md", f"{page.name}: anchor into a non-Markdown file {target}"
            assert anchor in anchors(path), f"{page.name}: no heading for #{anchor} in {path.name}"


def readme_commands() -> list[list[str]]:
    """Every ``mutransfer …`` invocation in the README's fenced blocks and its commands table."""
    text = README.read_text()
    lines = [line for block in FENCE.findall(text) for line in block.splitlines()]
    lines += re.findall(r"^\| `(mutransfer [^`]*)`", text, re.M)
    commands = []
    for line in lines:
        line = line.split("#", 1)[0].removeprefix("$ ")
        for part in line.split("&&"):
            words = shlex.split(part.replace("\\|", "|"))
            if words[:1] == ["mutransfer"]:
                commands.append(words[1:])
    return commands


def test_readme_commands_exist_with_their_options() -> None:
    group = typer.main.get_command(app)
    commands = readme_commands()
    assert {words[0] for words in commands} >= set(group.commands), "the README must show every command"
    for words in commands:
        command = group.commands.get(words[0])
        assert command is not None, f"README uses unknown command 'mutransfer {words[0]}'"
        options = {opt for param in command.params for opt in param.opts if opt.startswith("--")}
        used = {w.strip("[]").split("=")[0] for w in words[1:] if w.strip("[]").startswith("--")}
        assert used <= options, f"'mutransfer {' '.join(words)}' uses options the command lacks: {used - options}"


def test_readme_error_example_is_what_the_tool_prints() -> None:
    example = re.search(r"^\$ (mutransfer .*)\n(error: .*)$", README.read_text(), re.M)
    assert example, "the README shows one bad-input example"
    result = CliRunner().invoke(app, shlex.split(example.group(1))[1:])
    assert result.exit_code == 2
    assert result.output.strip() == example.group(2)


def test_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move reference material to docs/"


def test_docs_cite_sources_by_title() -> None:
    for page in PAGES:
        assert not re.search(r"\bseeds? \d{3}\b", page.read_text()), f"{page.name} cites an internal file name"


SLOW_COMMAND = "python -m pytest -q -m slow"


def test_ci_runs_the_readme_test_command_verbatim_and_the_slow_tests() -> None:
    """CI runs the README's test command as written, then the long tests it leaves out (docs/development.md)."""
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if "pytest" in line and not line.lstrip().startswith("#")]
    readme_lines = [line.split("#", 1)[0].strip() for block in FENCE.findall(README.read_text())
                    for line in block.splitlines() if "pytest" in line]
    assert len(ci_lines) == 2 and ci_lines[0] in readme_lines and ci_lines[1] == SLOW_COMMAND, (ci_lines, readme_lines)
    assert SLOW_COMMAND in (ROOT / "docs" / "development.md").read_text()


@pytest.mark.parametrize(("page", "script", "data"), [("weight-decay.md", "weight_decay_doc.py", "weight_decay"),
                                                       ("batch.md", "batch_doc.py", "batch"),
                                                       ("sweeps.md", "sequential_rates.py", "sequential")])
def test_a_study_page_holds_the_tables_its_script_computes(page: str, script: str, data: str) -> None:
    """A study's page holds the tables its script (``scripts/<study>_doc.py``) computes from the kept run."""
    module = load_script(script.removesuffix(".py"))
    text = (ROOT / "docs" / page).read_text()
    lines = module.tables(ROOT / "docs" / "data" / data).splitlines()
    assert len(lines) > 15 and all(line in text for line in lines if line)


def test_the_module_to_tests_table_is_current() -> None:
    """docs/development.md's "Tests by module" is what ``scripts/test_map.py`` computes from the tests today."""
    lines = load_script("test_map").table().splitlines()
    text = (ROOT / "docs" / "development.md").read_text()
    assert len(lines) > 50 and all(line in text for line in lines)


def test_a_value_on_a_rounding_edge_prints_the_same_whatever_its_float_noise() -> None:
    """−0.205 reached by two summation orders (one ulp either side) is one cell; a missing end is ``…``."""
    from mutransfer.analysis.cells import interval_cell

    edge = -0.205
    below, above = math.nextafter(edge, -1.0), math.nextafter(edge, 0.0)
    assert interval_cell(below) == interval_cell(above) == interval_cell(edge)
    assert interval_cell(-0.2049, [1.0, None]) == "-0.20 [+1.00, …]"
    assert interval_cell(None) == "—" and interval_cell(float("nan")) == "—"
