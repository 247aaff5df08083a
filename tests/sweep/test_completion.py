"""A run directory knows whether its sweep finished: an interrupted sweep says what is missing, labels its verdicts
partial, and transfer, verify and compare refuse it in one line unless --partial, whose outputs say so and do not
outlive the resume that finishes the sweep. Also the sweep's other first-hour guards: LR values written as log2
bounds, a search override every setup shadows, the dry run's searched range, YAML that keeps Unicode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import invoke, write_tiny_spec
from mutransfer.analysis.summary import read_summary
from mutransfer.commands.dry_run import search_range
from mutransfer.errors import UserError
from mutransfer.files import dump_yaml
from mutransfer.sweep.store.completion import SweepStatus
from mutransfer.sweep.spec.search import parse_search
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.run.trainer import InProcessTrainer

TRAINED_BEFORE_CTRL_C = 3
"""Trials the interrupted sweep trains before Ctrl-C: the first setup's grid at the first width (the setups take
turns width by width, ``sweep.plan.sweep_plan``), so the other is not started."""


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> tuple[Path, Path, str]:
    """The tiny spec's sweep stopped by Ctrl-C during its fourth trial: (spec path, run directory, its output)."""
    folder = tmp_path_factory.mktemp("completion")
    spec = write_tiny_spec(folder, text_file)
    run = folder / "run"
    fit = InProcessTrainer.fit
    calls = {"n": 0}

    def fit_then_interrupt(self: InProcessTrainer, cfgs: list, on_eval: object, on_step: object = None) -> list:
        calls["n"] += 1
        if calls["n"] > TRAINED_BEFORE_CTRL_C:
            raise KeyboardInterrupt
        return fit(self, cfgs, on_eval, on_step)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(InProcessTrainer, "fit", fit_then_interrupt)
        result = invoke(CliRunner(), "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert result.exit_code == 130, result.output
    return spec, run, result.output


def test_an_interrupted_sweep_says_what_is_missing_and_labels_its_verdicts_partial(
        interrupted: tuple[Path, Path, str]) -> None:
    _, run, output = interrupted
    summary = read_summary(run)
    assert summary is not None and summary.status is not None
    status = summary.status
    assert status["complete"] is False and status["done"] == TRAINED_BEFORE_CTRL_C and status["planned"] == 12
    trials = pd.read_csv(run / "trials.csv")
    started = set(trials[trials["status"] != "interrupted"]["setup"])
    assert len(started) == 1 and status["not_started"] == sorted({"sp_adamw", "mup_muon"} - started)
    assert set(status["unfinished"]) == {"sp_adamw", "mup_muon"} and f"--out {run}" in status["resume"]
    assert (f"incomplete: {TRAINED_BEFORE_CTRL_C} of 12 trials, setups not started: {status['not_started'][0]}"
            in output)
    assert "(partial)" in output and "partial: incomplete" in output


@pytest.mark.parametrize("command", [["transfer", "--width", "4096"], ["verify", "--width", "128", "--dry-run"]],
                         ids=["transfer", "verify"])
def test_transfer_and_verify_refuse_an_unfinished_sweep_in_one_line(interrupted: tuple[Path, Path, str],
                                                                    command: list[str]) -> None:
    _, run, _ = interrupted
    before = sorted(p.name for p in run.iterdir())
    result = invoke(CliRunner(), *command, "--from", str(run))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and f"incomplete: {TRAINED_BEFORE_CTRL_C} of 12 trials" in line
    assert "mutransfer sweep" in line and "--partial" in line
    assert sorted(p.name for p in run.iterdir()) == before


def test_compare_refuses_an_unfinished_run_on_either_side(interrupted: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, run, _ = interrupted
    result = invoke(CliRunner(), "compare", str(run), str(run), "--out", str(tmp_path / "cmp"))
    assert result.exit_code == 2 and "compare: sweep" in result.output and "--partial" in result.output
    assert not (tmp_path / "cmp").exists()


def test_partial_outputs_are_marked_and_removed_once_the_resume_finishes(interrupted: tuple[Path, Path, str],
                                                                        tmp_path: Path) -> None:
    spec, original, _ = interrupted
    run = tmp_path / "run"
    shutil.copytree(original, run)
    runner = CliRunner()
    result = invoke(runner, "transfer", "--width", "256", "--from", str(run), "--partial")
    assert result.exit_code == 0, result.output
    partial_file = run / "transfer_w256.partial.yaml"
    document = yaml.safe_load(partial_file.read_text())
    assert document["partial"]["complete"] is False and "PARTIAL" in result.output
    assert not (run / "transfer_w256.yaml").exists()

    resumed = invoke(runner, "sweep", str(spec), "--out", str(run), "--workers", "1", "--threads", "1")
    assert resumed.exit_code == 0, resumed.output
    assert "sweep tiny: complete" in resumed.output and "(partial)" not in resumed.output
    assert not partial_file.exists()
    summary = read_summary(run)
    assert summary is not None and summary.status is not None and summary.status["complete"] is True

    final = invoke(runner, "transfer", "--width", "256", "--from", str(run))
    assert final.exit_code == 0, final.output
    assert "partial" not in yaml.safe_load((run / "transfer_w256.yaml").read_text())

    changed = tmp_path / "changed"
    shutil.copytree(run, changed)
    record = yaml.safe_load((changed / "config.yaml").read_text())
    record["spec"]["seeds"] = [0, 1]
    (changed / "config.yaml").write_text(yaml.safe_dump(record))
    compared = invoke(runner, "compare", str(run), str(changed), "--out", str(tmp_path / "cmp"))
    assert compared.exit_code == 0, compared.output
    assert "Config differences (B vs A):\nspec: `seeds`: added `1`\n" in compared.output


def test_a_status_reads_back_as_written_and_an_old_summary_has_none() -> None:
    status = SweepStatus(done=3, planned=10, unfinished=("a", "b"), not_started=("b",), resume="mutransfer sweep x")
    assert SweepStatus.from_dict(json.loads(json.dumps(status.as_dict()))) == status
    assert status.line() == "incomplete: 3 of 10 trials, setups not started: b, setups unfinished: a"
    assert SweepStatus(done=10, planned=10).line() == "complete" and SweepStatus.from_dict(None) is None


@pytest.mark.parametrize(("words", "says"), [
    (["setups.sp_adamw.search.log2_min=0.001", "setups.sp_adamw.search.log2_max=0.5"],
     "write log2_min: -9.97, log2_max: -1"),
    (["setups.sp_adamw.search.log2_min=0", "setups.sp_adamw.search.log2_max=3"], "LRs 1 … 8"),
    (["search.log2_min=-12"], "override those instead, e.g. setups.sp_adamw.search.log2_min=-12"),
], ids=["values-as-log2", "all-above-one", "shadowed"])
def test_lr_values_written_as_log2_bounds_are_refused_with_the_conversion(words: list[str], says: str) -> None:
    with pytest.raises(UserError) as caught:
        load_spec("default", words)
    assert says in caught.value.one_line()


def test_a_range_reaching_above_one_from_below_is_allowed() -> None:
    spec = load_spec("smoke", ["setups.mup_muon.search.log2_max=1"])
    assert max(spec.setups[1].search[0].grid()) == 1


def test_the_dry_run_shows_each_searched_range_as_exponents_and_values() -> None:
    search = parse_search("search", {"key": "optimizer.lr", "log2_min": -10, "log2_max": -4, "step": 1})
    assert search_range(search) == "LR 2^-10 … 2^-4 = 0.000977 … 0.0625"


def test_yaml_keeps_unicode_and_floats_exact() -> None:
    text = dump_yaml({"note": "± 0.2 σ", "x": -2.3900000000000055, "tiny": 1e-8})
    assert "± 0.2 σ" in text and "\\x" not in text and "\\u" not in text
    data = yaml.safe_load(text)
    assert data["x"] == -2.3900000000000055 and isinstance(data["tiny"], float)
