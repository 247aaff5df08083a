"""Bad input, tried as a new user would: exit code 2, one line naming the problem and the fix, no
traceback, and nothing written or changed (the world's folder, its finished sweep included, stays as it was, and
the command runs from an empty folder). The one home of the command line's one-line refusals: a refusal that
needs no run of its own is a row of ``CASES``; files that keep theirs test more than the wording (nothing started,
a fixture's own spec or run, the Python API).

The usual mistakes of a first spec and a first override, in the same home: a grid too small to place an optimum
(LR values written where log2 exponents belong), a misspelt key or group option (the closest valid one named, and
the setup it came from), and a YAML document whose aliases expand a few hundred bytes into billions of entries."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.cli import app
from mutransfer.config import compose, config_from_dict, load_config_file, to_dict
from mutransfer.errors import UserError
from mutransfer.sweep.spec.sweep_spec import MIN_GRID_POINTS, load_spec, spec_dir
from mutransfer.table.plan import Plan
from mutransfer.transfer.verify import Verification, VerifyRequest
from mutransfer.yamldoc import MAX_ALIAS_NODES


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
    (root / "tiny.txt").write_bytes(b"tiny")
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
    _import_tables(root)
    return {"root": root, "spec": spec, "run": run, "empty_dir": empty_dir, "unfinished": unfinished,
            "baseline": BASELINE}


def _import_tables(root: Path) -> None:
    """Tables of finished runs for ``mutransfer import``'s refusals: a good one and one broken copy per fault."""
    good = [(w, 2.0**k, 3.0 + 0.1 * (k + 8) ** 2) for w in (64, 128) for k in range(-10, -5)]
    rows = ["width,lr,loss"] + [f"{w},{lr},{loss}" for w, lr, loss in good]
    (root / "runs.csv").write_text("\n".join(rows) + "\n")
    (root / "runs_text_lr.csv").write_text("\n".join(rows[:3] + ["64,abc,3.5"] + rows[3:]) + "\n")
    (root / "runs_bad_axis.csv").write_text("\n".join(rows[:2] + ["-64,0.001,3.5"] + rows[2:]) + "\n")
    (root / "runs_dups.csv").write_text("\n".join(rows + [rows[1], rows[2]]) + "\n")
    (root / "runs_thin.csv").write_text("\n".join(["width,lr,loss"] + [f"{w},{lr},3.0" for w in (64, 128, 256)
                                                                        for lr in (0.001, 0.002)]) + "\n")
    (root / "runs_header.csv").write_text("width,lr,loss\n")


IMPORT = ["import", "{root}/runs.csv", "--lr", "lr", "--loss", "loss", "--axis", "width", "--out", "{root}/imported"]

"""An import that would succeed: each case below breaks one part of it."""

BASELINE = Path(__file__).parents[1] / "baselines" / "smoke"

"""The committed smoke sweep: what ``transfer`` reads for a bad target (its horizon, batch, budget or depth)."""

TAU = "optimizer.weight_decay_timescale"

CONFIG_OVERRIDES: list[tuple[list[str], str]] = [
    (["model.widht=3"], "model.widht"),
    (["+model.widht=3"], "model.widht"),
    (["+foo=1"], "foo"),
    (["model.width=abc"], "model.width"),
    (["model.bias=maybe"], "model.bias"),
    (["parametrization=nope"], "parametrization 'nope'"),
    (["optimizer=adam"], "optimizer 'adam'"),
    (["data=web"], "data 'web'"),
    (["model.width=100"], "model.width=100"),
    (["model.width=0"], "model.width=0"),
    (["model.width=-32"], "model.width=-32"),
    (["train.steps=0"], "train.steps=0"),
    (["train.batch_size=0"], "train.batch_size=0"),
    (["train.seq_len=-1"], "train.seq_len=-1"),
    (["optimizer.lr=0"], "optimizer.lr=0"),
    (["optimizer.lr=-0.1"], "optimizer.lr=-0.1"),
    (["optimizer.lr=nan"], "optimizer.lr=nan"),
    (["optimizer.lr=inf"], "optimizer.lr=inf"),
    (["optimizer.momentum=1.5"], "optimizer.momentum=1.5"),
    (["train.device=tpu"], "train.device 'tpu'"),
    (["parametrization=ntk", "optimizer=muon"], "preset 'ntk' has no learning-rate rule"),
    (["model.tie_embeddings=true"], "tie_embeddings"),
    (["optimizer.init.hidden=big"], "optimizer.init.hidden"),
    (["data=text"], "data.path"),
    (["width=64"], "width"),
    (["model.width"], "model.width"),
    (["parametrization.depth_alpha=2"], "parametrization.depth_alpha"),
    (["parametrization.depth_alpha=0.3"], "parametrization.depth_alpha"),
    (["parametrization.depth_alpha=-1"], "parametrization.depth_alpha"),
    (["parametrization.depth_alpha=1.5"], "parametrization.depth_alpha"),
    (["data.path=corpus.txt"], "error: data.path=corpus.txt is set but data=stdlib ignores it; add data=text (a file "
                               "read as bytes) or data=tokens data.vocab_size=V (a uint16 .bin token file)"),
]

