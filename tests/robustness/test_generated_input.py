"""Generated bad input (Hypothesis) at the layer that parses and validates each input — nothing here trains.

Property, for every generated input: the tool does its job, or refuses with a ``UserError`` whose message is
one line; never another exception (a traceback for the user), and never a changed file in a run directory.
The default run draws ``EXAMPLES`` cases per test (540 in all, about 11 s on 2 cores);
``python -m pytest -m slow tests/robustness/test_generated_input.py`` draws ten times as many."""

from __future__ import annotations

import json
import math
import os
import shutil
import string
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mutransfer.analysis.summary import summarize_run
from mutransfer.commands.common import positive_number
from mutransfer.commands.coord_check import parse_widths as parse_coord_widths
from mutransfer.commands.workers import resolve_workers
from mutransfer.config import compose, load_config_file
from mutransfer.errors import UserError
from mutransfer.schema import DataConfig
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.storage import open_storage
from mutransfer.table.plan import Plan
from mutransfer.train.data import load_corpus
from mutransfer.transfer.derived import check_derived_sections
from mutransfer.transfer.target import make_transfer
from mutransfer.transfer.verify import parse_factors, parse_widths

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke"
SLOW = os.environ.get("MUTRANSFER_GENERATED_EXAMPLES")
EXAMPLES = int(SLOW) if SLOW else 60
CASES = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                               HealthCheck.too_slow])

KEYS = ["model.width", "model.depth", "model.head_dim", "model.mlp_ratio", "model.bias", "parametrization",
        "parametrization.base_width", "parametrization.roles.hidden.b", "parametrization.roles.readout.c.muon",
        "optimizer", "optimizer.lr", "optimizer.weight_decay", "optimizer.muon_scale", "optimizer.ns_steps",
        "optimizer.init.hidden", "data", "data.path", "data.vocab_size", "train.steps", "train.batch_size",
        "train.seq_len", "train.seed", "train.device", "train.schedule", "train.eval_every", "model.widht", "+x",
        "~train.steps", "train", "model.roles"]
VALUES = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.sampled_from(["", "null", "true", "abc", "[1,2]", "{a: 1}", "mup", "sp", "muon", "adamw",
                                    "cuda", "cpu", "'quoted'", "1e400", "-0", "0x10", "ünïcødé", "${oops}"]),
                   st.text(max_size=12))
OVERRIDE = st.one_of(st.tuples(st.sampled_from(KEYS), VALUES).map(lambda kv: f"{kv[0]}={kv[1]}"),
                     st.text(max_size=20))


def one_line_or_done(action: Callable[[], Any]) -> str:
    """Run ``action``: "done", or "refused" with a one-line message; any other exception fails the test."""
    try:
        action()
    except UserError as exc:
        line = exc.one_line()
        assert line and "\n" not in line and "Traceback" not in line, line
        return "refused"
    return "done"


def snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@CASES
@given(st.lists(OVERRIDE, max_size=4))
def test_config_overrides(overrides: list[str]) -> None:
    one_line_or_done(lambda: compose(overrides))


@CASES
@given(st.binary(max_size=200))
def test_sweep_spec_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_bytes(data)
    one_line_or_done(lambda: load_spec(str(path)))


YAML_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(allow_nan=True),
                         st.text(max_size=8))
YAML_DOCUMENTS = st.recursive(YAML_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["name", "setups", "widths", "seeds", "search", "overrides", "key", "step", "log2_min", "log2_max", "sampler",
         "noise_seeds", "extend", "model", "batch_trials", "coord_check", "x"]) | st.text(max_size=5), inner,
        max_size=4)), max_leaves=12)


@CASES
@given(YAML_DOCUMENTS)
def test_sweep_spec_documents(tmp_path_factory: pytest.TempPathFactory, document: Any) -> None:
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    one_line_or_done(lambda: load_spec(str(path)))


SMOKE = yaml.safe_load((Path(__file__).parents[2] / "sweeps" / "smoke.yaml").read_text())


