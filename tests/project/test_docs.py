"""The docs cannot rot silently: links resolve, README commands exist with the options they use, the
README's error example is what the tool prints, and the README stays short."""

from __future__ import annotations

import math
import re
import shlex
import tomllib
from pathlib import Path
from typing import Optional

import pytest
import yaml
import typer.main
from typer.testing import CliRunner

from conftest import load_script
from printed_numbers import missing_lines, same_print
from mutransfer.cli import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 100
MAX_LINE = 120
CODE_COLUMN = 96
"""The longest fenced code line a page of docs/ may hold, in characters: what a code block of the site shows
without scrolling sideways in a 1366-px window (834 px less 32 of padding and a 15-px scrollbar: 787 px at 8.18 px a
character, measured in Chromium on the built site); at 1400 px it leaves 4 characters for the copy button."""
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
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
        if page.parent.name == "docs" and path_part == "index.md":
            path = README  # the site's home page is the README (docs/mkdocs_hooks.py)
        assert page.parent.name != "docs" or not path_part.startswith("../"), (
            f"{page.name}: link {target} leaves docs/, which the site cannot follow")
        assert path.exists(), f"{page.name}: link to missing {target}"
        if anchor:
            assert path.suffix == ".md", f"{page.name}: anchor into a non-Markdown file {target}"
            assert anchor in anchors(path), f"{page.name}: no heading for #{anchor} in {path.name}"


INVOCATION = re.compile(r"mutransfer ([a-z][\w-]*)((?: [^|;&#`]*)?)")
"""``mutransfer COMMAND words…`` up to a pipe, a shell separator, a comment or the end of a code span."""


def page_commands(page: Path) -> list[tuple[str, set[str]]]:
    """Each ``mutransfer COMMAND …`` in a page's code (fenced blocks and inline code spans) with the options it
    uses."""
    text = page.read_text()
    code = [line for block in FENCE.findall(text) for line in block.replace("\\\n", " ").splitlines()]
    code += re.findall(r"`([^`\n]+)`", FENCE.sub("", text))
    return [(m.group(1), set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m.group(2))))
            for line in code for m in INVOCATION.finditer(line.replace("\\|", "|"))]


def app_options() -> dict[str, set[str]]:
    group = typer.main.get_command(app)
    return {name: {opt for param in command.params for opt in param.opts if opt.startswith("--")} | {"--help"}
            for name, command in group.commands.items()}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_a_page_shows_exists_with_its_options(page: Path) -> None:
    options = app_options()
    for command, used in page_commands(page):
        assert command in options, f"{page.name} uses unknown command 'mutransfer {command}'"
        assert used <= options[command], f"{page.name}: 'mutransfer {command}' uses {used - options[command]}"


def test_the_readme_shows_every_command() -> None:
    assert {command for command, _ in page_commands(README)} >= set(app_options()), "the README must show every command"


def test_the_cli_reference_is_what_the_app_renders() -> None:
    """docs/cli.md lists every command and option with its default and help: ``scripts/cli_doc.py``'s rendering."""
    assert (ROOT / "docs" / "cli.md").read_text() == load_script("cli_doc").render(), "run python scripts/cli_doc.py"


def test_readme_error_example_is_what_the_tool_prints() -> None:
    example = re.search(r"^\$ (mutransfer .*)\n(error: .*)$", README.read_text(), re.M)
    assert example, "the README shows one bad-input example"
    result = CliRunner().invoke(app, shlex.split(example.group(1))[1:])
    assert result.exit_code == 2
    assert result.output.strip() == example.group(2)


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


LONG_COMMAND = "python -m pytest -q -m long"