"""Config overrides ``show`` and ``train`` both refuse (each a row of ``CASES`` for each command)."""

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
    # show and train: config overrides, data files, options
    *[(["show", *overrides], needle) for overrides, needle in CONFIG_OVERRIDES],
    *[(["train", *overrides, "--out", "{root}/train_run"], needle) for overrides, needle in CONFIG_OVERRIDES],
    (["train", "--bogus"], "No such option"),
    (["train", "model.width=33", "--out", "{root}/r"], "model.width=33"),
    (["train", "data=text", "data.path={root}/missing.txt", "--out", "{root}/train_run"], "{root}/missing.txt"),
    (["train", "data=text", "data.path={root}/empty.txt", "--out", "{root}/train_run"], "{root}/empty.txt"),
    (["train", "data=text", "data.path={root}/tiny.txt", "--out", "{root}/train_run"], "{root}/tiny.txt"),
    (["train", "optimizer.lr=-5"],
     "optimizer.lr is the learning rate itself, not its log2: for 2^-5 write optimizer.lr=0.03125"),
    (["train", "train.compile=maybe", "--out", "{root}/train_run"],
     "error: unknown train.compile 'maybe'; choose one of: auto, on, off"),
    *[(["train", *overrides, "train.steps=1", "--out", "{root}/train_run"], needle) for overrides, needle in [
        (["optimizer.weight_decay=-0.1"], "optimizer.weight_decay=-0.1"),
        (["optimizer.weight_decay_timescale=0"], "optimizer.weight_decay_timescale=0"),
        (["optimizer.weight_decay_timescale=-2"], "optimizer.weight_decay_timescale=-2"),
        (["optimizer.weight_decay_rule=decoupled"], "unknown optimizer.weight_decay_rule 'decoupled'"),
        (["optimizer=sgd", "optimizer.weight_decay_rule=lr_scaled"], "cannot be applied by optimizer 'sgd'"),
        (["optimizer=adamw", "optimizer.weight_decay_rule=l2"], "cannot be applied by optimizer 'adamw'"),
        (["optimizer.weight_decay=0.1", "optimizer.weight_decay_timescale=0.2"], "both give the decay"),
        (["optimizer=sgd", "optimizer.weight_decay_timescale=0.2"], "needs a decoupled rule")]],
    # sweep: searches the shipped smoke spec refuses, and batching a search other than the learning rate's
    *[(["sweep", "smoke", f"search={search}", "--dry-run", "--out", "{root}/sweep_run"], needle)
      for search, needle in [
          ("[{key: optimizer.lr, at: optimum}]", "the learning rate itself cannot wait"),
          (f"[{{key: optimizer.lr}}, {{key: {TAU}, log2_min: -3, log2_max: 1, at: optimum, sampler: tpe}}]",
           "sampler tpe cannot run two stages"),
          (f"[{{key: {TAU}, log2_min: -3, log2_max: 1, at: optimum}}]", "needs the learning rate searched too"),
          (f"[{{key: optimizer.lr}}, {{key: {TAU}, log2_min: -3, log2_max: 1, at: best}}]",
           "unknown search[1].at 'best'"),
          ("[{key: optimizer.lr}, {key: train.weight_decay, log2_min: -3, log2_max: 1}]",
           "unknown config key 'train.weight_decay'"),
          ("[{key: optimizer.lr}, {key: optimizer.weight_decay_timescal, log2_min: -3, log2_max: 1}]",
           "did you mean 'optimizer.weight_decay_timescale'")]],
    (["sweep", "smoke", "setups.sp_adamw.search=[{key: optimizer.weight_decay, log2_min: -3}]", "--dry-run"],
     "narrows 'optimizer.weight_decay', which the spec's search"),
    (["sweep", "smoke", "setups.sp_adamw.search=[{log2_min: -3}]", "--dry-run"],
     "give mappings that name the key they narrow"),
    (["sweep", "default", "stop=maybe", "--dry-run"], "stop='maybe' is not true or false"),
    *[(["sweep", "default", f"constants={constants}", "--dry-run"], needle) for constants, needle in [
        ("{keys: [optimizer.lr_mult.reaodut]}", "did you mean 'optimizer.lr_mult.readout'"),
        ("{keys: [optimizer.multiplier.readout, optimizer.init.readout, optimizer.lr_mult.readout]}",
         "cannot be told apart"),
        ("{keys: [optimizer.eps]}", "(setup mup_muon): optimizer.eps is AdamW's ε"),
        ("{keys: [optimizer.lr_mult.readout], rounds: 0}", "constants.rounds=0 must be at least 1"),
        ("{keys: [optimizer.lr_mult.embedding, optimizer.lr_mult.hidden, optimizer.lr_mult.readout, "
         "optimizer.lr_mult.gain, optimizer.lr_mult.bias]}", "at most 4 can be tuned at once"),
        ("{keys: [optimizer.lr_mult.readout], round: 2}", "did you mean 'rounds'"),
        ("{keys: [optimizer.lr_mult.readout], at: 48}", "constants.at=48 is not one of the widths")]],
    (["sweep", "default", "search={key: optimizer.weight_decay, log2_min: -8, log2_max: -2}",
      "constants={keys: [optimizer.lr_mult.readout]}", "--dry-run"], "tuned with the learning rate"),
    (["sweep", "smoke", "stop=true", "--dry-run"], "stop=true needs a sweep of widths alone with more than 3 widths"),
    (["sweep", "smoke", "--level", "80", "--dry-run"], "--level 80 is not a level the tables print; use --level 95 or "
                                                       "--level 90"),
    (["sweep", "default", "stop=true", "depths=[2,4]", "--dry-run"], "(it also sweeps depths)"),
    (["sweep", "{spec}", "--out", "{root}/x", "batch_trials=4", "search.key=train.warmup_frac", "search.min=0",
      "search.max=0.2", "search.scale=linear"],
     "batch_trials=4 stacks learning-rate trials of the built-in GPT, not search.key=train.warmup_frac"),
    # transfer, verify and compare on a finished sweep
    (["transfer", "--width", "64"], "no sweep found"),
    (["transfer", "--from", "{run}", "--width", "48"], "not divisible"),
    (["transfer", "--from", "{run}", "--width", "64", "--setup", "nope"], "unknown setup 'nope'"),
    (["transfer", "--from", "{run}", "--width", "64", "--format", "toml"], "--format toml"),
    *[(["transfer", "--width", "256", "--steps", value, "--from", "{baseline}", "--out", "{root}/t.yaml"], "--steps")
      for value in ("0", "1.5", "-3", "long")],
    *[(["transfer", "--width", "256", "--depth", value, "--from", "{baseline}", "--out", "{root}/t.yaml"], "--depth")
      for value in ("3.5", "0", "-2", "many")],
    *[(["transfer", "--width", "256", *target, "--from", "{baseline}", "--out", "{root}/t.yaml"], needle)
      for target, needle in [
          (["--batch-size", "0"], "--batch-size 0 must be a positive"),
          (["--batch-size", "3", "--tokens", "1000"], "--tokens 1000 is not a whole number of batches"),
          (["--batch-size", "64", "--tokens", "64"], "--tokens 64 is smaller than one batch"),
          (["--tokens", "4096", "--steps", "10"], "--tokens and --steps both set the horizon")]],
    (["verify", "--width", "64", "--from", "{run}", "--factors", "1"], "two or more"),
    (["compare", "{run}", "{run}", "--tolerance", "wide"], "--tolerance wide"),
    # coord-check
    *[(["coord-check", *args, "--out", "{root}/cc"], needle) for args, needle in [
        (["--widths", "32"], "at least two widths"),
        (["--widths", "32,48"], "width 48"),
        (["--widths", "a,b"], "comma-separated integers"),
        (["--steps", "0"], "--steps 0"),
        (["--lr", "-1"], "--lr -1"),
        (["model.widht=3"], "model.widht")]],
    # import: every refusal leaves nothing on disk (not even the --out folder)
    ([*IMPORT[:3], "LR", *IMPORT[4:]], "did you mean 'lr'"),
    ([*IMPORT[:5], "val/loss", *IMPORT[6:]], "column 'val/loss' is not in the table; did you mean 'loss'?"),
    ([*IMPORT[:7], "wdith", *IMPORT[8:]], "column 'wdith' is not in the table"),
    ([IMPORT[0], "{root}/runs_text_lr.csv", *IMPORT[2:]], "row 3: learning-rate column 'lr' holds 'abc'"),
    ([IMPORT[0], "{root}/runs_bad_axis.csv", *IMPORT[2:]], "row 2: axis column 'width' holds '-64'"),
    ([IMPORT[0], "{root}/runs_dups.csv", *IMPORT[2:]], "rows 1, 2, 11, 12 repeat a point and learning rate"),
    ([IMPORT[0], "{root}/runs_thin.csv", *IMPORT[2:]], "no point has 3 or more distinct learning rates"),
    ([IMPORT[0], "{root}/runs_header.csv", *IMPORT[2:]], "the table has no rows"),
    ([IMPORT[0], "{root}/empty.txt", *IMPORT[2:]], "is empty"),
    ([IMPORT[0], "{root}/ids.bin", *IMPORT[2:]], "is a binary file"),
    ([IMPORT[0], "{root}/missing.csv", *IMPORT[2:]], "missing.csv does not exist"),
    ([*IMPORT, "--where", "width > 1000"], "no row passes --where width > 1000"),
    ([*IMPORT, "--where", "width"], "is not 'COLUMN OP VALUE'"),
    ([*IMPORT, "--where", "depth < 3"], "column 'depth' is not in the table"),
    ([*IMPORT[:-1], "{run}"], "holds a sweep, not an import"),
    ([*IMPORT, "--duplicates", "sum"], "--duplicates sum"),
    ([*IMPORT, "--axis", "seed=width"], "trials.csv's own columns"),
    ([*IMPORT, "--axis", "width"], "--axis width is given twice"),
    ([*IMPORT[:6], *IMPORT[8:]], "no --axis given"),
    ([*IMPORT, "--step", "-1"], "--step '-1'"),
    ([*IMPORT, "--lr-range", "1,0.1"], "needs 0 < LO < HI"),
    ([*IMPORT, "--diverged-above", "x"], "--diverged-above x"),
    ([*IMPORT, "--storage", "{root}/runs.csv"], "both --storage and --study"),
    ([*IMPORT, "--status", "loss"], "is not a known status"),
    (["transfer", "--from", "{run}"], "transfer needs the target width"),
    (["transfer", "--from", "{run}", "--at", "params=7e9"], "a sweep's axes are"),
    (["transfer", "--from", "{run}", "--at", "width"], "--at width is not AXIS=VALUE"),
    (["transfer", "--from", "{run}", "--at", "width=64", "--width", "128"], "given twice"),
    *[(["coord-check", *args], "--depths") for args in (["--depths", "4"], ["--depths", "0,2"], ["--depths", "2,x"],
                                                        ["--depths", "2,4", "--widths", "32,64"])],
]

