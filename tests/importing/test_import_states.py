"""``mutransfer import`` reads run states honestly: an empty loss (an empty CSV cell, a JSON or Parquet null) is a
run that never finished, left out; a NaN or infinity the file itself holds (the text ``nan``/``inf``, a Parquet
float NaN) or a loss above ``--diverged-above`` is a diverged run; ``--status`` overrides both; empty losses and
an unmapped state column draw one warning each."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from mutransfer.cli import app
from mutransfer.errors import UserError
from mutransfer.importing.convert import Imported, state_columns, to_trials
from mutransfer.importing.mapping import AxisColumn, ImportMapping, parse_where
from mutransfer.importing.source import read_source

WIDTHS = (64, 128, 256)
LOG2_LRS = tuple(range(-11, -5))
"""Three points × six LRs an octave apart: 18 runs, enough that a few lost to each state leave every point a bowl."""
MAPPING = ImportMapping(lr="lr", loss="loss", axes=(AxisColumn("width", "width"),), diverged_above=10.0)
EMPTY_WARNING = "an empty loss and no --status column is mapped: read as unfinished runs and left out"


def bowl(k: int) -> str:
    """A finished run's loss at log2 LR ``k``, as the text a CSV holds."""
    return f"{3 + 0.1 * (k + 8) ** 2:.3f}"


def grid(cells: dict[tuple[int, int], str]) -> list[dict[str, object]]:
    """The 18 runs, each as width, lr and loss text; ``cells`` replaces the loss of (width, log2 LR)."""
    return [{"width": w, "lr": 2.0**k, "loss": cells.get((w, k), bowl(k))} for w in WIDTHS for k in LOG2_LRS]


def write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    """``rows`` as CSV text written cell by cell, so an empty cell stays empty and ``nan`` stays the text nan."""
    header = list(rows[0])
    path.write_text("\n".join([",".join(header)] + [",".join(str(r[c]) for c in header) for r in rows]) + "\n")
    return path


def imported_from(path: Path, mapping: ImportMapping = MAPPING) -> Imported:
    """The conversion of the file at ``path`` as ``mutransfer import`` reads it."""
    table, _ = read_source(path, None, None)
    return to_trials(table, mapping)


def states(imported: Imported) -> dict[str, int]:
    return {k: imported.counts[k] for k in ("ok", "diverged", "failed", "dropped_unfinished")}


def status_of(imported: Imported, width: int, k: int) -> str:
    trials = imported.trials
    row = trials[(trials["width"] == width) & (trials["log2_lr"] == k)]
    return str(row["status"].iloc[0]) if len(row) else "left out"


MIXED = {(64, -11): "", (64, -10): "nan", (64, -6): "inf", (128, -11): "Infinity", (128, -6): "-inf",
         (256, -11): "", (256, -10): "NaN", (256, -6): "25"}
"""Two empty cells (unfinished), four NaN/infinity texts and a loss above --diverged-above 10 (diverged)."""


def test_an_empty_csv_cell_is_unfinished_and_the_text_nan_or_inf_diverged(tmp_path: Path) -> None:
    imported = imported_from(write_csv(tmp_path / "runs.csv", grid(MIXED)))
    assert states(imported) == {"ok": 10, "diverged": 6, "failed": 0, "dropped_unfinished": 2}
    assert status_of(imported, 64, -11) == "left out" and status_of(imported, 256, -11) == "left out"
    for cell in ((64, -10), (64, -6), (128, -11), (128, -6), (256, -10), (256, -6)):
        assert status_of(imported, *cell) == "diverged", cell
    higher = imported_from(tmp_path / "runs.csv", ImportMapping(lr="lr", loss="loss", axes=MAPPING.axes,
                                                                diverged_above=30.0))
    assert status_of(higher, 256, -6) == "ok" and higher.counts["diverged"] == 5 and higher.rows_read == 18


def test_a_loss_above_diverged_above_is_diverged(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "runs.csv", grid({(256, -6): "25", (128, -6): "9.5"}))
    imported = imported_from(path)
    assert status_of(imported, 256, -6) == "diverged" and status_of(imported, 128, -6) == "ok"
    assert states(imported) == {"ok": 17, "diverged": 1, "failed": 0, "dropped_unfinished": 0}
    assert imported.warnings == []


def test_empty_losses_draw_one_warning_with_their_count(tmp_path: Path) -> None:
    cells = {(w, k): "" for w in WIDTHS for k in (-11, -10)} | {(64, -9): "nan"}
    imported = imported_from(write_csv(tmp_path / "runs.csv", grid(cells)))
    assert imported.warnings == [f"6 rows have {EMPTY_WARNING} (map --status to tell crashed from running)"]
    one = imported_from(write_csv(tmp_path / "one.csv", grid({(64, -11): ""})))
    assert one.warnings == [f"1 row has {EMPTY_WARNING} (map --status to tell crashed from running)"]


