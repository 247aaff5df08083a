"""Shared fixtures: a small real text corpus, a tiny sweep spec, an in-process CLI runner, the PostgreSQL
test server's URL, and the tally of what a fault cost; and the guard that prints a whole suite's wall time
against its budget (``budgets.py``)."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Hashable, Iterable

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from budgets import budget_line, budget_of
from mutransfer.cli import app

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as a module (registered, since dataclasses look up their defining module)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~300 KB of real Python source (a few stdlib modules), written once per session."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = ("argparse.py", "dataclasses.py", "typing.py", "inspect.py", "functools.py")
    path = tmp_path_factory.mktemp("data") / "corpus.txt"
    path.write_bytes(b"".join((stdlib / name).read_bytes() for name in names))
    return path


@pytest.fixture(scope="session")
def tiny(text_file: Path) -> list[str]:
    """Overrides for a model and run small enough for a unit test (a second or two)."""
    return ["model.width=32", "model.depth=1", "parametrization.base_width=32", "train.steps=6",
            "train.batch_size=4", "train.seq_len=32", "train.eval_batches=2", "train.eval_every=3",
            "data=text", f"data.path={text_file}"]


@pytest.fixture()
def spec_file(tmp_path: Path, text_file: Path) -> Path:
    """2 setups × 2 widths × 3 LRs of a tiny model on a small real corpus."""
    return write_tiny_spec(tmp_path, text_file)


def write_tiny_spec(folder: Path, text_file: Path) -> Path:
    """The ``spec_file`` fixture's spec, written into ``folder`` (for module-scoped fixtures)."""
    spec = {
        "name": "tiny",
        "setups": {"sp_adamw": {"overrides": ["parametrization=sp", "optimizer=adamw"],
                                "search": {"log2_min": -9, "log2_max": -5}},
                   "mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                "search": {"log2_min": -6, "log2_max": -2}}},
        "widths": [32, 64],
        "seeds": [0],
        "search": {"key": "optimizer.lr", "step": 2, "sampler": "grid", "extend": False, "noise_seeds": 0},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=8", "train.batch_size=4",
                      "train.seq_len=32", "train.eval_every=4", "train.eval_batches=2", "data=text",
                      f"data.path={text_file}"],
    }
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def write_edge_spec(folder: Path, text_file: Path) -> Path:
    """1 setup × 1 width × 3 LRs far below the optimum: the best point sits on the upper edge, so the grid
    extends twice past the policy's budget (5 trials of a tiny model)."""
    spec = {"name": "edge", "widths": [32], "seeds": [0],
            "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"]}},
            "search": {"key": "optimizer.lr", "log2_min": -14, "log2_max": -10, "step": 2, "sampler": "grid",
                       "extend": True, "extend_max": 4, "noise_seeds": 0},
            "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=4",
                          "train.seq_len=32", "train.eval_every=4", "train.eval_batches=2", "data=text",
                          f"data.path={text_file}"]}
    path = folder / "edge.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture()
def edge_spec(tmp_path: Path, text_file: Path) -> Path:
    return write_edge_spec(tmp_path, text_file)


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str):  # noqa: ANN201 - click's Result
    return runner.invoke(app, list(args), catch_exceptions=False)