"""Each case: the command's words (``{spec}``, ``{run}``, ``{root}``, ``{empty_dir}``, ``{unfinished}`` and
``{baseline}`` stand for the ``world`` fixture's paths) and what its one line must say, the same placeholders
allowed; a needle that starts with ``error:`` is the whole line."""

AS_A_SUBPROCESS = ("typo", "model.width=48", "too short", "model.width=33")

"""The needles of the cases also run as a real ``python -m mutransfer`` process."""


def words(args: list[str], w: dict[str, Path]) -> list[str]:
    """``args`` with the world's placeholders filled in (other braces, as in a YAML flow mapping, kept)."""
    filled = []
    for arg in args:
        for name, path in w.items():
            arg = arg.replace(f"{{{name}}}", str(path))
        filled.append(arg)
    return filled


def snapshot(path: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None) under ``path``: a refusal creates nothing, not even a folder."""
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob("*"))}


def says(line: str, needle: str) -> bool:
    return line == needle if needle.startswith("error: ") else needle in line


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[needle for _, needle in CASES])
def test_bad_input_in_process(world: dict[str, Path], args: list[str], needle: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    args, (needle,) = words(args, world), words([needle], world)
    monkeypatch.chdir(world["empty_dir"])
    before = snapshot(world["root"])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    assert needle in result.output, (args, result.output)
    assert "Traceback" not in result.output
    if not needle.startswith("No such"):
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and says(lines[0], needle), result.output
    assert snapshot(world["root"]) == before


SUBPROCESS_CASES = [case for case in CASES if case[1] in AS_A_SUBPROCESS]


def test_the_subprocess_cases_are_the_named_ones() -> None:
    assert sorted(needle for _, needle in SUBPROCESS_CASES) == sorted(AS_A_SUBPROCESS)


@pytest.mark.parametrize(("args", "needle"), SUBPROCESS_CASES, ids=[needle for _, needle in SUBPROCESS_CASES])
def test_bad_input_as_a_real_subprocess(world: dict[str, Path], args: list[str], needle: str) -> None:
    args, (needle,) = words(args, world), words([needle], world)
    before = snapshot(world["root"])
    proc = subprocess.run([sys.executable, "-m", "mutransfer", *args], capture_output=True, text=True, timeout=60,
                          cwd=world["empty_dir"])
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert snapshot(world["root"]) == before


SETUPS = {"sp_adamw": ["parametrization=sp", "optimizer=adamw"], "mup_muon": ["parametrization=mup", "optimizer=muon"]}


def write_spec(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "setups": SETUPS, "widths": [32, 64], **fields}))
    return path


def refusal(action: Any) -> str:
    with pytest.raises(UserError) as caught:
        action()
    line = caught.value.one_line()
    assert "\n" not in line
    return line


def cli(args: list[str]) -> str:
    """Run the CLI in-process: the one-line refusal (exit 2)."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output, result.output
    return lines[0]


