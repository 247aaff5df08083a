"""The transfer file's one layout (``mutransfer/analysis/transfer_layout.py``): a sweep's and an import's files hold the
same fields apart from the ones the layout lists as one source's, every float of a trainer sweep's file is
written at its documented precision, and the files written in the older layouts still load.

The old files in ``tests/baselines/transfer_v1/`` were written by commit 664166f (``mutransfer_transfer: 1`` and
``import``), from ``tests/baselines/smoke`` (``transfer --width 256``: ``sweep.yaml``, ``sweep.json``), from the
trainer sweep in ``tests/baselines/trainer_sweep`` (``transfer --width 1024``: ``trainer.yaml``,
``trainer.json``) and from ``docs/data/import/example`` (``transfer --at params=7e9 --at tokens=2e11 --at
batch=1024``: ``import.yaml``, ``import.json``). The trainer sweep's ``config.yaml``, ``trials.csv``,
``curves.csv`` and ``summary.json`` are those that commit's ``mutransfer sweep`` wrote for the drifting trainer
of ``tests/sweep/test_trainer_outputs.py`` over widths 32, 64 and 128 (one seed, log2 η from -8 to -3 at step 1):
three widths, so its transfer carries a backtest."""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.analysis.transfer_targets import read_targets
from mutransfer.config import load_config_file
from mutransfer.errors import UserError
from mutransfer.files import STATISTIC_DIGITS
from mutransfer.precision import LR_DIGITS, LR_KEYS, NOISE_DIGITS, OCTAVE_DECIMALS, OCTAVE_KEYS
from mutransfer.table.plan import Plan
from mutransfer.transfer.derived import check_derived_sections
from mutransfer.analysis.transfer_layout import (COMMON_FIELDS, IMPORT, IMPORT_FIELDS, SWEEP, SWEEP_FIELDS,
                                                  TRANSFER_KEY, TRANSFER_VERSION, fields_of, undeclared, upgraded)

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "tests" / "baselines"
OLD = BASELINES / "transfer_v1"
IMPORT_EXAMPLE = ROOT / "docs" / "data" / "import" / "example"
IMPORT_TARGET = {"params": 7e9, "tokens": 2e11, "batch": 1024.0}