def test_the_tests_too_long_for_ci_have_their_own_command_and_workflow() -> None:
    """``long`` tests leave both of CI's runs; development.md names the command that runs them and a scheduled
    workflow runs it, with the PostgreSQL server CI's workflow starts and its address exported the same way."""
    assert LONG_COMMAND in (ROOT / "docs" / "development.md").read_text()
    workflow = (ROOT / ".github" / "workflows" / "long.yml").read_text()
    assert f"pip install -e '.[dev]' && {LONG_COMMAND}" in workflow and "schedule:" in workflow
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())["jobs"]["test"]
    weekly = yaml.safe_load(workflow)["jobs"]["long"]
    assert weekly["services"] == ci["services"]
    assert weekly["env"]["MUTRANSFER_TEST_POSTGRES"] == ci["env"]["MUTRANSFER_TEST_POSTGRES"]
    assert "not long" in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"][
        "addopts"]


def ci_commands() -> list[str]:
    """The commands ``.ci/run`` runs after setting up its venv, torch and the PostgreSQL server."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    return [line for line in lines[lines.index('eval "$(bash scripts/postgres_test_server.sh)"') + 1:]
            if line and not line.startswith("#")]


def test_the_github_workflow_runs_what_ci_runs() -> None:
    """Each of ``.ci/run``'s steps is a step of .github/workflows/ci.yml, in the same order."""
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    runs = [line.strip().removeprefix("run: ") for line in workflow.splitlines() if line.strip().startswith("run: ")]
    assert [command for command in runs if command in ci_commands()] == ci_commands(), (runs, ci_commands())


@pytest.mark.parametrize("page", PAGES[1:], ids=lambda p: p.name)
def test_every_code_line_fits_the_code_block(page: Path) -> None:
    """Each line of a page's fenced code, as the site shows it (measured numbers filled in), is at most
    ``CODE_COLUMN`` characters: break a command with ``\\``, a YAML flow list or mapping over lines, a comment onto
    its own line, printed output at a space."""
    numbers = load_script("doc_numbers")
    text = numbers.shown(page.read_text(encoding="utf-8"), numbers.read_numbers())
    long = [line for block in FENCE.findall(text) for line in block.splitlines() if len(line) > CODE_COLUMN]
    assert not long, f"{page.name}: {len(long)} code lines over {CODE_COLUMN} characters, the first: {long[0]}"


def test_the_readme_is_a_front_door() -> None:
    """At most 100 lines, none over 120 characters outside code blocks, and its table of verdicts is what
    ``scripts/make_readme_figure.py`` computes from the kept run."""
    text = README.read_text()
    prose = FENCE.sub("", text).splitlines()
    assert text.count("\n") <= MAX_README_LINES
    assert all(len(line) <= MAX_LINE for line in prose), [line for line in prose if len(line) > MAX_LINE]
    lines = load_script("make_readme_figure").tables(ROOT / "docs" / "data" / "readme").splitlines()
    assert len(lines) > 3 and not missing_lines(lines, text), missing_lines(lines, text)


@pytest.mark.parametrize(("page", "script", "data"), [("weight-decay.md", "weight_decay_doc.py", "weight_decay"),
                                                       ("batch.md", "batch_doc.py", "batch"),
                                                       ("sweeps.md", "sequential_rates.py", "sequential"),
                                                       ("constants.md", "constants_doc.py", "constants")])
def test_a_study_page_holds_the_tables_its_script_computes(page: str, script: str, data: str) -> None:
    """A study's page holds the tables its script (``scripts/<study>_doc.py``) computes from the kept run, each
    number within one unit of its last printed digit (``printed_numbers``)."""
    module = load_script(script.removesuffix(".py"))
    text = (ROOT / "docs" / page).read_text()
    lines = module.tables(ROOT / "docs" / "data" / data).splitlines()
    assert len(lines) > 15 and not missing_lines(lines, text), missing_lines(lines, text)


def test_the_moe_page_holds_the_tables_its_script_computes() -> None:
    """docs/moe.md holds the coordinate-check and dispatch tables ``scripts/moe_doc.py`` computes from the kept tables."""
    lines = load_script("moe_doc").tables(ROOT / "docs" / "data" / "moe").splitlines()
    text = (ROOT / "docs" / "moe.md").read_text()
    assert len(lines) >= 10 and not missing_lines(lines, text), missing_lines(lines, text)


