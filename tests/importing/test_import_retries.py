"""``mutransfer import`` on a W&B-style export (Name, State, Runtime, config and summary columns): a crashed run
beside its finished retry is a failed attempt, counted and flagged ``retried:N`` on its point, never a duplicate;
a ``killed`` or ``failed`` run is failed; only rows with a loss repeat one another (refused with every row, or the
first ten and how many more; ``--duplicates mean`` merges only those); an axis left out because it moves with
another names the one kept, the rule, and how to keep it instead."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Optional

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from mutransfer.cli import app
from mutransfer.importing.points import LeftOut, left_out_axes

WIDTHS = (64, 128, 256)
LOG2_LRS = tuple(range(-12, -5))
"""Three model sizes × seven LRs an octave apart around an optimum at 2^-9."""
CRASHED = {(64, -10): "", (64, -8): "", (128, -11): "", (128, -9): "", (256, -10): "", (256, -8): "4.071"}
"""Runs that crashed (at once, with no loss, or late, the summary holding the last loss logged) and were retried
to a finish at the same size and LR."""
FAILED = {(128, -6): "failed", (256, -6): "killed"}
"""Runs at the highest LR that ended without a loss and were not retried."""
COLUMNS = ["Name", "State", "Notes", "User", "Tags", "Created", "Runtime", "Sweep", "lr", "width", "n_params",
           "tokens", "_step", "train/loss", "val/loss"]
MAPPING = ["--lr", "lr", "--loss", "val/loss", "--status", "State"]
REFUSAL = "repeat a point and learning rate with no seed to tell them apart"


def loss(k: int, width: int, shift: float = 0.0) -> str:
    """A finished run's validation loss at log2 LR ``k`` (bowl at -9; bigger models lower), as W&B writes it."""
    return f"{3.2 - 0.1 * math.log2(width / 64) + 0.08 * (k + 9) ** 2 + shift:.4f}"


def run(rows: list[dict[str, object]], state: str, width: int, k: int, val: str, runtime: int) -> None:
    """One W&B run as its export row: the run's name, state and runtime, its config and its summary."""
    params = 12 * 4 * width**2
    rows.append({"Name": f"mup-w{width}-lr{k}-{len(rows)}", "State": state, "Notes": "-", "User": "ana",
                 "Tags": "mup,sweep", "Created": f"2024-05-{1 + len(rows) % 28:02d}T09:00:00.000Z",
                 "Runtime": runtime, "Sweep": "x7f3k2", "lr": f"{2.0**k:.6g}", "width": width, "n_params": params,
                 "tokens": 20 * params, "_step": 2000 if val else 37, "train/loss": val, "val/loss": val})


def export(path: Path, repeated_width: Optional[int] = None) -> Path:
    """The sweep as W&B's CSV export writes it (every field quoted): each crashed run (``CRASHED``) just before
    its finished retry, a ``failed`` and a ``killed`` run, a run still ``running`` with a partial loss beside a
    finished one; ``repeated_width``: that size's finished runs exported a second time (a sweep run twice, no seed
    column)."""
    rows: list[dict[str, object]] = []
    for width in WIDTHS:
        for k in LOG2_LRS:
            if (width, k) in CRASHED:
                run(rows, "crashed", width, k, CRASHED[(width, k)], 95)
            if (width, k) in FAILED:
                run(rows, FAILED[(width, k)], width, k, "", 400)
                continue
            run(rows, "finished", width, k, loss(k, width), 3600)
    run(rows, "running", 64, -9, "3.61", 1200)
    if repeated_width is not None:
        for k in LOG2_LRS:
            run(rows, "finished", repeated_width, k, loss(k, repeated_width, 0.02), 3600)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    return path


def rows_in_state(path: Path, *states: str) -> list[int]:
    """The export's row numbers (1: its first run) of the runs in ``states``, as the import numbers rows."""
    table = pd.read_csv(path)
    return [int(i) + 1 for i in table.index[table["State"].isin(states)]]


def invoke(*words: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["import", *(str(w) for w in words)])
    return result.exit_code, result.output


def points_of(run_dir: Path, axis: str) -> dict[str, dict[str, object]]:
    summary = json.loads((run_dir / "summary.json").read_text())
    return summary["keys"]["optimizer.lr"]["setups"]["imported"]["axes"][axis]["points"]


