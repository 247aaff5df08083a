"""The usual mistakes of a first spec and a first override, caught in one line (exit 2) that says what was probably
meant: a grid too small to place an optimum (LR values written where log2 exponents belong), a misspelt key or
group option (the closest valid one named, and the setup it came from), and a YAML document whose aliases expand
a few hundred bytes into billions of entries."""

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