@pytest.mark.parametrize(("page", "script", "data"), [("import.md", "import_coverage", "import"),
                                                       ("analysis.md", "backtest_coverage", "backtest")])
def test_a_coverage_table_on_a_page_is_what_its_script_prints(page: str, script: str, data: str) -> None:
    """A coverage table stands on its page exactly as ``scripts/<script>.py --table`` prints it from the kept CSV."""
    import pandas as pd

    lines = load_script(script).markdown(pd.read_csv(ROOT / "docs" / "data" / data / "coverage.csv")).splitlines()
    text = (ROOT / "docs" / page).read_text()
    assert len(lines) > 5 and not missing_lines(lines, text), missing_lines(lines, text)


def test_the_readme_s_compare_pair_decides_as_the_kept_runs_do() -> None:
    """docs/compare.md's table of the README's compare example is what ``mutransfer compare`` says of the kept runs
    (``scripts/compare_pairs.py``), and the README's verdicts are those: ``moved`` for the change, ``same`` for
    the seeds alone."""
    table = load_script("compare_pairs").table(ROOT / "docs" / "data" / "compare")
    assert not missing_lines(table.splitlines(), (ROOT / "docs" / "compare.md").read_text())
    verdicts = [row.split("|")[2].strip() for row in table.splitlines()[2:]]
    assert verdicts == ["`moved`", "`same`"]
    readme = " ".join(README.read_text().split())
    assert "train.steps=160 --out runs/after" in readme
    assert re.search(r"compare runs/before runs/after # [^:]+: moved", readme)
    assert "(`seeds=[1]`) it says `same`" in readme


def test_the_provisional_line_sweeps_md_shows_is_one_the_kept_run_printed() -> None:
    """docs/sweeps.md's example of the answer so far is a line of the default sweep's kept log, the one
    docs/performance.md times (``scripts/bench_first_answer.py``), shown broken at a space to fit the code block."""
    import pandas as pd

    log = set(pd.read_csv(ROOT / "docs" / "data" / "first_answer" / "log.csv", keep_default_na=False)["line"])
    shown = [" ".join(block.splitlines()) for block in FENCE.findall((ROOT / "docs" / "sweeps.md").read_text())
             if block.startswith("provisional (")]
    assert shown and all(line in log for line in shown), shown


def test_every_duration_the_readme_gives_is_the_measured_one() -> None:
    """Each README command ``scripts/bench_readme.py`` times carries the duration it measured, as the numbers file
    holds it (``readme.<part>``), and the trials its sweeps ran; the default sweep's comment carries its trial
    count and the range of its kept wall times (``default_sweep``); docs/performance.md holds the script's table;
    no other README command line gives a duration."""
    import pandas as pd

    script = load_script("bench_readme")
    numbers = load_script("doc_numbers").read_numbers()
    durations = pd.read_csv(ROOT / "docs" / "data" / "readme" / "durations.csv")
    assert set(script.PARTS) <= set(durations["part"]), "every part measured"
    durations = durations[durations["part"].isin(list(script.PARTS))]
    lines = {line.split("#", 1)[0].strip(): line for block in FENCE.findall(README.read_text())
             for line in block.splitlines()}
    for row in durations.itertuples():
        assert row.command == script.command_of(row.part, script.readme_lines()), f"{row.part}: the README changed"
        assert numbers["readme"] == script.numbers(durations), "run python scripts/bench_readme.py --out … again"
        said = numbers["readme"][row.part]
        assert re.search(rf"#.*\b{re.escape(said)}\b", lines[row.command]), (said, lines[row.command])
        if f"{row.part}_trials" in numbers["readme"]:
            assert numbers["readme"][f"{row.part}_trials"] in lines[row.command]
    default = next(line for command, line in lines.items() if command.endswith("mutransfer sweep"))
    assert f"{numbers['default_sweep']['trials']}, {numbers['default_sweep']['wall_range']} on 2 cores" in default
    timed = set(durations["command"])
    unit = re.compile(r"#.*\d\s*(s|min)\b")
    assert not [line for command, line in lines.items() if command not in timed and unit.search(line)
                and line != default]
    assert script.table(durations) in (ROOT / "docs" / "performance.md").read_text()