def parsed(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def transfer(root: Path, name: str, *words: str) -> Path:
    """``mutransfer transfer WORDS --out ROOT/NAME`` (JSON for a ``.json`` name)."""
    out = root / name
    fmt = ["--format", "json"] if out.suffix == ".json" else []
    result = invoke(CliRunner(), "transfer", *words, *fmt, "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files ``transfer`` writes today from the trainer sweep, YAML and JSON."""
    root = tmp_path_factory.mktemp("trainer")
    (root / "run").mkdir()
    for file in ("config.yaml", "trials.csv", "curves.csv"):
        shutil.copy(BASELINES / "trainer_sweep" / file, root / "run" / file)
    return {name: transfer(root, name, "--width", "1024", "--from", str(root / "run"))
            for name in ("trainer.yaml", "trainer.json")}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file ``transfer`` writes today from the import, JSON."""
    root = tmp_path_factory.mktemp("imported")
    shutil.copytree(IMPORT_EXAMPLE, root / "run", ignore=shutil.ignore_patterns("transfer*"))
    at = [word for name, value in IMPORT_TARGET.items() for word in ("--at", f"{name}={value:g}")]
    return transfer(root, "import.json", "--from", str(root / "run"), *at)


def test_the_layout_lists_each_field_once() -> None:
    listed = [*COMMON_FIELDS, *SWEEP_FIELDS, *IMPORT_FIELDS]
    assert len(listed) == len(set(listed))


def test_a_sweep_s_and_an_import_s_transfer_files_have_one_layout(trainer: dict[str, Path], imported: Path) -> None:
    """The trainer sweep's file and the import's (both JSON, as a script reads them) hold every common field and,
    besides, only fields the layout lists as their source's."""
    sweep, table = parsed(trainer["trainer.json"]), parsed(imported)
    for document, kind in ((sweep, SWEEP), (table, IMPORT)):
        assert document[TRANSFER_KEY] == TRANSFER_VERSION and document["source"]["kind"] == kind
        assert undeclared(document) == []
    assert fields_of(sweep) - set(SWEEP_FIELDS) == set(COMMON_FIELDS) == fields_of(table) - set(IMPORT_FIELDS)
    assert fields_of(sweep) & set(IMPORT_FIELDS) == set() == fields_of(table) & set(SWEEP_FIELDS)
    assert sweep["prediction"]["target"] == {"width": 1024} and table["prediction"]["target"] == IMPORT_TARGET
    assert sweep["config"] is None is table["config"]
    for document in (sweep, table):
        prediction = document["prediction"]
        assert prediction["lr"] == document["lr"] and prediction["log2_lr"] == document["log2_lr"]
        assert prediction["lr_range"] == pytest.approx([2.0**v for v in prediction["interval"]], rel=1e-4)


def _decimals(value: float) -> int:
    return max(0, -int(Decimal(repr(value)).as_tuple().exponent))


def _digits(value: float) -> int:
    return len(Decimal(repr(value)).normalize().as_tuple().digits)


SOURCE_OCTAVES = ("slope", "slope_ci", "log2_lr_star")
"""The source's fields in octaves (with each axis's ``<axis>_slope`` and ``<axis>_slope_ci``)."""
STATISTICS = ("asymmetry", "asymmetry_se_log")


def _named(key: str) -> bool:
    """Whether ``key`` has a documented precision of its own (else the one above it holds, noise digits at the
    top)."""
    return key in OCTAVE_KEYS | LR_KEYS or key in (*SOURCE_OCTAVES, *STATISTICS) or key.endswith(("_slope",
                                                                                                  "_slope_ci"))


def _documented(key: str) -> Callable[[float], bool]:
    """The precision docs/transfer.md gives a float under ``key``."""
    if key in OCTAVE_KEYS or key in SOURCE_OCTAVES or key.endswith(("_slope", "_slope_ci")):
        return lambda value: _decimals(value) <= OCTAVE_DECIMALS
    if key in LR_KEYS:
        return lambda value: _digits(value) <= LR_DIGITS
    if key in STATISTICS:
        return lambda value: _digits(value) <= STATISTIC_DIGITS
    return lambda value: _digits(value) <= NOISE_DIGITS


def _over(data: Any, rule: Callable[[float], bool], path: str = "") -> list[str]:
    """The floats under ``data`` that ``rule`` (the nearest named key's) does not allow, by path."""
    if isinstance(data, float):
        return [] if rule(data) else [f"{path}: {data!r}"]
    if isinstance(data, dict):
        return [bad for key, value in data.items()
                for bad in _over(value, _documented(key) if _named(key) else rule, f"{path}.{key}")]
    if isinstance(data, list):
        return [bad for value in data for bad in _over(value, rule, path)]
    return []


@pytest.mark.parametrize("name", ["trainer.yaml", "trainer.json"])
def test_every_float_of_a_trainer_sweep_s_transfer_file_has_at_most_its_documented_digits(
        trainer: dict[str, Path], name: str) -> None:
    document = parsed(trainer[name])
    assert "median_miss" in document["backtest"], "the sweep's backtest is in the file"
    assert _over(document, _documented("")) == []
    old = parsed(OLD / name)
    assert _over(old, _documented("")) == [f".backtest.median_miss: {old['backtest']['median_miss']!r}"], \
        "the old file's float noise is caught"


def _one_line(output: str) -> str:
    assert len(output.strip().splitlines()) == 1, output
    return " ".join(output.split())


@pytest.mark.parametrize("name", ["sweep.yaml", "sweep.json"])
def test_an_old_built_in_sweep_s_transfer_file_still_trains_and_loads_as_a_plan(name: str) -> None:
    """What ``train --config`` reads of a layout-1 file: its config loads and its computed sections still match it
    (a JSON file's too: read as JSON); ``Plan.load`` reads it as before."""
    path = OLD / name
    document = parsed(path)
    assert document[TRANSFER_KEY] == 1
    cfg = load_config_file(path, ["train.steps=3"])
    assert cfg.model.width == 256 and cfg.optimizer.lr == document["lr"] and cfg.train.steps == 3
    check_derived_sections(document, load_config_file(path), path)
    plan = Plan.load(path)
    assert plan.width == 256 and plan.lr == document["lr"] and len(plan.params) == len(document["param_groups"])


def test_train_trains_an_old_built_in_sweep_s_json_transfer_file(runner: CliRunner, tmp_path: Path,
                                                                 text_file: Path) -> None:
    """Two steps on a small text: the JSON is read as JSON (YAML 1.1 read its ``1e-08`` as a string)."""
    document = parsed(OLD / "sweep.json")
    result = invoke(runner, "train", "--config", str(OLD / "sweep.json"), "train.steps=2", "train.eval_every=2",
                    "train.eval_batches=1", "train.device=cpu", "data.kind=text", f"data.path={text_file}",
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "run" / "result.json").read_text())["config"]
    assert config["optimizer"]["lr"] == document["lr"] and config["model"]["width"] == 256


@pytest.mark.parametrize("name", ["trainer.yaml", "trainer.json", "import.yaml", "import.json"])
def test_an_old_transfer_file_with_no_model_config_is_refused_by_train_in_one_line(runner: CliRunner, tmp_path: Path,
                                                                                 name: str) -> None:
    path = OLD / name
    document = parsed(path)
    result = invoke(runner, "train", "--config", str(path), "--out", str(tmp_path / "train"))
    assert result.exit_code == 2 and not (tmp_path / "train").exists()
    line = _one_line(result.output)
    if name.startswith("trainer"):
        assert document[TRANSFER_KEY] == 1 and " ".join(document["trainer"]["at_target"]) in line
    else:
        assert document[TRANSFER_KEY] == IMPORT and "imported table" in line and f"η* = {document['lr']}" in line


@pytest.mark.parametrize("name", ["sweep.yaml", "sweep.json", "trainer.yaml", "trainer.json", "import.yaml",
                                  "import.json"])
def test_verify_and_plot_read_an_old_transfer_file_s_target(tmp_path: Path, name: str) -> None:
    """``verify`` and ``plot`` mark the targets of the transfer files in the run directory (``read_targets``)."""
    shutil.copy(OLD / name, tmp_path / f"transfer_{name}")
    document = parsed(OLD / name)
    (target,) = read_targets(tmp_path)
    if document[TRANSFER_KEY] == 1:
        at, interval = {"width": float(document["prediction"]["width"])}, document["prediction"]["interval"]
    else:
        at, interval = document["target"], document["interval_log2"]
    assert target.at == at and target.log2_lr == document["log2_lr"] and list(target.interval or ()) == interval
    assert target.setup == document["source"]["setup"]


@pytest.mark.parametrize("name", ["sweep.yaml", "sweep.json", "trainer.yaml", "trainer.json", "import.yaml",
                                  "import.json"])
def test_an_old_file_reads_as_the_layout_written_today(trainer: dict[str, Path], imported: Path, name: str) -> None:
    """``upgraded``: an old file holds the layout's fields, those of today's file from the same run where it is at
    hand (an old import's backtest is its line only; the built-in sweep's two widths have none)."""
    document = upgraded(parsed(OLD / name), name)
    kind = IMPORT if name.startswith("import") else SWEEP
    assert document[TRANSFER_KEY] == TRANSFER_VERSION and document["source"]["kind"] == kind
    assert undeclared(document) == []
    backtest = {field for field in COMMON_FIELDS if field.startswith("backtest")}
    own = set(IMPORT_FIELDS if kind == IMPORT else SWEEP_FIELDS)
    assert set(COMMON_FIELDS) - backtest <= fields_of(document) <= set(COMMON_FIELDS) | own
    if name.startswith("sweep"):
        return  # today's file from the smoke sweep: test_trainer_outputs.py
    today = parsed(trainer[name] if kind == SWEEP else imported)
    assert fields_of(today) - fields_of(document) <= backtest
    assert document["prediction"]["target"] == today["prediction"]["target"]


def test_an_unknown_layout_or_a_file_without_its_config_is_refused_in_one_line(runner: CliRunner,
                                                                              tmp_path: Path) -> None:
    document = parsed(OLD / "import.yaml")
    path = tmp_path / "transfer_next.yaml"
    path.write_text(yaml.safe_dump({**document, TRANSFER_KEY: 3}))
    result = invoke(runner, "train", "--config", str(path))
    assert result.exit_code == 2 and "mutransfer_transfer 3 is not a transfer layout" in _one_line(result.output)
    assert read_targets(tmp_path) == [], "a figure leaves the file out"
    with pytest.raises(UserError):
        upgraded({TRANSFER_KEY: "sweep"}, "x.yaml")
    sweep = parsed(OLD / "sweep.yaml")
    path.write_text(yaml.safe_dump({key: value for key, value in sweep.items() if key != "config"}))
    result = invoke(runner, "train", "--config", str(path))
    assert result.exit_code == 2 and "a transfer file with no config section" in _one_line(result.output)


def test_the_docs_page_that_owns_the_transfer_file_names_every_field() -> None:
    page = (ROOT / "docs" / "transfer.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_0-9.<>]+)`", page))
    missing = [field for field in (*COMMON_FIELDS, *SWEEP_FIELDS, *IMPORT_FIELDS)
               if field.replace("*", "<axis>") not in named]
    assert missing == []
    assert f"mutransfer_transfer: {TRANSFER_VERSION}" in page