def test_the_command_prints_the_empty_loss_warning_once(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "runs.csv", grid(MIXED))
    result = CliRunner().invoke(app, ["import", str(path), "--lr", "lr", "--loss", "loss", "--axis", "width",
                                      "--diverged-above", "10", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert result.output.count("warning: ") == 1
    assert f"warning: 2 rows have {EMPTY_WARNING}" in result.output
    assert "2 unfinished left out" in result.output and "10 ok, 6 diverged, 0 failed" in result.output
    assert (pd.read_csv(tmp_path / "out" / "trials.csv")["status"] == "diverged").sum() == 6


STATUS_ROWS = {(64, -11): ("crashed", ""), (64, -10): ("running", "3.2"), (64, -9): ("finished", ""),
               (128, -11): ("failed", ""), (128, -10): ("ok", "nan"), (128, -9): ("diverged", ""),
               (256, -11): ("running", ""), (256, -6): ("finished", "25")}
"""A W&B-style mix: a crashed or failed run with no loss, running runs with or without a partial loss, a finished
run with no loss (no final loss: unfinished), a finished NaN, one diverged by the column, one above 10."""


def status_table(path: Path, column: str) -> Path:
    """The 18 runs with ``STATUS_ROWS``' losses and a state column named ``column`` (``finished`` elsewhere)."""
    rows = grid({cell: loss for cell, (_, loss) in STATUS_ROWS.items()})
    for row in rows:
        row[column] = STATUS_ROWS.get((int(str(row["width"])), round(math.log2(float(str(row["lr"]))))),
                                      ("finished", ""))[0]
    return write_csv(path, rows)


def test_a_status_column_tells_crashed_from_running(tmp_path: Path) -> None:
    path = status_table(tmp_path / "runs.csv", "state")
    mapped = imported_from(path, ImportMapping(lr="lr", loss="loss", axes=MAPPING.axes, status="state",
                                               diverged_above=10.0))
    assert states(mapped) == {"ok": 10, "diverged": 3, "failed": 2, "dropped_unfinished": 3}
    assert status_of(mapped, 64, -11) == "failed" and status_of(mapped, 128, -9) == "diverged"
    assert status_of(mapped, 64, -10) == "left out" and status_of(mapped, 64, -9) == "left out"
    assert mapped.warnings == []
    unmapped = imported_from(path)
    assert states(unmapped) == {"ok": 11, "diverged": 2, "failed": 0, "dropped_unfinished": 5}
    assert status_of(unmapped, 64, -10) == "ok" and status_of(unmapped, 64, -11) == "left out"
    assert unmapped.warnings == [
        "column 'state' looks like a run state but is not mapped: pass --status state to read crashed and running "
        "runs (now every row with a loss counts as finished)",
        f"5 rows have {EMPTY_WARNING} (map --status to tell crashed from running)"]


def test_state_like_columns_are_named_unless_mapped_or_filtered() -> None:
    columns = ["attributes.state", "info/status", "State", "run_state", "estate", "statistics", "loss"]
    assert state_columns(columns, MAPPING) == ["attributes.state", "info/status", "State", "run_state"]
    filtered = ImportMapping(lr="lr", loss="loss", axes=MAPPING.axes, where=(parse_where("State == finished"),))
    assert state_columns(columns, filtered) == ["attributes.state", "info/status", "run_state"]
    assert state_columns(columns, ImportMapping(lr="lr", loss="loss", axes=MAPPING.axes, status="State")) == []
    table = pd.DataFrame(grid({})).assign(loss=lambda t: t["loss"].astype(float), **{"attributes.state": "finished"})
    warned = to_trials(table, MAPPING).warnings
    assert len(warned) == 1 and "column 'attributes.state' looks like a run state" in warned[0]
    assert "pass --status attributes.state" in warned[0]


def test_json_lines_null_is_unfinished_and_nan_text_diverged(tmp_path: Path) -> None:
    """A null or an absent key is unfinished; ``"NaN"``, ``"nan"``, ``"inf"`` and a bare ``NaN`` diverged."""
    special = {0: '"loss": null', 1: '"loss": "NaN"', 6: '"loss": "inf"', 7: '"loss": NaN', 12: '"loss": "nan"'}
    lines = []
    for index, row in enumerate(grid({})):
        loss = special.get(index, f'"loss": {row["loss"]}') if index != 13 else None
        fields = [f'"width": {row["width"]}', f'"lr": {row["lr"]}'] + ([loss] if loss else [])
        lines.append("{" + ", ".join(fields) + "}")
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    imported = imported_from(path)
    assert states(imported) == {"ok": 12, "diverged": 4, "failed": 0, "dropped_unfinished": 2}
    assert status_of(imported, 64, -11) == "left out" and status_of(imported, 64, -10) == "diverged"
    assert imported.warnings == [f"2 rows have {EMPTY_WARNING} (map --status to tell crashed from running)"]


def test_parquet_null_is_unfinished_and_float_nan_diverged(tmp_path: Path) -> None:
    rows = grid({})
    losses: list[object] = [float(str(r["loss"])) for r in rows]
    losses[0], losses[1], losses[6], losses[7] = None, float("nan"), float("inf"), None
    path = tmp_path / "runs.parquet"
    pq.write_table(pa.table({"width": [r["width"] for r in rows], "lr": [r["lr"] for r in rows],
                             "loss": pa.array(losses, type=pa.float64())}), path)
    imported = imported_from(path)
    assert states(imported) == {"ok": 14, "diverged": 2, "failed": 0, "dropped_unfinished": 2}
    assert status_of(imported, 64, -10) == "diverged" and status_of(imported, 64, -11) == "left out"
    assert imported.warnings == [f"2 rows have {EMPTY_WARNING} (map --status to tell crashed from running)"]


def test_a_table_in_memory_reads_nan_as_empty_and_the_text_nan_as_diverged() -> None:
    table = pd.DataFrame(grid({(64, -11): "nan", (64, -10): "", (128, -11): " "}))
    table["loss"] = table["loss"].astype(object)
    table.loc[(table["width"] == 256) & (table["lr"] == 2.0**-11), "loss"] = float("nan")
    table.loc[(table["width"] == 256) & (table["lr"] == 2.0**-10), "loss"] = None
    imported = to_trials(table, MAPPING)
    assert states(imported) == {"ok": 13, "diverged": 1, "failed": 0, "dropped_unfinished": 4}


def test_every_row_unfinished_is_still_refused(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "runs.csv", grid({(w, k): "" for w in WIDTHS for k in LOG2_LRS}))
    with pytest.raises(UserError, match="every row is an unfinished run"):
        imported_from(path)