def refused_in_one_line(runner: CliRunner, spec: Path, words: list[str], says: str, out: Path) -> None:
    """``sweep SPEC WORDS --dry-run`` exits 2 with one line that contains ``says``, and creates nothing."""
    result = invoke(runner, "sweep", str(spec), *words, "--dry-run", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert says in result.output and len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def sweep_tables(runner: CliRunner, spec: Path, run: Path, axis: str) -> pd.DataFrame:
    """Run a sweep with one worker and one thread; check it printed the table of ``axis``; its trials.csv."""
    result = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 0, result.output
    assert f"optimal learning rate per {axis}" in result.output
    return pd.read_csv(run / "trials.csv")


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().split()[2] != "Z"


@pytest.fixture(scope="session")
def pg_url() -> str:
    """The PostgreSQL test server (``MUTRANSFER_TEST_POSTGRES``); a failure under CI, a skip elsewhere."""
    url = os.environ.get("MUTRANSFER_TEST_POSTGRES")
    if url:
        return url
    message = ("no PostgreSQL server for the database tests: run "
               "`eval \"$(bash scripts/postgres_test_server.sh)\"` (as .ci/run does) to start one")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


FaultTally = Callable[[int, Iterable[Hashable], Iterable[str]], dict[str, int]]


@pytest.fixture()
def fault_tally(record_property: Callable[[str, object], None]) -> FaultTally:
    """Count what a fault cost: ``tally(points, finished, outputs)`` with the number of points the sweep holds,
    one entry per COMPLETE trial (its point) and the processes' printed output. Returns and records (for
    ``scripts/fault_table.py``) the points, trials lost, duplicates and tracebacks; a test asserts the zeros."""
    def tally(points: int, finished: Iterable[Hashable], outputs: Iterable[str]) -> dict[str, int]:
        counts = Counter(finished)
        result = {"points": points, "lost": points - len(counts), "duplicates": sum(counts.values()) - len(counts),
                  "tracebacks": sum(text.count("Traceback") for text in outputs)}
        for name, value in result.items():
            record_property(name, value)
        return result

    return tally


def no_loss(points: int) -> dict[str, int]:
    """What ``fault_tally`` returns when a fault cost nothing."""
    return {"points": points, "lost": 0, "duplicates": 0, "tracebacks": 0}


SESSION_START = pytest.StashKey[float]()
"""When the session began (``pytest_configure``): the budget line's wall time counts from it."""


def pytest_configure(config: pytest.Config) -> None:
    """No test may reach the network: Hugging Face's hub client raises instead of downloading (in this process
    and the ones it starts). The session's start is kept for the budget line."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    config.stash[SESSION_START] = time.perf_counter()


def whole_suite(config: pytest.Config) -> bool:
    """Whether this session runs a whole suite: the configured test paths, no ``-k``, no ``--lf``, no ``-x``."""
    testpaths = [str(config.rootpath / path) for path in config.getini("testpaths")]
    given = [str(Path(arg).resolve()) for arg in config.args]
    return (sorted(given) == sorted(testpaths) and not config.option.keyword
            and not getattr(config.option, "lf", False) and not config.option.maxfail)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The guard of the suites' budgets (``budgets.py``): a whole suite prints its wall time against its budget."""
    budget = budget_of(config.option.markexpr or "")
    if budget is not None and whole_suite(config) and SESSION_START in config.stash:
        terminalreporter.write_line(budget_line(budget, time.perf_counter() - config.stash[SESSION_START]))


def differences(a: Any, b: Any, rel_tol: float = 1e-9, path: str = "") -> list[str]:
    """Where two documents differ: keys present in one only, or floats further apart than ``rel_tol`` (numpy and
    BLAS builds differ in the last bits of a regression's sums, so exact equality would test the build)."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = [f"{path}/{k}: only in one" for k in sorted(a.keys() ^ b.keys(), key=str)]
        shared = sorted(a.keys() & b.keys(), key=str)
        return found + [d for k in shared for d in differences(a[k], b[k], rel_tol, f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, rel_tol, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        same = a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-12)
        return [] if same else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


SAME_RUN_TOL = 1e-4
"""How far a stacked trial's losses may differ from the same trial trained alone (float reduction order)."""


def assert_same_run(batched: Any, alone: Any) -> None:
    """One of K trials trained stacked (``train.loop.train_trials``) ran as it does alone (``train_model``): the same
    status, steps, learning rates, and losses to ``SAME_RUN_TOL``."""
    assert batched.status == alone.status and batched.steps == alone.steps
    for a, b in zip(batched.curve, alone.curve, strict=True):
        assert a["step"] == b["step"] and a["lr"] == pytest.approx(b["lr"])
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=SAME_RUN_TOL)
    assert [e["step"] for e in batched.evals] == [e["step"] for e in alone.evals]
    for a, b in zip(batched.evals, alone.evals, strict=True):
        assert a["val_loss"] == pytest.approx(b["val_loss"], abs=SAME_RUN_TOL)


def hard_spec(root: Path, text_file: Path, name: str = "hard") -> Path:
    """A spec of ``HARD_POINTS`` tiny trials (4 learning rates × 2 widths, one seed) for the tests that damage a
    sweep's files or share its directory."""
    spec = root / f"{name}.yaml"
    spec.write_text(yaml.safe_dump({
        "name": name, "setups": {"mup_muon": {"overrides": ["optimizer=muon"],
                                              "search": {"log2_min": -6, "log2_max": -3}}},
        "widths": [32, 64], "search": {"step": 1, "noise_seeds": 0, "extend": False},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=2",
                      "train.seq_len=16", "train.eval_every=0", "train.eval_batches=1", "data=text",
                      f"data.path={text_file}"]}))
    return spec


HARD_POINTS = 4 * 2
"""``hard_spec``'s points: 4 learning rates × 2 widths."""


def completed_points(journal: Path) -> list[tuple[int, float]]:
    """(width, log2 η) of every complete trial a journal storage holds, across its studies."""
    import optuna

    from mutransfer.sweep.store.storage import open_storage

    storage = open_storage(str(journal), journal.parent)
    return [(t.user_attrs["width"], t.params["log2_lr"]) for s in optuna.get_all_study_summaries(storage)
            for t in optuna.load_study(study_name=s.study_name, storage=storage).get_trials()
            if t.state == optuna.trial.TrialState.COMPLETE]