LOAD_SPEC = """import sys
from mutransfer.errors import UserError
from mutransfer.sweep.spec.sweep_spec import load_spec
try:
    load_spec(sys.argv[1])
except UserError as exc:
    sys.exit(exc.one_line())
"""

"""``load_spec`` in a child process with a time and memory limit: a reader without the bound expands the aliases
and would hang the test run (and fill the machine's memory) rather than fail."""


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def bomb(levels: int, fan: int) -> str:
    """A YAML value whose aliases stand for ``fan ** levels`` scalars ("billion laughs")."""
    rows = [f"&l0 [{', '.join(['lol'] * fan)}]"]
    rows += [f"&l{i} [{', '.join([f'*l{i - 1}'] * fan)}]" for i in range(1, levels)]
    return f"[{', '.join(rows)}]"


def test_lr_values_written_as_log2_bounds_are_refused_with_the_exponents(tmp_path: Path) -> None:
    """The reported mistake: one grid point per width and a sweep that "finished"."""
    path = write_spec(tmp_path, search={"log2_min": 0.001, "log2_max": 0.5})
    line = refusal(lambda: load_spec(str(path)))
    assert line == ("search: log2_min=0.001, log2_max=0.5 are log2 of the LR (LRs 1 … 1.41); log2 bounds are "
                    "exponents: for LR 0.001 … 0.5 write log2_min: -9.97, log2_max: -1")
    out = tmp_path / "run"
    assert cli(["sweep", str(path), "--out", str(out)]) == f"error: {line}"
    assert not out.exists()


