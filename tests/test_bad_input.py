"""Bad input, tried as a new user would: exit code 2, one line naming the problem and the fix, no
traceback, and nothing already in the run directory changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.cli import app


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, text_file: Path) -> dict[str, Path]:
    """A finished tiny sweep, its spec, and a few broken files next to it."""
    root = tmp_path_factory.mktemp("bad")
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "bad", "setups": {"mup_muon": {"overrides": ["optimizer=muon"], "search": {"log2_min": -5,
                                                                                            "log2_max": -3}}},
        "widths": [32, 64], "search": {"step": 1},
        "overrides": ["model.depth=1", "parametrization.base_width=32", "train.steps=4", "train.batch_size=2",
                      "train.seq_len=16", "train.eval_every=0", "train.eval_batches=1", "data=text",
                      f"data.path={text_file}"]}))
    run = root / "run"
    result = CliRunner().invoke(app, ["sweep", str(spec), "--out", str(run)])
    assert result.exit_code == 0, result.output
    (root / "not_yaml.yaml").write_text("name: [unclosed\n")
    (root / "no_name.yaml").write_text("setups: {a: [optimizer=adamw]}\nwidths: [32]\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "small.txt").write_bytes(b"x" * 40)
    (root / "ids.bin").write_bytes(bytes(range(0, 200)) * 50)
    empty_dir = root / "empty_dir"
    empty_dir.mkdir()
    unfinished = root / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.yaml").write_text((run / "config.yaml").read_text())
    header = (run / "trials.csv").read_text().splitlines()[0]
    row = (run / "trials.csv").read_text().splitlines()[1].replace(",ok,", ",failed,")
    (unfinished / "trials.csv").write_text(f"{header}\n{row}\n")
    (root / "a_file").write_text("x")
    return {"root": root, "spec": spec, "run": run, "empty_dir": empty_dir, "unfinished": unfinished}


SWEEP = ("sweep", "{spec}", "--out", "{run}")
CASES: list[tuple[list[str], str]] = [
    ([*SWEEP, "--bogus"], "No such option"),
    (["frobnicate"], "No such command"),
    ([*SWEEP, "model.widht=3"], "model.widht"),
    ([*SWEEP, "+typo=1"], "typo"),
    ([*SWEEP, "train.steps=abc"], "train.steps"),
    ([*SWEEP, "train.steps=0"], "train.steps=0"),
    ([*SWEEP, "train.steps=-5"], "train.steps=-5"),
    ([*SWEEP, "train.batch_size=0"], "train.batch_size=0"),
    ([*SWEEP, "train.seq_len=0"], "train.seq_len=0"),
    ([*SWEEP, "widths=[0]"], "widths=0"),
    ([*SWEEP, "widths=[-64]"], "widths=-64"),
    ([*SWEEP, "widths=[48]"], "model.width=48"),
    ([*SWEEP, "setups.mup_muon.search.log2_min=0"], "min 0"),
    ([*SWEEP, "search.step=0"], "step=0"),
    ([*SWEEP, "setups.mup_muon.overrides=[optimizer=nope]"], "optimizer 'nope'"),
    ([*SWEEP, "parametrization=nope"], "parametrization 'nope'"),
    ([*SWEEP, "search.sampler=magic"], "sampler 'magic'"),
    ([*SWEEP, "search.noise_seeds=-1"], "noise_seeds=-1"),
    ([*SWEEP, "search.noise_seeds=1.5"], "noise_seeds=1.5"),
    ([*SWEEP, "search.extend_max=0.3"], "extend_max=0.3"),
    ([*SWEEP, "search.extend=maybe"], "extend='maybe'"),
    ([*SWEEP, "data=web"], "data 'web'"),
    (["sweep", "no_such_spec", "--out", "{run}"], "no sweep spec named 'no_such_spec'"),
    (["sweep", "{root}/not_yaml.yaml", "--out", "{run}"], "not valid YAML"),
    (["sweep", "{root}/no_name.yaml", "--out", "{run}"], "missing 'name'"),
    ([*SWEEP, "data.path={root}/missing.txt"], "does not exist"),
    ([*SWEEP, "data.path={root}/empty.txt"], "is empty"),
    ([*SWEEP, "data.path={root}/small.txt"], "too short"),
    ([*SWEEP, "data=tokens", "data.path={root}/ids.bin", "data.vocab_size=100"], ">= data.vocab_size=100"),
    ([*SWEEP, "--workers", "0"], "--workers 0"),
    ([*SWEEP, "--workers", "many"], "--workers many"),
    ([*SWEEP, "--storage", "postgresql://u:p@127.0.0.1:1/db"], "cannot open --storage"),
    (["sweep", "{spec}", "--out", "{root}/a_file"], "is an existing file"),
    ([*SWEEP, "train.steps=5"], "holds a different sweep"),
    (["transfer", "--width", "64", "--from", "{empty_dir}"], "not a sweep run directory"),
    (["transfer", "--width", "64", "--from", "{unfinished}"], "no finished trials"),
    (["transfer", "--width", "0", "--from", "{run}"], "--width 0"),
    (["transfer", "--width", "-32", "--from", "{run}"], "--width -32"),
    (["transfer", "--width", "100", "--from", "{run}"], "not divisible"),
    (["transfer", "--width", "64", "--from", "{run}", "--tolerance", "-1"], "--tolerance -1"),
    (["transfer", "--width", "64", "--from", "{run}", "--tolerance", "abc"], "--tolerance abc"),
    (["plot", "{empty_dir}"], "has no trials.csv"),
    (["verify", "--width", "64", "--from", "{run}", "--factors", "x"], "comma-separated numbers"),
    (["verify", "--width", "0", "--from", "{run}"], "--width 0"),
    (["verify", "--width", "256,abc", "--from", "{run}"], "'abc' is not a width"),
    (["verify", "--width", "64", "--from", "{run}", "--span", "-1"], "--span -1"),
    (["verify", "--width", "64", "--from", "{run}", "--step", "0"], "--step 0"),
    (["verify", "--width", "64", "--from", "{run}", "--span", "0.25"], "less than --step"),
    (["compare", "{empty_dir}", "{run}"], "has no trials.csv"),
    (["compare", "{run}"], "needs two sweep run directories"),
    (["compare", "{run}", "{run}", "--out", "{root}/a_file"], "is an existing file"),
    (["export", "--storage", "{run}/optuna.journal", "--study", "nope", "--out", "{root}/exp"],
     "no studies named 'nope.*'"),
]
"""Each case: the command's words (``{spec}``, ``{run}``, ``{root}``, ``{empty_dir}`` and ``{unfinished}`` stand for
the ``world`` fixture's paths) and what its one line must say."""


def words(args: list[str], w: dict[str, Path]) -> list[str]:
    return [arg.format_map({name: str(path) for name, path in w.items()}) for arg in args]


def snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[needle for _, needle in CASES])
def test_bad_input_in_process(world: dict[str, Path], args: list[str], needle: str) -> None:
    args = words(args, world)
    before = snapshot(world["run"])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    assert needle in result.output, (args, result.output)
    assert "Traceback" not in result.output
    if not needle.startswith("No such"):
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert snapshot(world["run"]) == before


@pytest.mark.parametrize(("args", "needle"), [CASES[3], CASES[11], CASES[27]],
                         ids=[CASES[i][1] for i in (3, 11, 27)])
def test_bad_input_as_a_real_subprocess(world: dict[str, Path], args: list[str], needle: str) -> None:
    args = words(args, world)
    before = snapshot(world["run"])
    proc = subprocess.run([sys.executable, "-m", "mutransfer", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert snapshot(world["run"]) == before
