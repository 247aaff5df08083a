"""CI within its budget, kept by what can be checked without a clock: every stage of ``.ci/run`` is measured by
``scripts/bench_readme.py`` and shown on docs/development.md, each suite prints its time against its budget, and
each test too long for CI names the cheaper CI test that covers its subject. Timings themselves are the
benchmark's, never asserted here."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from budgets import SUITE_BUDGETS_S, budget_line, budget_of
from conftest import load_script

ROOT = Path(__file__).resolve().parents[2]
COVERED = re.compile(r"Covered in CI by (.*)", re.S)
NODE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_the_durations_table_has_every_stage_of_ci_and_development_md_shows_it() -> None:
    """Each command line of ``.ci/run`` belongs to one stage, each stage has its measured row in the kept durations,
    and docs/development.md holds the table ``bench_readme.py --ci-table`` prints from them."""
    script = load_script("bench_readme")
    lines = script.ci_lines()
    assert len(lines) >= 10 and all(len(script.stage_of(line)) == 1 for line in lines), \
        [(line, script.stage_of(line)) for line in lines if len(script.stage_of(line)) != 1]
    assert sum(len(script.stage_lines(stage, lines)) for stage in script.CI_STAGES) == len(lines)
    durations = pd.read_csv(ROOT / "docs" / "data" / "readme" / "durations.csv")
    measured = durations[durations["part"].isin(list(script.CI_STAGES))]
    assert sorted(measured["part"]) == sorted(script.CI_STAGES), \
        "run python scripts/bench_readme.py --parts ci --out …"
    assert (measured["seconds"] > 0).all() and measured["exit"].notna().all()
    table = script.ci_table(durations)
    assert len(table.splitlines()) == len(script.CI_STAGES) + 3
    assert table in (ROOT / "docs" / "development.md").read_text(), "run python scripts/bench_readme.py --ci-table …"


def test_a_line_ci_runs_that_no_stage_claims_is_refused() -> None:
    script = load_script("bench_readme")
    assert script.stage_of("bash scripts/ci_artifacts.sh") == ["ci_artifacts"]
    assert script.stage_of("python scripts/something_new.py") == []
    with pytest.raises(SystemExit, match="something_new.py.*belongs to no stage"):
        script.stage_lines("ci_slow", [*script.ci_lines(), "python scripts/something_new.py"])


def test_the_slowest_tests_are_read_from_pytests_durations_with_their_modules() -> None:
    output = ("== slowest 3 durations ==\n12.50s call     tests/sweep/test_sweep.py::test_a[x y]\n"
              "0.40s setup    tests/core/test_words.py::test_b\n40.00s call     tests/model/test_moe.py::test_c\n"
              "3 passed in 60.00s\n")
    assert load_script("bench_readme").slowest(output) == [
        (40.0, "call", "tests/model/test_moe.py::test_c"), (12.5, "call", "tests/sweep/test_sweep.py::test_a[x y]"),
        (0.4, "setup", "tests/core/test_words.py::test_b")]


def test_each_suite_ci_runs_has_a_budget_and_its_line_says_when_it_is_over() -> None:
    assert budget_of("not slow and not long") is SUITE_BUDGETS_S[0] and budget_of("slow") is SUITE_BUDGETS_S[1]
    assert budget_of("long") is None and budget_of("") is None
    default = SUITE_BUDGETS_S[0]
    assert budget_line(default, 360.0).startswith("suite time: 360 s against 720 s") and "OVER" not in \
        budget_line(default, 360.0)
    assert "OVER BUDGET" in budget_line(default, 721.0) and "--durations=30" in budget_line(default, 721.0)


def test_only_a_whole_suite_counts_as_one(pytestconfig: pytest.Config) -> None:
    """The configured test paths with no ``-k``, ``--lf`` or ``-x`` are a whole suite; a path, a keyword, the last
    failures or a stop at the first failure are part of one."""
    from conftest import whole_suite

    whole = [str(pytestconfig.rootpath / path) for path in pytestconfig.getini("testpaths")]

    def config(args: list[str], keyword: str = "", lf: bool = False, maxfail: int = 0) -> SimpleNamespace:
        return SimpleNamespace(rootpath=pytestconfig.rootpath, getini=pytestconfig.getini, args=args,
                               option=SimpleNamespace(keyword=keyword, lf=lf, maxfail=maxfail))

    assert whole_suite(config(whole))  # type: ignore[arg-type]
    assert not whole_suite(config([str(ROOT / "tests" / "project")]))  # type: ignore[arg-type]
    assert not whole_suite(config(whole, keyword="docs"))  # type: ignore[arg-type]
    assert not whole_suite(config(whole, lf=True)) and not whole_suite(config(whole, maxfail=1))  # type: ignore


def test_a_whole_suite_prints_its_time_against_its_budget_and_a_selection_does_not(tmp_path: Path) -> None:
    """The guard in a fresh pytest project that uses this suite's conftest and budgets: the default suite prints its
    budget line, ``-k`` (part of a suite) prints none. (Which budget a marker expression selects, and when a run
    is a whole suite, are checked in process above.)"""
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("conftest.py", "budgets.py"):
        (tests / name).write_text((ROOT / "tests" / name).read_text())
    (tests / "test_one.py").write_text("import pytest\n\n\ndef test_one():\n    assert True\n\n\n"
                                       "@pytest.mark.slow\ndef test_two():\n    assert True\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["tests"]\nmarkers = ["slow: s", "long: l"]\n'
        "addopts = \"-m 'not slow and not long'\"\n")

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert re.search(r"^suite time: \d+ s against 720 s, the budget of the default suite", run(), re.M)
    assert "suite time" not in run("-k", "one")


def long_tests() -> list[str]:
    """The node ids ``-m long`` selects (collected from the files that mention the marker)."""
    files = [str(path) for path in sorted((ROOT / "tests").rglob("test_*.py")) if "mark.long" in path.read_text()]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "long", "-p",
                           "no:cacheprovider", *files], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_test_too_long_for_ci_names_the_ci_test_that_covers_its_subject() -> None:
    """A ``long`` test's docstring says "Covered in CI by" and names, as `tests/…py::test_name`, tests that exist and
    that CI runs (not ``long`` themselves)."""
    nodes = long_tests()
    long_functions = {node.split("[")[0] for node in nodes}
    assert len(long_functions) >= 8, long_functions
    missing = []
    for node in sorted(long_functions):
        file, name = node.split("::")
        said = COVERED.search(ast.get_docstring(functions(ROOT / file)[name]) or "")
        named = NODE.findall(" ".join(said.group(1).split())) if said else []
        good = [(f, n) for f, n in named if (ROOT / f).exists() and n in functions(ROOT / f)
                and f"{f}::{n}" not in long_functions]
        if not named or len(good) != len(named):
            missing.append(node)
    assert not missing, f"name the CI test that covers each, as 'Covered in CI by `tests/…py::test_…`': {missing}"