def test_a_crashed_run_beside_its_finished_retry_is_a_failed_attempt_flagged_on_its_point(tmp_path: Path) -> None:
    path = export(tmp_path / "wandb_export.csv")
    out = tmp_path / "imported"
    code, output = invoke(path, *MAPPING, "--axis", "params=n_params", "--axis", "tokens", "--out", out)
    assert code == 0, output
    assert "1 unfinished left out" in output
    assert ("runs: 19 ok, 0 diverged, 8 failed (6 beside a run with a loss at their point and learning rate: "
            "flagged retried:N); 0 duplicates merged") in output
    trials = pd.read_csv(out / "trials.csv")
    failed = trials[trials["status"] == "failed"]
    assert sorted(failed["row"]) == rows_in_state(path, "crashed", "failed", "killed")
    assert failed["val_loss"].isna().all() and len(trials) == 27
    points = points_of(out, "tokens")
    by_width = {w: points[str(20 * 12 * 4 * w**2)] for w in WIDTHS}
    assert [p["flags"] for p in by_width.values()] == [["retried:2"], ["retried:2"], ["retried:2"]]
    assert [p["failed"] for p in by_width.values()] == [0, 1, 1]  # the failed and the killed run, not retried
    assert all(p["x_star"] == pytest.approx(-9, abs=0.3) for p in by_width.values())
    assert "retried:2, 1 failed" in output
    record = yaml.safe_load((out / "config.yaml").read_text())
    assert record["rows"]["failed"] == 8 and record["rows"]["retried"] == 6
    assert record["retried_points"][0] == {"setup": "imported", "params": 12 * 4 * 64**2, "tokens": 20 * 12 * 4 * 64**2,
                                           "failed": 2}
    assert ("axis params left out of the analysis: moves with tokens; kept tokens (of axes that move together, the "
            "one listed last is kept); to keep params instead, list --axis params=n_params last") in output
    assert record["axes"] == ["tokens"] and record["dropped_axes"] == {"params": "moves with tokens"}


def test_duplicates_are_rows_with_a_loss_listed_ten_then_how_many_more(tmp_path: Path) -> None:
    path = export(tmp_path / "wandb_export.csv", repeated_width=64)
    code, output = invoke(path, *MAPPING, "--axis", "width", "--out", tmp_path / "refused")
    assert code == 2 and len(output.strip().splitlines()) == 1, output
    repeated = [r for r in rows_in_state(path, "finished") if pd.read_csv(path).loc[r - 1, "width"] == 64]
    assert len(repeated) == 14
    listed = ", ".join(str(r) for r in repeated[:10])
    assert output.startswith(f"error: rows {listed} and 4 more {REFUSAL}")
    assert not (tmp_path / "refused").exists()
    crashed = rows_in_state(path, "crashed")
    assert all(f" {r}," not in output.split(" and 4 more")[0] for r in crashed)


def test_without_status_a_crashed_run_s_last_loss_repeats_its_retry_and_the_fix_names_the_state_column(
        tmp_path: Path) -> None:
    path = export(tmp_path / "wandb_export.csv")
    code, output = invoke(path, "--lr", "lr", "--loss", "val/loss", "--axis", "width", "--out", tmp_path / "out")
    late_crash = rows_in_state(path, "crashed")[-1]  # its summary holds the last loss it logged
    running = rows_in_state(path, "running")[0]  # its partial loss, beside the finished run at 64 and 2^-9
    table = pd.read_csv(path)
    finished = int(table.index[(table["width"] == 64) & ((table["lr"] / 2.0**-9 - 1).abs() < 1e-5)][0]) + 1
    assert code == 2 and len(output.strip().splitlines()) == 1, output
    assert output.startswith(f"error: rows {finished}, {late_crash}, {late_crash + 1}, {running} {REFUSAL}")
    assert ("; pass --status State (a crashed run beside its retry is a failed attempt, not a duplicate), map a seed "
            "column (--seed)") in output


def test_duplicates_mean_merges_only_rows_with_a_loss_and_the_listed_last_axis_is_kept(tmp_path: Path) -> None:
    path = export(tmp_path / "wandb_export.csv", repeated_width=64)
    out = tmp_path / "merged"
    code, output = invoke(path, *MAPPING, "--axis", "tokens", "--axis", "params=n_params", "--duplicates", "mean",
                          "--out", out)
    assert code == 0, output
    assert "runs: 19 ok, 0 diverged, 8 failed (6 beside" in output and "7 duplicates merged" in output
    trials = pd.read_csv(out / "trials.csv")
    assert (trials["status"] == "failed").sum() == 8 and len(trials) == 27
    small = trials[(trials["params"] == 12 * 4 * 64**2) & (trials["status"] == "ok")]
    assert small["val_loss"].tolist() == pytest.approx([float(loss(k, 64)) + 0.01 for k in LOG2_LRS])
    assert ("axis tokens left out of the analysis: moves with params; kept params (of axes that move together, the "
            "one listed last is kept); to keep tokens instead, list --axis tokens last") in output
    assert points_of(out, "params")[str(12 * 4 * 64**2)]["flags"] == ["retried:2"]


def test_an_axis_fixed_by_another_but_not_fixing_it_is_left_out_whatever_the_order() -> None:
    """Heads chosen per width (one head up to width 128): the width fixes the heads, not the other way round, so
    listing heads last does not keep it; leaving out --axis width does."""
    widths = [64, 128, 256, 512, 1024, 2048]
    points = pd.DataFrame({"setup": "imported", "width": widths, "heads": [max(1, w // 128) for w in widths]})
    options = {"width": "--axis width", "heads": "--axis heads=n_heads"}
    for order in (["heads", "width"], ["width", "heads"]):
        assert left_out_axes(points, order, options) == {"heads": LeftOut(("width",), False, "leave out --axis width")}
    line = LeftOut(("width",), False, "leave out --axis width").line("heads")
    assert line == ("moves with width; kept width (heads is fixed by width, not the other way round, so the order of "
                    "the --axis options does not decide); to keep heads instead, leave out --axis width")