def not_measured() -> dict[str, tuple[str, ...]]:
    """Per page, the phrases whose durations, trial counts and slopes are settings (of the code, a benchmark or a
    simulated truth), not measurements: the check of measured literals skips them. The estimate's constants are
    spelt from the code, so a changed constant fails the check until its page says the new one."""
    from budgets import CI_BUDGET_S, SUITE_BUDGETS_S
    from mutransfer.sweep.plan.estimate import SWEEP_OVERHEAD_S, TRIAL_OVERHEAD_S

    trial, sweep = f"{TRIAL_OVERHEAD_S:g} s", f"{SWEEP_OVERHEAD_S:g} s"
    default, slow = (f"{budget.seconds:g} s;" for budget in SUITE_BUDGETS_S)
    return {
        "development.md": (f"(the default suite): {default}", f"): {slow}",
                           f"from a clean clone: {CI_BUDGET_S:g} s."),
        "sweeps.md": ("up to 1.5 s of them", f"plus {trial} of storage bookkeeping",
                      f"**a sweep**: {sweep} (start, configs, tables, summary, figures)",
                      f"plus {trial} of bookkeeping per trial and {sweep} per sweep",
                      "(0.5 s doubling to 8 s) for up to 10 minutes"),
        "transfer.md": (f"plus {trial} of bookkeeping a trial",),
        "your-trainer.md": ("SIGKILL 10 s later", "14 trials of 1 s each", "3 s after each kill"),
    }


OWNED_ELSEWHERE = ("archive.md",)
"""Pages whose measured literals are not the current figures: the archive keeps past results as they were."""


def test_every_measured_number_in_the_docs_prose_comes_from_the_numbers_file() -> None:
    """A duration, trial count or slope in a page's prose (and its shell comments) is a ``{{ section.key }}`` the
    build fills from docs/data/numbers.yaml, a figure of a table on the same page, or a setting; never a literal
    typed by hand."""
    numbers = load_script("doc_numbers")
    settings = not_measured()
    found = [f"{page.name}:{line}: {literal}" for page in sorted((ROOT / "docs").glob("*.md"))
             if page.name not in OWNED_ELSEWHERE
             for line, literal in numbers.unowned_literals(page.read_text(), settings.get(page.name, ()))]
    assert not found, "write these through docs/data/numbers.yaml (scripts/doc_numbers.py):\n" + "\n".join(found)


def test_every_number_a_page_refers_to_is_in_the_numbers_file_and_every_number_is_shown() -> None:
    """Each ``{{ section.key }}`` resolves, each section names a script that exists, and each number the file holds
    is shown somewhere (a page refers to it, or the README's test above compares it)."""
    numbers = load_script("doc_numbers")
    kept = numbers.read_numbers()
    pages = {page.name: page.read_text() for page in (ROOT / "docs").glob("*.md")}
    used = {reference for text in pages.values() for reference in numbers.references(text)}
    for name, text in pages.items():
        numbers.shown(text, kept)
    raw = yaml.safe_load(numbers.NUMBERS.read_text())
    assert all((ROOT / body["script"]).exists() for body in raw.values())
    unshown = {(section, key) for section, values in kept.items() for key in values} - used
    assert not {(s, k) for s, k in unshown if s not in ("readme", "default_sweep")}, sorted(unshown)


def test_the_measured_literal_check_finds_what_it_should() -> None:
    """The check flags durations, trial counts and slopes written in prose and in shell comments, and leaves
    references, table figures, inline code, printed output and settings alone."""
    numbers = load_script("doc_numbers")
    page = "\n".join([
        "The sweep took 12 min 3 s for 67 trials; its slope is −0.06 and the law's +0.40 [+0.24, +0.56].",
        "It took {{ readme.smoke }}, `eta: about 12 min`, and the table's -0.74 [-1.14, -0.35] again;",
        "a timeout kills after 30 s.",
        "| depth | -0.74 [-1.14, -0.35] |",
        "```bash", "mutransfer sweep   # 40 trials", "```",
        "```", "done in 9.9 s", "```",
    ])
    found = [literal for _, literal in numbers.unowned_literals(page, ("after 30 s",))]
    assert found == ["12 min", "3 s", "67 trials", "slope is −0.06", "+0.40 [+0.24, +0.56]", "40 trials"]
    with pytest.raises(KeyError, match="readme.nothing"):
        numbers.shown("{{ readme.nothing }}", {"readme": {}})
    assert numbers.shown("`{{ a.b }}` took {{ a.b }}", {"a": {"b": "3 s"}}) == "`{{ a.b }}` took 3 s"


