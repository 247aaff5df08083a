"""The benchmarks share one runner (``scripts/bench_runner.py``): every ``scripts/bench_*.py`` runs through it, it
says what it measures on, refuses a busy machine unless told, and passes each benchmark its own options."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional, Sequence

import pytest

from conftest import load_script

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
BENCHMARKS = sorted(p for p in SCRIPTS.glob("bench_*.py") if p.name != "bench_runner.py")


@pytest.fixture(scope="module")
def runner():  # noqa: ANN201 - the script's module
    return load_script("bench_runner")


def test_the_list_names_every_benchmark_with_its_first_line(runner, capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [p.stem.removeprefix("bench_") for p in BENCHMARKS]
    assert all(len(line.split(maxsplit=1)) == 2 for line in listed)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_every_benchmark_parses_the_options_it_is_given_and_runs_through_the_runner(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert [a.arg for a in main.args.args] == ["argv"]
    assert "parser.parse_args(argv)" in ast.unparse(main)
    guard = next(n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))
    assert ast.unparse(guard.body[0]) == "sys.exit(run_benchmark(main))"


def test_a_busy_machine_is_refused_and_nothing_runs(runner, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[Sequence[str]] = []

    def main(argv: Optional[Sequence[str]]) -> None:
        calls.append(list(argv or []))

    assert runner.run_benchmark(main, ["--repeats", "3"], load=lambda: 64.0) == 2
    out = capsys.readouterr()
    assert calls == [] and "load average 64.00" in out.out and out.err.count("\n") == 1
    assert "the machine is busy" in out.err and "--busy-ok" in out.err


def test_busy_ok_measures_anyway_and_the_benchmark_gets_its_own_options(runner,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[Sequence[str]] = []

    def main(argv: Optional[Sequence[str]]) -> int:
        calls.append(list(argv or []))
        return 3

    assert runner.run_benchmark(main, ["--busy-ok", "--repeats", "3"], load=lambda: 64.0) == 3
    assert calls == [["--repeats", "3"]]
    out = capsys.readouterr().out
    assert out.startswith("machine: ") and "benchmark wall time: " in out


def test_an_idle_machine_runs_without_asking(runner) -> None:
    calls: list[Sequence[str]] = []
    assert runner.busy_problem(0.4, 2) is None and runner.busy_problem(0.6, 2) is not None
    assert runner.run_benchmark(lambda argv: calls.append(list(argv or [])), [], load=lambda: 0.0) == 0
    assert calls == [[]]


def test_an_unknown_benchmark_is_one_line(runner, capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["no_such"]) == 2
    assert capsys.readouterr().err == "error: no benchmark 'no_such'; `python scripts/bench_runner.py list` lists them\n"
