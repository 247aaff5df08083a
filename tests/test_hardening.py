"""Hardening: storage passwords never printed or written (and --storage from MUTRANSFER_STORAGE), files that are
not UTF-8 text, and a transfer file whose computed sections were edited by hand."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.cli import app
from mutransfer.errors import redact

CLI = [sys.executable, "-m", "mutransfer"]
PASSWORD = "Zq7-not-a-real-password"


def test_redact_hides_every_url_password() -> None:
    text = (f"postgresql://u:{PASSWORD}@h:5432/db, postgresql+psycopg://me:p%40ss@h/db, "
            "sqlite:///tmp/x.db, postgresql://h/db, mail a@b.c")
    out = redact(text)
    assert PASSWORD not in out and "p%40ss" not in out
    assert "postgresql://u:***@h:5432/db" in out and "postgresql+psycopg://me:***@h/db" in out
    assert "sqlite:///tmp/x.db" in out and "postgresql://h/db" in out and "a@b.c" in out


@pytest.mark.parametrize("via_env", [False, True], ids=["--storage", "MUTRANSFER_STORAGE"])
def test_an_unreachable_database_error_never_shows_the_password(tmp_path: Path, via_env: bool) -> None:
    url = f"postgresql://someone:{PASSWORD}@127.0.0.1:1/db"
    env = {**os.environ, "MUTRANSFER_STORAGE": url} if via_env else {k: v for k, v in os.environ.items()
                                                                       if k != "MUTRANSFER_STORAGE"}
    args = [*CLI, "sweep", "smoke", "--out", str(tmp_path / "run")] + ([] if via_env else ["--storage", url])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr
    assert "postgresql://someone:***@127.0.0.1:1/db" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_database_sweep_writes_and_prints_no_password(tmp_path: Path, text_file: Path, pg_url: str) -> None:
    """A real sweep on PostgreSQL (URL from MUTRANSFER_STORAGE): no output, file or dry run holds the password."""
    password = pg_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    secret = f":{password}@"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": f"sec{uuid.uuid4().hex[:8]}",
        "setups": {"mup_muon": {"overrides": ["optimizer=muon"], "search": {"log2_min": -5, "log2_max": -3}}},
        "widths": [32, 64], "search": {"step": 1, "noise_seeds": 0, "extend": False},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=2",
                      "train.seq_len=16", "train.eval_every=0", "train.eval_batches=1", "data=text",
                      f"data.path={text_file}"]}))
    env = {**os.environ, "MUTRANSFER_STORAGE": pg_url}
    out = tmp_path / "run"
    printed = ""
    for args in (["sweep", str(spec), "--out", str(out), "--dry-run"], ["sweep", str(spec), "--out", str(out)],
                 ["transfer", "--width", "256", "--from", str(out)],
                 ["verify", "--width", "64", "--from", str(out), "--factors", "0.5,1,2", "--dry-run"]):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        printed += proc.stdout + proc.stderr
    assert not (out / "optuna.journal").exists(), "the sweep should have used the database from the environment"
    assert secret not in printed
    written = [p for p in out.rglob("*") if p.is_file()]
    assert {"config.yaml", "trials.csv", "summary.json", "transfer_w256.yaml"} <= {p.name for p in written}
    for path in written:
        assert secret.encode() not in path.read_bytes(), path


@pytest.fixture(scope="module")
def pg_url() -> str:
    url = os.environ.get("MUTRANSFER_TEST_POSTGRES")
    if url:
        return url
    message = ("no PostgreSQL server for the secrets test: run `eval \"$(bash scripts/postgres_test_server.sh)\"` "
               "(as .ci/run does) to start one")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


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