@pytest.mark.parametrize(("page", "data", "axis"), [("depth.md", "depth", "depth"), ("axes.md", "horizon", "steps"),
                                                    ("your-trainer.md", "own_trainer", "width"),
                                                    ("moe.md", "moe", "width"), ("moe.md", "moe", "experts")])
def test_an_axis_table_on_a_page_is_what_axis_table_computes(page: str, data: str, axis: str) -> None:
    """Tables printed by ``scripts/axis_table.py`` from a run kept under docs/data/ stand on their page as printed,
    each number within one unit of its last printed digit: a slope on a rounding boundary prints ``-0.04`` here and
    ``-0.03`` on a CPU whose BLAS sums in another order."""
    lines = load_script("axis_table").table(ROOT / "docs" / "data" / data, axis).splitlines()
    text = (ROOT / "docs" / page).read_text()
    assert len(lines) >= 4 and not missing_lines(lines, text), missing_lines(lines, text)


IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+\.png)\)")
COMMAND = re.compile(r"`(python scripts/[^`]+|mutransfer [^`]+|bash scripts/[^`]+)`|^(mutransfer|python scripts/) ",
                     re.M)


def test_every_figure_is_shown_with_the_command_that_draws_it() -> None:
    """Each png in docs/ is shown by a page; outside the results archive a command that draws it stands within six
    lines of the image."""
    shown: set[str] = set()
    for page in PAGES:
        text = page.read_text()
        lines = text.splitlines()
        for image in IMAGE.finditer(text):
            shown.add(Path(image.group(1)).name)
            i = text.count("\n", 0, image.end())
            near = "\n".join(lines[max(0, i - 8):i + 9])
            assert page.name == "archive.md" or COMMAND.search(near), f"{page.name}: no command beside {image.group(1)}"
    assert {path.name for path in (ROOT / "docs").glob("*.png")} <= shown


def test_the_test_file_table_lists_every_test_file() -> None:
    """docs/development.md has one row per test file, and every row names a file that exists."""
    listed = re.findall(r"^\| `(\w+/test_\w+\.py)` \|", (ROOT / "docs" / "development.md").read_text(), re.M)
    present = sorted(path.relative_to(ROOT / "tests").as_posix() for path in (ROOT / "tests").rglob("test_*.py"))
    assert sorted(listed) == present, (set(present) - set(listed), set(listed) - set(present))


def test_every_shipped_spec_has_its_line() -> None:
    """docs/sweeps.md's table of shipped specs has one row per spec in sweeps/."""
    listed = re.findall(r"^\| `(\w+)` \|", (ROOT / "docs" / "sweeps.md").read_text().split("### Shipped specs")[1]
                        .split("\n#")[0], re.M)
    assert sorted(listed) == sorted(path.stem for path in (ROOT / "sweeps").glob("*.yaml"))


GLOSSARY_TERMS = {"η*": "η", "octave": "octave", "noise seed": "noise-seed", "fit window": "fit-window",
                  "censored": "censored", "σ_b": "σ_b", "lack of fit": "lack-of-fit", "regret": "regret"}
"""Terms of docs/glossary.md whose first use on a page links there: the term → its heading's anchor."""
SPAN = re.compile(r"`[^`\n]*`|!?\[[^\]]*\]\([^)]*\)|<[^>\n]*>")
"""Code spans, links, images and HTML tags: text where a term is not a use of its own."""