def test_a_grid_below_three_points_is_refused_where_it_is_set(tmp_path: Path) -> None:
    """A setup's own range, a list-form search's second key, a CLI override: each names where it was set."""
    path = write_spec(tmp_path, setups={"mup_muon": {"overrides": ["optimizer=muon"],
                                                     "search": {"log2_min": -5, "log2_max": -4}}})
    line = refusal(lambda: load_spec(str(path)))
    assert line.startswith("setups.mup_muon.search: log2_min=-5, log2_max=-4 with step 1 gives 2 grid points "
                           "(LR 0.0312 … 0.0625); a grid needs at least 3 points")
    assert "e.g. step: 0.5" in line
    assert len(load_spec(str(path), ["search.step=0.5"]).setups[0].search[0].grid()) == MIN_GRID_POINTS
    listed = write_spec(tmp_path, search=[{"log2_min": -8, "log2_max": -2},
                                          {"key": "optimizer.weight_decay", "scale": "linear", "min": 0.0, "max": 0.1,
                                           "step": 0.1}])
    assert refusal(lambda: load_spec(str(listed))).startswith(
        "search[1]: min=0, max=0.1 with step 0.1 gives 2 grid points (optimizer.weight_decay 0 … 0.1)")
    assert refusal(lambda: load_spec("smoke", ["search.step=4"])).startswith(
        "setups.sp_adamw.search: log2_min=-10, log2_max=-4 with step 4 gives 2 grid points")


