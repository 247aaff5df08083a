"""A table of finished runs turned into this tool's trials: the mapping's columns checked and read, the rows
filtered, each run's status decided (an empty loss is a run that never finished, a NaN the file wrote one that
diverged), points merged, LRs placed on their log2 grid, duplicates resolved (only rows with a loss repeat one
another: a failed attempt beside a finished run stays, as a failed trial), thin points skipped and collinear axes
named. The result is ``trials.csv``'s schema: ``setup``, one column per axis (by its name), ``seed``,
``search_key``, ``log2_lr``, ``val_loss``, ``status``, ``row`` (the source's row)."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import UserError, did_you_mean
from ..schema import LR_COLUMN, LR_KEY, axis_named
from ..words import TrialStatus
from .mapping import AxisColumn, ImportMapping, RowFilter
from .points import LeftOut, bin_on_grid, left_out_axes, lr_grid, merge_close
from .source import NAN_VALUES

__all__ = ["Imported", "to_trials", "STATUS_WORDS", "STATE_NAMES", "DEFAULT_SETUP", "MIN_LRS", "safe_label",
           "state_columns", "WITH_LOSS", "LISTED_ROWS"]

DEFAULT_SETUP = "imported"
MIN_LRS = 3
"""A point needs this many distinct learning rates for a bowl."""
STATUS_WORDS: dict[str, tuple[str, ...]] = {
    "ok": ("ok", "complete", "completed", "finished", "success", "succeeded", "done", "trialstate.complete"),
    "diverged": ("diverged", "nan", "inf", "exploded"),
    "failed": ("fail", "failed", "crashed", "error", "killed", "oom", "timeout", "trialstate.fail"),
    "dropped": ("pruned", "running", "waiting", "queued", "trialstate.pruned", "trialstate.running",
                "trialstate.waiting"),
}
"""How a ``--status`` column's values read (case-insensitive): a finished run (ok), one that diverged or failed,
or one that did not finish (dropped: its loss is not a final one)."""
STATE_NAMES = ("state", "status", "run_state")
"""Column names that read as a run's state (case-insensitive; also as the last part of a dotted or slashed name:
``attributes.state``, ``info/status``): left unmapped, they draw a warning to pass ``--status``."""
WITH_LOSS = (TrialStatus.OK, TrialStatus.DIVERGED)
"""Statuses of the rows that carry a loss (a diverged one's NaN, infinity or loss above ``--diverged-above``): only
such rows repeat one another, and a failed row beside one at its point, LR and seed is an attempt it replaced (a
crashed run and its finished retry), kept as a failed trial as a sweep keeps one ``--retry-failed`` replaced."""
LISTED_ROWS = 10
"""The refusal of repeated rows lists this many row numbers, then how many more."""
UNSAFE = re.compile(r"[^A-Za-z0-9 ._+\-=,:()\[\]]")
"""Characters a setup label may not keep: they would break a file name or a Markdown table (compare.md)."""


@dataclass
class Imported:
    """An import's trials and what the conversion decided, for config.yaml, summary.json and the printout."""

    trials: pd.DataFrame
    axes: list[str]
    left_out: dict[str, LeftOut]
    """The axes left out of the analysis (``points.left_out_axes``), by name."""
    steps: dict[str, float]
    """Each setup's log2 LR step (octaves)."""
    binned: bool
    rows_read: int
    rows_kept: int
    counts: dict[str, int] = field(default_factory=dict)
    """Rows per status, rows dropped (unfinished), duplicates merged, failed attempts beside a row with a loss at
    their point, LR and seed (``retried``), points skipped (fewer than 3 LRs)."""
    skipped_points: list[dict[str, Any]] = field(default_factory=list)
    retried_points: list[dict[str, Any]] = field(default_factory=list)
    """Per point with failed attempts beside rows with a loss: its setup, axis values and how many (``failed``)."""
    renamed_setups: dict[str, str] = field(default_factory=dict)
    seeds: bool = False
    """Whether the table told seeds apart (a seed column with two or more seeds at some point and LR)."""
    step_source: str = ""
    """Where the step came from: ``--step``, or inferred (and how)."""
    warnings: list[str] = field(default_factory=list)
    """What the conversion read in a way the user may not expect (an empty loss, a state column left unmapped),
    one line each, without the ``warning:`` the printout puts before it."""

    @property
    def dropped_axes(self) -> dict[str, str]:
        """Each axis left out of the analysis with why, as ``config.yaml`` records it."""
        return {name: left.reason() for name, left in self.left_out.items()}


def safe_label(label: str) -> str:
    """A setup label with the characters that would break a file name or a Markdown table replaced by ``_``."""
    return UNSAFE.sub("_", label.strip()) or "_"


def _row(index: int) -> int:
    """The row number a user sees: 1 for the table's first data row."""
    return int(index) + 1


def _closest(column: str, columns: list[str]) -> str:
    """``did you mean 'val/loss'? `` for the table's column most like ``column``: spelled alike (case aside), or
    else sharing a word with it (``loss`` → ``val/loss``)."""
    lower = {c.lower(): c for c in columns}
    hint = did_you_mean(column.lower(), lower)
    if hint:
        return hint.replace(hint.split("'")[1], lower[hint.split("'")[1]])
    words = set(re.split(r"[^a-z0-9]+", column.lower())) - {""}
    shared = [c for c in columns if words & set(re.split(r"[^a-z0-9]+", c.lower()))]
    return f"did you mean '{shared[0]}'? " if shared else ""


def _columns(table: pd.DataFrame, mapping: ImportMapping) -> None:
    columns = [str(c) for c in table.columns]
    for column in mapping.columns():
        if column not in table.columns:
            listed = ", ".join(columns[:30]) + (" …" if len(columns) > 30 else "")
            raise UserError(f"column '{column}' is not in the table",
                            f"{_closest(column, columns)}its columns: {listed}")


def _compare(values: pd.Series, rule: RowFilter) -> pd.Series:
    from .mapping import OPERATORS

    op = OPERATORS[rule.op]
    numbers = pd.to_numeric(values, errors="coerce")
    try:
        target = float(rule.value)
    except ValueError:
        return op(values.astype(str), rule.value)
    if numbers.notna().any():
        return op(numbers, target).fillna(False).astype(bool)
    return op(values.astype(str), rule.value)


def _filtered(table: pd.DataFrame, mapping: ImportMapping) -> pd.DataFrame:
    if table.empty:
        raise UserError("the table has no rows", "give a table with one row per finished run")
    keep = pd.Series(True, index=table.index)
    for rule in mapping.where:
        keep &= _compare(table[rule.column], rule)
    if not keep.any():
        raise UserError(f"no row passes --where {' and '.join(f.text() for f in mapping.where)}",
                        "loosen the filters (check a value's spelling and case)")
    return table[keep]


def _positive(table: pd.DataFrame, column: str, what: str) -> pd.Series:
    values = pd.to_numeric(table[column], errors="coerce")
    bad = ~(np.isfinite(values) & (values > 0))
    if bad.any():
        index = bad.idxmax()
        raise UserError(f"row {_row(index)}: {what} column '{column}' holds '{table[column].loc[index]}', not a "
                        "positive number", "fix the row, or leave it out with --where")
    return values.astype(float)


def _nan_values(table: pd.DataFrame, column: str) -> np.ndarray:
    """Per row of ``table`` as read, whether ``column`` holds a NaN the source itself wrote (the text ``nan``, a
    Parquet float NaN), as ``read_source`` marked them; an empty cell, a null or an unmarked NaN is not one."""
    flags = np.zeros(len(table), dtype=bool)
    marked = [i for i in table.attrs.get(NAN_VALUES, {}).get(column, ()) if 0 <= i < len(table)]
    flags[marked] = True
    return flags


def _loss(raw: pd.Series, nan_values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Each row's loss as a float, and whether its cell was empty (empty or blank text, a null, a NaN not written
    as a value): text such as ``nan``, ``inf`` or ``Infinity`` reads as that number."""
    missing = raw.isna() & ~nan_values
    if not pd.api.types.is_numeric_dtype(raw.dtype):
        missing |= raw.astype("string").str.strip().eq("").fillna(False).astype(bool)
    return pd.to_numeric(raw, errors="coerce").astype(float), missing


def _status(table: pd.DataFrame, mapping: ImportMapping, loss: pd.Series, missing: pd.Series) -> pd.Series:
    """ok / diverged / failed / dropped per row: the status column's word; then a finished run with an empty loss
    is unfinished (dropped: it has no final loss), and one with a non-finite loss or one above
    ``--diverged-above`` diverged."""
    status = pd.Series("ok", index=table.index, dtype=object)
    if mapping.status is not None:
        words = {w: kind for kind, spelled in STATUS_WORDS.items() for w in spelled}
        raw = table[mapping.status].astype(str).str.strip().str.lower()
        unknown = sorted(set(raw) - set(words))
        if unknown:
            raise UserError(f"--status column '{mapping.status}' holds '{unknown[0]}', which is not a known status",
                            "known: " + "; ".join(f"{k}: {', '.join(v[:4])}" for k, v in STATUS_WORDS.items())
                            + " (or leave such rows out with --where)")
        status = raw.map(words)
    finished = status == TrialStatus.OK
    above = loss > mapping.diverged_above if mapping.diverged_above is not None else False
    blown = ~missing & (~np.isfinite(loss) | above)
    status[finished & missing] = "dropped"
    status[finished & blown] = "diverged"
    return status


def state_columns(columns: list[str], mapping: ImportMapping) -> list[str]:
    """The columns whose name reads as a run's state (``STATE_NAMES``) that neither ``--status`` nor a ``--where``
    reads: none when ``--status`` is mapped."""
    if mapping.status is not None:
        return []
    filtered = {rule.column for rule in mapping.where}
    return [c for c in columns if c not in filtered and re.split(r"[./]", c.strip().lower())[-1] in STATE_NAMES]


def _warnings(columns: list[str], mapping: ImportMapping, missing: pd.Series) -> list[str]:
    """A line per state column left unmapped, and one for the rows with an empty loss when no ``--status`` tells
    a crashed run from a running one."""
    lines = [f"column '{c}' looks like a run state but is not mapped: pass --status {shlex.quote(c)} to read crashed "
             "and running runs (now every row with a loss counts as finished)" for c in state_columns(columns, mapping)]
    empty = int(missing.sum())
    if empty and mapping.status is None:
        rows = "1 row has" if empty == 1 else f"{empty:,} rows have"
        lines.append(f"{rows} an empty loss and no --status column is mapped: read as unfinished runs and left out "
                     "(map --status to tell crashed from running)")
    return lines


def _seeds(table: pd.DataFrame, mapping: ImportMapping) -> pd.Series:
    if mapping.seed is None:
        return pd.Series(0, index=table.index, dtype=np.int64)
    raw = table[mapping.seed]
    if raw.isna().any():
        index = raw.isna().idxmax()
        raise UserError(f"row {_row(index)}: seed column '{mapping.seed}' is empty",
                        "fill it, leave the row out with --where, or import without --seed")
    numbers = pd.to_numeric(raw, errors="coerce")
    if numbers.notna().all() and (numbers % 1 == 0).all():
        return numbers.astype(np.int64)
    return pd.Series(pd.factorize(raw.astype(str))[0], index=table.index, dtype=np.int64)


def _setups(table: pd.DataFrame, mapping: ImportMapping) -> tuple[pd.Series, dict[str, str]]:
    if mapping.setup is None:
        return pd.Series(DEFAULT_SETUP, index=table.index, dtype=object), {}
    raw = table[mapping.setup].astype(str)
    renamed = {label: safe_label(label) for label in raw.unique() if safe_label(label) != label}
    return raw.map(lambda label: renamed.get(label, label)), renamed


def _place_lrs(trials: pd.DataFrame, mapping: ImportMapping,
              axes: list[str]) -> tuple[dict[str, float], bool, str]:
    """Each setup's step; the LRs binned on a log2 grid with ``--step``, or when continuous LRs leave some point
    without three of them inside its best LR's fit window (the step then inferred)."""
    from ..analysis.local_fit import fit_halfwidth

    steps, binned = {}, mapping.step is not None
    source = "given by --step" if binned else "inferred from the most common spacing"
    origin = float(trials[LR_COLUMN].min())
    for setup, part in trials.groupby("setup", sort=False):
        grid = lr_grid(x.to_numpy() for _, x in part.groupby(axes)[LR_COLUMN])
        step = mapping.step or grid.step
        if mapping.step is None and not grid.on_grid and not _fits_as_they_are(part, axes, fit_halfwidth(step, True)):
            step, binned = _round_step(step), True
            source = ("inferred from the median spacing of continuously sampled LRs, which leave some point without "
                      "three LRs in its fit window")
        elif mapping.step is None and not grid.on_grid:
            source = "the median spacing of continuously sampled LRs"
        steps[str(setup)] = step
    if binned:
        for setup, step in steps.items():
            rows = trials["setup"] == setup
            trials.loc[rows, LR_COLUMN] = bin_on_grid(trials.loc[rows, LR_COLUMN].to_numpy(), step, origin)
    return steps, binned, source


def _round_step(step: float) -> float:
    """A binning step from continuous LRs' median spacing: the nearest of 1/8, 1/4, 1/2 and 1 octave."""
    return float(min((0.125, 0.25, 0.5, 1.0), key=lambda s: abs(math.log2(s / step))))


def _fits_as_they_are(part: pd.DataFrame, axes: list[str], halfwidth: float) -> bool:
    """Every point holds three distinct LRs within ``halfwidth`` of its lowest-loss LR."""
    for _, rows in part.groupby(axes):
        ok = rows[rows["status"] == TrialStatus.OK]
        if ok.empty:
            continue
        best = float(ok.loc[ok["val_loss"].idxmin(), LR_COLUMN])
        near = ok[LR_COLUMN][(ok[LR_COLUMN] - best).abs() <= halfwidth + 1e-9]
        if near.nunique() < MIN_LRS:
            return False
    return True


def _listed(rows: pd.Series) -> str:
    """Row numbers as a refusal lists them: every one, or the first ``LISTED_ROWS`` and how many more."""
    shown = ", ".join(str(r) for r in rows.head(LISTED_ROWS))
    return shown + (f" and {len(rows) - LISTED_ROWS} more" if len(rows) > LISTED_ROWS else "")


def _duplicates(trials: pd.DataFrame, mapping: ImportMapping, axes: list[str], binned: bool,
                states: list[str]) -> tuple[pd.DataFrame, int]:
    """Rows with a loss (``WITH_LOSS``) that repeat a (setup, point, LR, seed): averaged when the LRs were binned
    (several runs in one bin), else refused with their row numbers unless ``--duplicates mean|first`` (the fix
    naming first the unmapped state column of ``states``, whose crashed runs may be what repeats). Failed rows are
    never duplicates: each stays, a failed trial."""
    keys = ["setup", *axes, LR_COLUMN, "seed"]
    with_loss = trials["status"].isin(WITH_LOSS)
    ended, failed = trials[with_loss], trials[~with_loss]
    repeated = ended.duplicated(keys, keep=False)
    if not repeated.any():
        return trials, 0
    rule = "mean" if binned else mapping.duplicates
    if rule == "refuse":
        rows = _listed(ended.loc[repeated, "row"])
        state = (f"pass --status {shlex.quote(states[0])} (a crashed run beside its retry is a failed attempt, not "
                 "a duplicate), " if states else "")
        if mapping.seed is None:
            raise UserError(f"rows {rows} repeat a point and learning rate with no seed to tell them apart",
                            f"{state}map a seed column (--seed), or merge them with --duplicates mean or --duplicates "
                            "first")
        raise UserError(f"rows {rows} repeat a point, learning rate and seed ('{mapping.seed}')",
                        f"{state}check the --axis mapping, or merge them with --duplicates mean or --duplicates first")
    merged = int(repeated.sum() - ended[repeated].groupby(keys).ngroups)
    if rule == "first":
        kept = ended.drop_duplicates(keys, keep="first")
    else:
        finished = ended.assign(ok_loss=ended["val_loss"].where(ended["status"] == TrialStatus.OK))
        grouped = finished.groupby(keys, sort=False, as_index=False)
        kept = grouped.agg(search_key=("search_key", "first"), val_loss=("ok_loss", "mean"), row=("row", "first"),
                           any_ok=("status", lambda s: bool((s == TrialStatus.OK).any())))
        kept["status"] = np.where(kept["any_ok"], TrialStatus.OK, TrialStatus.DIVERGED)
        kept = kept.drop(columns=["any_ok"])
    together = pd.concat([kept, failed[kept.columns]], ignore_index=True)
    return together.sort_values("row", kind="stable").reset_index(drop=True), merged


def _retried(trials: pd.DataFrame, axes: list[str], names: dict[str, str]) -> list[dict[str, Any]]:
    """Per point, its failed rows beside a row with a loss at the same LR and seed: the point's setup and axis
    values (by name) and how many (``failed``)."""
    keys = ["setup", *axes, LR_COLUMN, "seed"]
    failed = trials.loc[trials["status"] == TrialStatus.FAILED, keys]
    beside = failed.merge(trials.loc[trials["status"].isin(WITH_LOSS), keys].drop_duplicates(), on=keys)
    return [{"setup": str(k[0]), **{names[a]: _plain(v) for a, v in zip(axes, k[1:])}, "failed": len(part)}
            for k, part in beside.groupby(["setup", *axes], sort=True)]


def _plain(value: Any) -> Any:
    """A numpy number as the Python number YAML writes."""
    return value.item() if hasattr(value, "item") else value


def _thin_points(trials: pd.DataFrame, axes: list[str]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Points with fewer than ``MIN_LRS`` distinct LRs left out (listed); refused when none remains."""
    distinct = trials.groupby(["setup", *axes])[LR_COLUMN].transform("nunique")
    thin = trials[distinct < MIN_LRS]
    skipped = [{"setup": str(k[0]), **{a: _plain(v) for a, v in zip(axes, k[1:])},
                "lrs": int(part[LR_COLUMN].nunique())} for k, part in thin.groupby(["setup", *axes])]
    kept = trials[distinct >= MIN_LRS].reset_index(drop=True)
    if kept.empty:
        raise UserError(f"no point has {MIN_LRS} or more distinct learning rates ({len(skipped)} points checked)",
                        "check the --axis mapping (an axis that differs per run makes every run its own point) "
                        "and --where")
    return kept, skipped


def to_trials(table: pd.DataFrame, mapping: ImportMapping) -> Imported:
    """The trials of ``table`` under ``mapping``; one line for any input the analysis cannot take."""
    _columns(table, mapping)
    rows_read, nan_values = len(table), pd.Series(_nan_values(table, mapping.loss))
    table = _filtered(table.reset_index(drop=True), mapping)
    lr = _positive(table, mapping.lr, "learning-rate")
    names = {axis_named(a.name).column: a.name for a in mapping.axes}
    axes = list(names)
    values = {axis_named(a.name).column: merge_close(_positive(table, a.column, "axis")) for a in mapping.axes}
    loss, missing = _loss(table[mapping.loss], nan_values.loc[table.index])
    status = _status(table, mapping, loss, missing)
    setups, renamed = _setups(table, mapping)
    trials = pd.DataFrame({"setup": setups, **values, "seed": _seeds(table, mapping), "search_key": LR_KEY,
                           LR_COLUMN: np.log2(merge_close(lr).astype(float)),
                           "val_loss": loss.where(status == TrialStatus.OK), "status": status,
                           "row": table.index.to_series().map(_row)})
    counts = {"dropped_unfinished": int((status == "dropped").sum())}
    trials = trials[trials["status"] != "dropped"].reset_index(drop=True)
    if trials.empty:
        raise UserError("every row is an unfinished run (pruned, running or waiting, or its loss is empty)",
                        "import finished runs: each with its final loss")
    steps, binned, step_source = _place_lrs(trials, mapping, axes)
    trials, counts["duplicates_merged"] = _duplicates(trials, mapping, axes, binned,
                                                      state_columns([str(c) for c in table.columns], mapping))
    trials, skipped = _thin_points(trials, axes)
    counts.update({kind: int((trials["status"] == kind).sum()) for kind in ("ok", "diverged", "failed")})
    retried = _retried(trials, axes, names)
    counts["retried"] = sum(int(p["failed"]) for p in retried)
    counts["points_skipped"] = len(skipped)
    points = trials[["setup", *axes]].drop_duplicates().rename(columns=names)
    left_out = left_out_axes(points, list(names.values()), {a.name: _axis_option(a) for a in mapping.axes})
    seeds = bool((trials.groupby(["setup", *axes, LR_COLUMN])["seed"].nunique() > 1).any())
    columns = ["setup", *axes, "seed", "search_key", LR_COLUMN, "val_loss", "status", "row"]
    ordered = trials[columns].sort_values(["setup", *axes, LR_COLUMN, "seed"], kind="stable").reset_index(drop=True)
    return Imported(ordered, [name for name in names.values() if name not in left_out], left_out, steps, binned,
                    rows_read, len(table), counts, skipped, retried, renamed, seeds, step_source,
                    _warnings([str(c) for c in table.columns], mapping, missing))


def _axis_option(axis: AxisColumn) -> str:
    """An axis's ``--axis`` option as given: ``--axis width``, ``--axis params=n_params``."""
    return f"--axis {axis.name}" if axis.name == axis.column else f"--axis {shlex.quote(f'{axis.name}={axis.column}')}"