def term_pattern(term: str) -> re.Pattern[str]:
    """A term as a page writes it: any case, plurals, ``lack-of-fit`` hyphenated."""
    words = [re.escape(word).replace(r"\*", r"\\?\*") for word in term.split()]  # η* written η\* too
    return re.compile(("(?<!\\w)" if term[0].isalnum() else "") + "[ -]".join(words), re.I)


def first_use(text: str, term: str) -> Optional[int]:
    """Where ``term`` is first used in a page's prose (fenced code, headings, tables, code spans and other links'
    text left out), or where its first glossary link sits; None when the page never uses it."""
    prose = FENCE.sub(lambda m: " " * len(m.group(0)), text)
    prose = re.sub(r"^[#|].*$", lambda m: " " * len(m.group(0)), prose, flags=re.M)
    glossary_link = re.compile(r"\[([^\]]*)\]\(glossary\.md#[^)]*\)")
    masked = SPAN.sub(lambda m: m.group(0) if glossary_link.fullmatch(m.group(0)) else " " * len(m.group(0)), prose)
    found = term_pattern(term).search(masked)
    return found.start() if found else None


@pytest.mark.parametrize("page", [p for p in PAGES[1:] if p.name not in ("glossary.md", "cli.md")],
                         ids=lambda p: p.name)
def test_a_page_links_each_glossary_term_where_it_first_uses_it(page: Path) -> None:
    text = page.read_text()
    for term, anchor in GLOSSARY_TERMS.items():
        at = first_use(text, term)
        if at is None:
            continue
        link = re.compile(r"\[([^\]]*)\]\(glossary\.md#" + re.escape(anchor) + r"\)")
        linked = [m.span(1) for m in link.finditer(text)]
        assert any(start <= at < end for start, end in linked), (
            f"{page.name}: the first use of '{term}' ({text[max(0, at - 30):at + 30]!r}) should link to "
            f"glossary.md#{anchor}")


def test_the_glossary_defines_each_linked_term() -> None:
    assert set(GLOSSARY_TERMS.values()) <= anchors(ROOT / "docs" / "glossary.md")


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


def test_a_recomputed_number_may_move_one_unit_of_its_last_printed_digit_and_no_more() -> None:
    """The page's ``-0.04 [-0.31, +0.24]`` stands for a recomputed ``-0.03``: another CPU's BLAS moved the slope
    across a rounding boundary. Two units, another number of digits or other words are a different table."""
    row = "| `mup_muon` | -4.04 | -0.04 [-0.31, +0.24] | inconclusive | 2.104 |"
    assert same_print("| `mup_muon` | -4.04 | -0.03 [-0.31, +0.24] | inconclusive | 2.104 |", row)
    assert same_print("| `mup_muon` | -4.05 | -0.04 [-0.30, +0.25] | inconclusive | 2.105 |", row)
    assert same_print("| `mup_muon` | -4.04 | +0.00 [-0.31, +0.24] | inconclusive | 2.104 |",
                      row.replace("-0.04", "−0.01"))
    assert not same_print("| `mup_muon` | -4.04 | -0.02 [-0.31, +0.24] | inconclusive | 2.104 |", row)
    assert not same_print("| `mup_muon` | -4.04 | -0.04 [-0.31, +0.24] | inconclusive | 2.10 |", row)
    assert not same_print("| `mup_muon` | -4.04 | -0.04 [-0.31, +0.24] | transfers | 2.104 |", row)
    assert missing_lines([row, "| `sp_adamw` | -7.05 |"], f"text\n  {row}\n") == ["| `sp_adamw` | -7.05 |"]


def test_the_distributed_cost_table_is_the_kept_one() -> None:
    """docs/distributed.md shows the kept benchmark table as ``scripts/bench_distributed.py --table`` prints it."""
    table = load_script("bench_distributed").markdown_table(ROOT / "docs" / "data" / "distributed" / "cost.csv")
    assert not missing_lines(table.splitlines(), (ROOT / "docs" / "distributed.md").read_text()), \
        "run scripts/bench_distributed.py --table"