@pytest.mark.parametrize("name", sorted(p.stem for p in spec_dir().glob("*.yaml")))
def test_every_shipped_spec_loads_and_its_grid_at_two_points_is_refused(name: str) -> None:
    spec = load_spec(name)
    assert all(len(s.grid()) >= MIN_GRID_POINTS for setup in spec.setups for s in setup.search)
    first = spec.setups[0]
    low = first.search[0].min
    narrow = [f"setups.{first.label}.search.log2_min={low:g}",
              f"setups.{first.label}.search.log2_max={low + first.search[0].step:g}"]
    assert "gives 2 grid points" in refusal(lambda: load_spec(name, narrow))


def test_verify_refuses_a_span_that_leaves_fewer_than_three_points(tmp_path: Path) -> None:
    """The same rule for verify's own grid (±span around the prediction), before any run is read."""
    line = refusal(lambda: Verification(tmp_path, VerifyRequest(widths=(64,), span=0.25, step=0.5)))
    assert line.startswith(f"--span 0.25 is less than --step 0.5: the grid ±span around the predicted η* can hold "
                           f"fewer than {MIN_GRID_POINTS} points")


@pytest.mark.parametrize("overrides, expected", [
    (["paramterization=mup"], "unknown config key 'paramterization'; did you mean 'parametrization'?"),
    (["optimizer=adamm"], "unknown optimizer 'adamm'; did you mean 'adamw'? choose one of: adamw, muon, sgd"),
    (["model.widht=64"], "unknown config key 'model.widht'; did you mean 'model.width'?"),
    (["+model.widht=64"], "unknown config key 'model.widht'; did you mean 'model.width'?"),
    (["optimizer.init.hiden=0.1"], "unknown config key 'optimizer.init.hiden'; did you mean 'optimizer.init.hidden'?"),
    (["data=txt"], "unknown data 'txt'; did you mean 'text'? choose one of: stdlib, text, tokens"),
    (["train.schedule=cosin"], "unknown train.schedule 'cosin'; did you mean 'cosine'? choose one of: linear, "
                               "cosine, constant, wsd"),
])
def test_an_unknown_key_or_option_names_the_closest_valid_one(overrides: list[str], expected: str) -> None:
    assert refusal(lambda: compose(overrides)) == expected


def test_a_typo_in_a_spec_setup_names_the_setup(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, setups={"sp_adamw": ["optimizer=adamw"],
                                        "mup_muon": {"overrides": ["paramterization=mup", "optimizer=muon"]}})
    out = tmp_path / "run"
    assert cli(["sweep", str(spec), "--out", str(out)]) == (
        "error: unknown config key 'paramterization' (setup mup_muon); did you mean 'parametrization'?")
    assert cli(["sweep", "smoke", "--out", str(out), "optimizer=adamm"]).startswith(
        "error: unknown optimizer 'adamm' (setup sp_adamw); did you mean 'adamw'? choose one of:")
    assert not out.exists()


