"""Files that are damaged or not what they claim: files that are not UTF-8 text, a transfer file whose computed
sections were edited by hand, a journal cut mid-record or damaged before its end, and a disk that fills while
outputs are written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import HARD_POINTS, FaultTally, completed_points, hard_spec, no_loss
from mutransfer.cli import app

CLI = [sys.executable, "-m", "mutransfer"]


@pytest.mark.parametrize("command", [["sweep", "{path}"], ["train", "--config", "{path}"],
                                     ["transfer", "--width", "64", "--from", "{dir}"], ["plot", "{dir}"]])
def test_files_that_are_not_utf8_text_get_one_line(tmp_path: Path, command: list[str]) -> None:
    binary = b"\x00\xff\x13binary\xfe"
    path = tmp_path / "spec.yaml"
    path.write_bytes(binary)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_bytes(binary)
    (run_dir / "trials.csv").write_bytes(binary)
    args = [word.format(path=path, dir=run_dir) for word in command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not UTF-8 text" in lines[0], result.output
    assert path.read_bytes() == binary and (run_dir / "trials.csv").read_bytes() == binary


@pytest.fixture(scope="module")
def transfer_file(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> Path:
    root = tmp_path_factory.mktemp("edited")
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "edit", "setups": {"mup_muon": {"overrides": ["optimizer=muon"],
                                                "search": {"log2_min": -6, "log2_max": -2}}},
        "widths": [32, 64], "search": {"step": 2, "noise_seeds": 0},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=2",
                      "train.seq_len=16", "train.eval_every=0", "train.eval_batches=1", "data=text",
                      f"data.path={text_file}"]}))
    runner = CliRunner()
    assert runner.invoke(app, ["sweep", str(spec), "--out", str(root / "run")]).exit_code == 0
    result = runner.invoke(app, ["transfer", "--width", "128", "--from", str(root / "run")])
    assert result.exit_code == 0, result.output
    return root / "run" / "transfer_w128.yaml"


def edited(source: Path, target: Path, edit) -> Path:  # noqa: ANN001 - a function of the document
    document = yaml.safe_load(source.read_text())
    edit(document)
    target.write_text(yaml.safe_dump(document, sort_keys=False))
    return target


@pytest.mark.parametrize(("field", "edit"), [
    ("param_groups[blocks.0.attn.q.weight].init_std",
     lambda d: next(g for g in d["param_groups"] if g["name"] == "blocks.0.attn.q.weight").update(init_std=0.5)),
    ("param_groups[lm_head.weight].lr", lambda d: d["param_groups"][-1].update(lr=1.0)),
    ("lr is", lambda d: d.update(lr=d["lr"] * 2)),
    ("train.steps", lambda d: d["train"].update(steps=999)),
])
def test_train_refuses_a_transfer_file_whose_computed_sections_were_edited(transfer_file: Path, tmp_path: Path,
                                                                          field: str, edit) -> None:  # noqa: ANN001
    path = edited(transfer_file, tmp_path / "edited.yaml", edit)
    before = path.read_bytes()
    result = CliRunner().invoke(app, ["train", "--config", str(path), "--out", str(tmp_path / "t")])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and field in line and "edit the config keys instead" in line, line
    assert path.read_bytes() == before and not (tmp_path / "t").exists()


def test_train_honours_an_edit_to_the_config_section(transfer_file: Path, tmp_path: Path) -> None:
    """The config is what training reads: editing it (the computed sections now stale but untouched) trains that."""
    path = edited(transfer_file, tmp_path / "config_edited.yaml",
                  lambda d: d["config"]["train"].update(steps=2))
    result = CliRunner().invoke(app, ["train", "--config", str(path), "--out", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    saved = yaml.safe_load((tmp_path / "t" / "config.yaml").read_text())
    assert saved["train"]["steps"] == 2


@pytest.mark.slow
def test_a_journal_cut_mid_record_is_repaired_and_the_rerun_finishes_every_point_once(
        tmp_path: Path, text_file: Path, fault_tally: FaultTally) -> None:
    spec, out = hard_spec(tmp_path, text_file), tmp_path / "run"
    command = [*CLI, "sweep", str(spec), "--out", str(out)]
    assert subprocess.run(command, capture_output=True, timeout=300).returncode == 0
    journal = out / "optuna.journal"
    whole = journal.read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
    assert b'"op_code": 6' in last or b'"op_code"' in last
    journal.write_bytes(whole[: len(whole) - len(last) // 2 - 1])  # power loss halfway through the last record
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "cut mid-write" in rerun.stderr and "Traceback" not in rerun.stderr
    backups = list(out.glob("optuna.journal.damaged-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == whole[: len(whole) - len(last) // 2 - 1]
    trials = pd.read_csv(out / "trials.csv")
    finished = trials[trials["status"] == "ok"]
    assert len(finished) == HARD_POINTS and not finished.duplicated(["width", "log2_lr"]).any()
    lost = trials[trials["status"] != "ok"]  # the cut record was the last trial's completion: trained again
    assert len(lost) <= 1 and set(lost["status"]) <= {"abandoned"}
    assert fault_tally(HARD_POINTS, completed_points(journal), [rerun.stderr]) == no_loss(HARD_POINTS)


@pytest.mark.slow
def test_a_journal_damaged_before_its_end_is_refused_untouched(tmp_path: Path, text_file: Path) -> None:
    spec, out = hard_spec(tmp_path, text_file), tmp_path / "run"
    command = [*CLI, "sweep", str(spec), "--out", str(out)]
    assert subprocess.run(command, capture_output=True, timeout=300).returncode == 0
    journal = out / "optuna.journal"
    lines = journal.read_bytes().split(b"\n")
    lines[3] = lines[3][:10]
    journal.write_bytes(b"\n".join(lines))
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    for args in (command, [*CLI, "export", "--storage", str(journal), "--study", "hard", "--out", str(out)]):
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "damaged at record 4" in proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.slow
def test_a_full_disk_fails_in_one_line_and_leaves_the_previous_outputs_intact(tmp_path: Path, text_file: Path,
                                                                             fault_tally: FaultTally) -> None:
    """RLIMIT_FSIZE stands in for a full disk: every write past 1 KB fails with EFBIG, as ENOSPC would."""
    import resource

    spec, out = hard_spec(tmp_path, text_file), tmp_path / "run"
    command = [*CLI, "sweep", str(spec), "--out", str(out)]
    assert subprocess.run(command, capture_output=True, timeout=300).returncode == 0
    outputs = ("trials.csv", "curves.csv", "summary.json", "transfer.png", "lr_drift.png")
    before = {name: (out / name).read_bytes() for name in outputs}

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    journal = out / "optuna.journal"  # changed since the tables were written: the rerun must rewrite them
    os.utime(journal, ns=(journal.stat().st_atime_ns, (out / "summary.json").stat().st_mtime_ns + 1))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, preexec_fn=small_files)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    error = proc.stderr.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: cannot write") and "File too large" in error[0]
    assert "the previous file is unchanged and finished trials are kept" in error[0]
    assert {name: (out / name).read_bytes() for name in outputs} == before
    assert not [p for p in out.iterdir() if ".tmp" in p.name]
    finished = completed_points(out / "optuna.journal")
    assert fault_tally(HARD_POINTS, finished, [proc.stderr, proc.stdout]) == no_loss(HARD_POINTS)