def _mutate(document: Any, path: list[Any], value: Any) -> Any:
    """``document`` with the entry at ``path`` (keys / indexes, the last one may be new) set to ``value``."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {**document, head: _mutate(document.get(head), rest, value)}
    if isinstance(document, list) and isinstance(head, int) and document:
        index = head % len(document)
        return [_mutate(v, rest, value) if i == index else v for i, v in enumerate(document)]
    return _mutate({}, path, value)


FIELDS = st.sampled_from([["name"], ["widths"], ["widths", 0], ["seeds"], ["seeds", 0], ["search", "step"],
                          ["search", "sampler"], ["search", "key"], ["search", "noise_seeds"], ["search", "extend"],
                          ["search", "extend_max"], ["setups"], ["setups", "mup_muon"],
                          ["setups", "mup_muon", "search", "log2_min"], ["setups", "sp_adamw", "overrides"],
                          ["overrides"], ["overrides", 0], ["batch_trials"], ["coord_check"], ["model"], ["bogus"]])


@CASES
@given(FIELDS, YAML_SCALARS | st.lists(YAML_SCALARS, max_size=3))
def test_valid_spec_with_one_field_mutated(tmp_path_factory: pytest.TempPathFactory, field: list[Any],
                                           value: Any) -> None:
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_text(yaml.safe_dump(_mutate(SMOKE, field, value)))
    one_line_or_done(lambda: load_spec(str(path)))


@pytest.fixture(scope="module")
def transfer_document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run = tmp_path_factory.mktemp("transfer") / "run"
    shutil.copytree(BASELINE, run)
    result = make_transfer(run, 128)
    return json.loads(json.dumps(result.document))


TRANSFER_FIELDS = st.sampled_from([["config"], ["config", "model", "width"], ["config", "optimizer", "lr"],
                                   ["config", "train", "steps"], ["config", "parametrization", "roles"],
                                   ["param_groups"], ["param_groups", 0], ["param_groups", 1, "lr"],
                                   ["param_groups", 2, "init_std"], ["param_groups", 0, "shape"], ["lr"],
                                   ["optimizer", "name"], ["train", "seq_len"], ["computed_digest"], ["width"]])


@CASES
@given(TRANSFER_FIELDS, YAML_SCALARS | st.lists(YAML_SCALARS, max_size=3))
@example(["width"], float("inf"))  # int(inf) raised OverflowError, a traceback, once
def test_transfer_and_plan_files(tmp_path_factory: pytest.TempPathFactory, transfer_document: dict[str, Any],
                                 field: list[Any], value: Any) -> None:
    """What `train --config FILE` and `Plan.load` read; Plan.load, the Python API, refuses with ValueError too."""
    document = _mutate(transfer_document, field, value)
    path = tmp_path_factory.mktemp("file") / "transfer.yaml"
    path.write_text(yaml.safe_dump(document))

    def train_config() -> None:
        cfg = load_config_file(path)
        check_derived_sections(document, cfg, path)

    one_line_or_done(train_config)
    try:
        Plan.load(path)
    except (ValueError, UserError) as exc:
        assert "\n" not in str(exc) and str(exc)


def _damage_table(text: str, how: str, where: float, junk: str) -> str:
    lines = text.splitlines()
    if how == "truncate":
        return text[: int(where * len(text))]
    if how == "drop_column":
        rows = [line.split(",") for line in lines]
        index = int(where * (len(rows[0]) - 1))
        return "\n".join(",".join(r[:index] + r[index + 1:]) for r in rows) + "\n"
    if how == "cell":
        row = 1 + int(where * (len(lines) - 2))
        cells = lines[row].split(",")
        cells[int(where * 7919) % len(cells)] = junk
        lines[row] = ",".join(cells)
        return "\n".join(lines) + "\n"
    if how == "header_only":
        return lines[0] + "\n"
    return ""


TABLE_DAMAGE = st.tuples(st.sampled_from(["trials.csv", "curves.csv", "summary.json", "config.yaml"]),
                         st.sampled_from(["truncate", "drop_column", "cell", "header_only", "empty"]),
                         st.floats(0, 1), st.sampled_from(["nan", "inf", "-inf", "", "abc", "1e999", "-1", "0",
                                                           "3.5", '"x,y"', "ünï"]))


@pytest.mark.slow
@CASES
@given(TABLE_DAMAGE)
def test_run_directory_tables(tmp_path_factory: pytest.TempPathFactory, damage: tuple[str, str, float, str]) -> None:
    """The files `plot`, `transfer`, `verify` and `compare` read from a run directory, damaged."""
    name, how, where, junk = damage
    run = tmp_path_factory.mktemp("tables") / "run"
    shutil.copytree(BASELINE, run)
    target = run / name
    target.write_text(_damage_table(target.read_text(), how, where, junk))
    before = snapshot(run)
    one_line_or_done(lambda: summarize_run(run))
    one_line_or_done(lambda: make_transfer(run, 256))
    assert snapshot(run) == before


@CASES
@given(st.one_of(
    st.builds(lambda scheme, user, password, port, db: f"{scheme}://{user}:{password}@127.0.0.1:{port}/{db}",
              st.sampled_from(["postgresql", "postgresql+psycopg", "mysql", "bogus", "sqlite"]),
              st.text(string.ascii_letters, max_size=5), st.text(string.printable.strip(), max_size=8),
              st.sampled_from([1, 9, 70000]), st.text(string.ascii_letters, max_size=5)),
    st.text(max_size=30).filter(lambda s: "://" in s or "/" not in s)))
def test_storage_urls(tmp_path_factory: pytest.TempPathFactory, url: str) -> None:
    run = tmp_path_factory.mktemp("storage")
    os.chdir(run)
    try:
        one_line_or_done(lambda: open_storage(url, run))
    finally:
        os.chdir(Path(__file__).parents[2])
    password = url.split("://", 1)[1].split("@", 1)[0].partition(":")[2] if "://" in url and "@" in url else ""
    if password:
        try:
            open_storage(url, run)
        except UserError as exc:
            assert f":{password}@" not in exc.one_line()


@CASES
@given(st.sampled_from(["text", "tokens"]), st.binary(max_size=64), st.integers(1, 300))
def test_data_files(tmp_path_factory: pytest.TempPathFactory, kind: str, data: bytes, vocab: int) -> None:
    path = tmp_path_factory.mktemp("data") / "data.bin"
    path.write_bytes(data)
    config = DataConfig(kind=kind, path=str(path), vocab_size=vocab if kind == "tokens" else None)
    one_line_or_done(lambda: load_corpus(config, 16))


NUMBERS = st.one_of(st.text(max_size=10), st.integers(-10**9, 10**9).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.lists(st.integers(-100, 5000), max_size=4).map(lambda xs: ",".join(map(str, xs))))


@CASES
@given(NUMBERS, st.integers(-5, 64))
def test_numeric_flags(text: str, threads: int) -> None:
    """--width/--widths, --factors, --span/--step/--tolerance, --workers/--threads, coord-check --widths."""
    for parse in (parse_widths, parse_factors, lambda t: parse_coord_widths(t, 32),
                  lambda t: positive_number("--span", t, "1.5"), lambda t: resolve_workers(t, threads)):
        one_line_or_done(lambda: parse(text))
    value = None
    try:
        value = positive_number("--tolerance", text, "1")
    except UserError:
        pass
    assert value is None or (math.isfinite(value) and value > 0)


@pytest.mark.long
def test_generated_input_at_ten_times_the_examples() -> None:
    """The same properties with ten times as many cases (``-m long``).

    Covered in CI by `tests/robustness/test_generated_input.py::test_sweep_spec_documents`,
    `tests/robustness/test_generated_input.py::test_config_overrides` and the file's other properties at their
    default number of cases."""
    import subprocess
    import sys

    env = {**os.environ, "MUTRANSFER_GENERATED_EXAMPLES": str(10 * EXAMPLES)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow", __file__], env=env,
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:]