def test_a_misspelt_spec_key_names_the_spec_key(tmp_path: Path) -> None:
    assert "did you mean 'widths'?" in refusal(lambda: load_spec(str(write_spec(tmp_path, widht=[32]))))
    assert refusal(lambda: load_spec("smoke", ["widht=[64]"])) == (
        "unknown key 'widht'; did you mean the spec key 'widths'?")
    assert refusal(lambda: load_spec("smoke", ["step=1"])) == (
        "unknown key 'step'; did you mean the spec key 'search.step'?")
    assert "did you mean 'log2_min'?" in refusal(lambda: load_spec("smoke", ["search.log2min=-5"]))
    assert "did you mean 'overrides'?" in refusal(lambda: load_spec(str(write_spec(
        tmp_path, setups={"a": {"overides": ["optimizer=adamw"]}}))))
    assert refusal(lambda: load_spec("smok")).startswith("no sweep spec named 'smok'; did you mean 'smoke'?")
    assert "did you mean 'grid'?" in refusal(lambda: load_spec("smoke", ["search.sampler=gird"]))


def test_a_typo_in_a_saved_config_names_the_closest_key(tmp_path: Path) -> None:
    data = to_dict(compose([]))
    data["model"]["widht"] = data["model"].pop("width")
    assert refusal(lambda: config_from_dict(data)) == "unknown config key 'model.widht'; did you mean 'model.width'?"


def test_a_billion_laughs_is_refused_at_once(tmp_path: Path) -> None:
    """A few hundred bytes that stand for 9**9 entries: every YAML reader refuses it before expanding it, naming the
    file (the child that loads a spec runs under a memory cap and a 10 s limit); a spec that shares a few values
    through anchors still loads."""
    laughs = bomb(9, 9)
    assert len(laughs) < 500
    spec = tmp_path / "laughs.yaml"
    spec.write_text(f"name: lol\nsetups: {{a: [optimizer=adamw]}}\nwidths: [32]\nlol: {laughs}\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"config: {{lol: {laughs}}}\n")
    child = subprocess.run([sys.executable, "-c", LOAD_SPEC, str(spec)], capture_output=True, text=True, timeout=10,
                           preexec_fn=_cap_memory)
    assert child.stderr.strip() == (f"sweep spec {spec}: the YAML aliases expand past {MAX_ALIAS_NODES:,} nodes; "
                                    "write the document out without anchors and aliases"), child.stderr[-2000:]
    assert refusal(lambda: load_config_file(config)).startswith(f"config file {config}: the YAML aliases expand")
    with pytest.raises(ValueError, match="aliases expand past"):
        Plan.load(config)
    assert cli(["train", "--config", str(config)]).startswith(f"error: config file {config}: the YAML aliases")
    anchored = tmp_path / "anchored.yaml"
    anchored.write_text("name: anchored\n"
                        "setups:\n"
                        "  sp_adamw: {overrides: &mine [optimizer=adamw],\n"
                        "             search: &range {log2_min: -8, log2_max: -2}}\n"
                        "  mup_muon: {overrides: *mine, search: *range}\n"
                        "widths: [32, 64]\n")
    loaded = load_spec(str(anchored))
    assert loaded.setups[0].search == loaded.setups[1].search and len(loaded.setups[0].search[0].grid()) == 7


def test_aliases_are_bounded_wherever_yaml_is_read(tmp_path: Path) -> None:
    """A spec override's value and a ``--config`` override's value are YAML documents too; a recursive alias and a
    nesting deeper than Python's stack are refused in one line as well. (Sizes an old reader survives.)"""
    assert "the YAML aliases expand past" in refusal(lambda: load_spec("smoke", [f"widths={bomb(6, 10)}"]))
    data = to_dict(compose([]))
    assert refusal(lambda: config_from_dict(data, [f"optimizer.ns_coeffs={bomb(6, 8)}"])).startswith(
        "override 'optimizer.ns_coeffs': the YAML aliases expand past")
    recursive = tmp_path / "recursive.yaml"
    recursive.write_text("name: &a [*a]\n")
    assert "a YAML alias refers to a node that contains it" in refusal(lambda: load_spec(str(recursive)))
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: " + "[" * 2000 + "]" * 2000 + "\n")
    assert refusal(lambda: load_spec(str(deep))) == (f"sweep spec {deep}: the YAML nests deeper than 100 levels; "
                                                     "write a flatter document")
