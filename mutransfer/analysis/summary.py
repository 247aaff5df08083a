"""A run's ``Summary`` (``analysis.result``: per key and setup, the optimum per point, a fit per swept axis, the
law, the verdict) computed from its trials and written as ``summary.json``, and read back.

A sweep across depth, horizon, batch size or token budget adds that axis's column to ``trials.csv``; each axis
is then the rows where every other axis sits at its base (smallest) value, and a setup with two or more axes
gains ``law`` (one fit over every point)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..errors import UserError
from ..files import SUMMARY_FILE, write_json
from ..schema import LR_KEY, Axis
from ..table.constants import constant_keys
from ..table.decay import DECAY_OFF_VALUES
from ..words import Verdict
from .batch import batch_analysis
from .constant_effect import add_constant_effects
from .decay_effect import add_decay_effects
from .drift import SearchSettings, analyze, lack_of_fit_reason
from .backtest import law_backtest, line_backtest
from .fates import Fates, combined, count_fates, no_optimum_reason
from .held_out import Backtest
from .law import LawData, judge_law, law_data, law_of
from .prediction import carried_law
from .no_seeds import no_seed_noise, seeded_noise
from .run_files import run_record, declared_axes, read_tables, search_settings
from .thresholds import Thresholds
from .trial_table import axis_rows, searched_values, swept_axes, tidy_rows
from .result import AxisFit, KeyResult, SetupResult, Summary, Unfitted, point_value

__all__ = ["summarize", "axis_table", "final_stages", "summarize_dir", "refuse_unfitted", "summarize_run",
           "write_summary", "read_summary"]


def axis_table(trials: pd.DataFrame, key: str, settings: Mapping[str, Mapping[str, SearchSettings]],
               axis: Axis, axes: Optional[Sequence[Axis]] = None) -> pd.DataFrame:
    """One key's tidy rows along ``axis`` through the base point, as the analysis reads them: ``setup, point, seed,
    x, loss, status`` with ``x`` on the analysis's scale (``searched_values``; finite values only). ``axes``: the
    swept axes (default ``swept_axes``)."""
    rows = trials[trials["search_key"] == key].reset_index(drop=True)
    return _bowl(axis_rows(rows, axis, axes), key, dict(settings.get(key, {})), {"point": axis.column})


def summarize(trials: pd.DataFrame, settings: Mapping[str, Mapping[str, SearchSettings]],
              th: Thresholds = Thresholds(), axes: Sequence[str] = (), no_seeds: Optional[bool] = None,
              few_lrs: Mapping[str, int] = {}) -> Summary:
    """Every searched key's results; ``settings[key][setup]`` says how each setup searched each key. Each swept
    axis (``swept_axes``; ``axes`` names them instead) gets its fit (the same optimum, interval and verdict rules
    with log2 of the axis value as the x), and two or more axes the law (one fit over every point). ``no_seeds``
    (an imported table: True without seeds, False with them; None for a sweep): how the noise is measured
    (``analysis.no_seeds``), recorded in the summary's ``noise``. ``few_lrs``: per setup, the points an import
left out with fewer than three LRs (counted among the points' fates)."""
    summary = Summary(hold=str(trials["hold"].iloc[0]) if "hold" in trials.columns else None)
    for key, rows in final_stages(trials).groupby("search_key", sort=False):
        result = _analysis(rows.reset_index(drop=True), str(key), dict(settings.get(str(key), {})), th, axes,
                           bool(no_seeds), few_lrs)
        summary.keys[str(key)] = result
        if no_seeds:
            summary.noise = no_seed_noise(result.setups)
    if no_seeds is False:
        summary.noise = seeded_noise()
    return summary


def final_stages(trials: pd.DataFrame) -> pd.DataFrame:
    """A sweep's trials as the analysis reads them when it tuned constants (a ``stage`` column): of the coordinate
    rounds, only each constant's last stage (its point at the tuning width); the rounds' learning-rate stages are
    the search, the learning rate at every width after them the answer."""
    if "stage" not in trials.columns or trials["stage"].isna().all():
        return trials
    staged = trials["stage"].notna()
    last = trials[staged].groupby(["setup", "search_key"])["stage"].transform("max")
    keep = ~staged
    keep[staged] = (trials.loc[staged, "search_key"] != LR_KEY) & (trials.loc[staged, "stage"] == last)
    return trials[keep].reset_index(drop=True)


def summarize_dir(run_dir: Path, trials: pd.DataFrame, th: Thresholds = Thresholds()) -> Summary:
    """The summary of a run directory's ``trials`` as its config.yaml says to analyse them: a sweep's registered
    axes, or an import's declared axes and its noise without seeds."""
    record = run_record(run_dir)
    imported = record.get("kind") == "import"
    few_lrs = Counter(str(point.get("setup")) for point in record.get("skipped_points") or []
                      if isinstance(point, dict)) if imported else Counter()
    return summarize(trials, search_settings(run_dir, trials), th, declared_axes(run_dir),
                     (not record.get("seeds", False)) if imported else None, few_lrs)


def _bowl(rows: pd.DataFrame, key: str, own: Mapping[str, SearchSettings],
          columns: dict[str, str]) -> pd.DataFrame:
    """The analysis's table of one key's trials: every point with a finite searched value (decay off on a log2
    grid, -inf, or as a timescale, inf, is the anchor a decay must beat, not a point of its bowl)."""
    with np.errstate(divide="ignore"):
        x = searched_values(rows, key, own)
    keep = np.isfinite(x).to_numpy()
    return tidy_rows(rows[keep], x[keep], columns)


def _off(rows: pd.DataFrame, key: str) -> pd.DataFrame:
    """The trials of a decay key trained with decay off (none for any other key)."""
    if key not in DECAY_OFF_VALUES:
        return rows.iloc[:0]
    return rows[rows[key] == DECAY_OFF_VALUES[key]]


def _analysis(rows: pd.DataFrame, key: str, own: dict[str, SearchSettings], th: Thresholds,
              named: Sequence[str], no_seeds: bool = False, few_lrs: Mapping[str, int] = {}) -> KeyResult:
    """One key's result per setup: a fit per swept axis and, with two or more, the law (and the batch worth using
    across batch sizes held at fixed tokens); a decay key's points say whether the best decay beats decay off.

    A sweep's setup keeps the first axis's line through the base point as its verdict and prediction (the law
    judged beside it); the law is primary for an import whose setup's points vary on two or more axes, and for a
    setup no base-point line holds (``result.PRIMARY``). A setup no point of which has an optimum inside its LRs
    is listed among the key's ``unfitted`` with why."""
    axes = swept_axes(rows, named)
    fits: dict[str, dict[str, AxisFit]] = {}
    for axis in axes:
        part = axis_rows(rows, axis, axes)
        fits[axis.name] = analyze(_bowl(part, key, own, {"point": axis.column}), own, th, axis.name, no_seeds)
        if key in DECAY_OFF_VALUES:
            add_decay_effects(fits[axis.name], _off(part, key), axis.column)
        if key in constant_keys():
            add_constant_effects(fits[axis.name], part, key, axis.column, th.effect_margin)
    table = _bowl(rows, key, own, {a.name: a.column for a in axes})
    data = {str(label): law_data(part, [a.name for a in axes], own.get(str(label), SearchSettings()), th, no_seeds)
            for label, part in table.groupby("setup", sort=False)} if len(axes) > 1 else {}
    laws = {label: law_of(points, censored_likelihood=bool(named)) for label, points in data.items()}
    batches = _batches(rows, key, own, th, axes, bool(named)) if len(axes) > 1 else None
    result = KeyResult(key)
    first = fits[axes[0].name]
    for label in [*first, *(str(s) for s in table["setup"].unique() if str(s) not in first)]:
        law = laws.get(label)
        if law is not None:
            judge_law(law, th)
        points = data[label].points if label in data else []
        varying = sum(len({p.at[a.name] for p in points}) > 1 for a in axes)
        if label in first and not (named and varying >= 2):
            setup = SetupResult(label, {name: fit[label] for name, fit in fits.items() if label in fit},
                                first[label].verdict, first[label].reason, first[label].fix, law=law)
            _judge_law(setup)
            fates = count_fates([p.result for p in points] if points else first[label].points.values(),
                                few_lrs.get(label, 0))
        else:
            fates = count_fates([p.result for p in points], few_lrs.get(label, 0))
            if fates.fitted == 0:
                reason, fix = no_optimum_reason(fates)
                result.unfitted[label] = Unfitted(reason, fix, fates)
                continue
            lines = {a.name: _cut_line(table, label, a, axes, fits[a.name].get(label), data[label], own, th, no_seeds)
                     for a in axes}
            setup = SetupResult(label, {name: fit for name, fit in lines.items() if fit is not None},
                                Verdict.INCONCLUSIVE,
                                law=law, primary="law")
            _judge_by_law(setup, fates, len(axes))
        setup.fates = fates
        if key == LR_KEY:
            setup.backtest = _backtest(setup, data.get(label), rows, key, own, th, axes, no_seeds, bool(named))
        if batches is not None:
            setup.batch = {"hold": "tokens", **batches[label]} if label in batches else None
        result.setups[label] = setup
    return result


def _cut_line(table: pd.DataFrame, label: str, axis: Axis, axes: Sequence[Axis], base: Optional[AxisFit],
              data: LawData, own: Mapping[str, SearchSettings], th: Thresholds, no_seeds: bool) -> Optional[AxisFit]:
    """The line drawn along ``axis`` for a setup the law judges: through the base point where that holds two or
    more measured optima, else through the cut of the other axes holding the most (ties: the smallest values),
    its cut recorded as ``at``."""
    others = [a.name for a in axes if a != axis]
    if base is not None:
        base.at = {name: point_value(table[name].min()) for name in others}
        if len(base.measured()) >= 2:
            return base
    counts = Counter(tuple(p.at[name] for name in others) for p in data.points if p.result.measured)
    if not counts or (base is not None and counts.most_common(1)[0][1] <= len(base.measured())):
        return base
    cut = max(counts, key=lambda c: (counts[c], [-float(v) for v in c]))
    keep = (table["setup"] == label).to_numpy().copy()
    for name, value in zip(others, cut):
        keep &= (table[name] == value).to_numpy()
    part = table[keep].rename(columns={axis.name: "point"})
    fit = analyze(part, own, th, axis.name, no_seeds)[label]
    fit.at = dict(zip(others, cut))
    return fit


def _judge_by_law(setup: SetupResult, fates: Fates, axes: int) -> None:
    """A setup the law judges: its verdict, reason and fix are the law's on its first axis (``inconclusive`` with
    why where no law could be fitted)."""
    law = setup.law
    if law is None:
        setup.reason = (f"{fates.measured} point(s) with a measured optimum: too few for a law over {axes} axes "
                        f"({fates.line()})")
        setup.fix = "add points whose optimum lies inside their LRs, on every axis"
        return
    judged = law.verdicts[setup.first_axis]
    setup.verdict, setup.reason, setup.fix = judged.verdict, judged.reason, judged.fix


def _backtest(setup: SetupResult, data: Optional[LawData], rows: pd.DataFrame, key: str,
              own: Mapping[str, SearchSettings], th: Thresholds, axes: Sequence[Axis], no_seeds: bool,
              censored_likelihood: bool) -> Backtest:
    """The setup's backtest: the law's where it carries the prediction (primary, or a sweep's law across width and
    another axis; refitted as it was fitted), else each axis's line."""
    law = setup.law
    if law is not None and data is not None and (setup.primary == "law" or carried_law(setup) is not None):
        return law_backtest(data, law.axes, censored_likelihood)
    result = Backtest()
    settings = own.get(setup.setup, SearchSettings())
    for axis in axes:
        if axis.name not in setup.axes:
            continue
        part = _bowl(axis_rows(rows, axis, axes), key, dict(own), {"point": axis.column})
        held, why = line_backtest(part[part["setup"] == setup.setup], settings, th, axis.name, no_seeds)
        result.points += held
        if why:
            result.skipped[axis.name] = why
    return result


def _batches(rows: pd.DataFrame, key: str, own: dict[str, SearchSettings], th: Thresholds,
             axes: Sequence[Axis] = (), per_point: bool = False) -> Optional[dict[str, Any]]:
    """The batch worth using (``analysis.batch``) from the learning rate's trials of a batch axis held at fixed
    tokens, at the base of every axis besides the batch and the budget; None for any other table or key. An
    imported table (``per_point``, its ``axes`` given) with a batch and a tokens axis gets it too, and besides
    the base point's, each point of its other axes's under ``points`` (``{"at": {axis: value}, ...}``)."""
    names = {axis.name for axis in axes}
    if per_point:
        if key != LR_KEY or not {"batch", "tokens"} <= names:
            return None
    elif key != LR_KEY or "batch_size" not in rows.columns or set(rows.get("hold", pd.Series(dtype=str))) != {"tokens"}:
        return None
    others = [axis for axis in (axes if per_point else swept_axes(rows)) if axis.name not in ("batch", "tokens")]
    keep = np.ones(len(rows), dtype=bool)
    for axis in others:
        keep &= (rows[axis.column] == rows[axis.column].min()).to_numpy()
    columns = {"batch_size": "batch_size", "tokens": "tokens"}
    result = batch_analysis(_bowl(rows[keep].reset_index(drop=True), key, own, columns), own, th)
    if per_point and others:
        for at, part in rows.groupby([axis.column for axis in others]):
            values = dict(zip((axis.name for axis in others), np.atleast_1d(np.asarray(at, dtype=object))))
            for label, entry in batch_analysis(_bowl(part.reset_index(drop=True), key, own, columns), own,
                                               th).items():
                if label in result:
                    result[label].setdefault("points", []).append(
                        {"at": {n: point_value(v) for n, v in values.items()}, **entry})
    return result


def _judge_law(setup: SetupResult) -> None:
    """A setup whose law fails the lack-of-fit test is ``inconclusive``: its prediction would carry a line the
    points do not follow."""
    law = setup.law
    if law is None or not law.fails_lack_of_fit or setup.verdict == Verdict.INCONCLUSIVE or law.lack_of_fit is None:
        return
    setup.verdict = Verdict.INCONCLUSIVE
    setup.reason = lack_of_fit_reason("the points lie off the law", law.between_sd or 0.0, law.lack_of_fit)
    setup.fix = ("look at the curves (mutransfer plot) for a point whose optimum is off, or sweep 4 or more values "
                 "per axis so the scatter is measured and carried")


def refuse_unfitted(summary: Summary, key: str = LR_KEY) -> None:
    """One line (exit 2) for a run where no setup has a single point whose optimum lies inside its LRs (a fitted
    bowl: a point with fewer than three finished LRs shows none): why, from the points' fates, and what would fix
    it."""
    fates = [s.fates for s in summary.setups(key).values() if s.fates is not None]
    fates += [u.fates for u in summary.unfitted(key).values()]
    if not fates or any(f.fitted for f in fates):
        return
    reason, fix = no_optimum_reason(combined(fates))
    raise UserError(f"no setup could be fitted: {reason}", fix)


def summarize_run(run_dir: Path, th: Thresholds = Thresholds()) -> Summary:
    """The summary computed afresh from the run directory's trials.csv (so it matches the tables even when
    summary.json is older)."""
    trials, _ = read_tables(run_dir, all_axes=True)
    return summarize_dir(run_dir, trials, th)


def write_summary(run_dir: Path, trials: pd.DataFrame, th: Thresholds = Thresholds(),
                  status: Optional[Mapping[str, Any]] = None,
                  stopped: Optional[Mapping[str, dict[str, Any]]] = None) -> Summary:
    """The summary of ``trials`` written to summary.json, with the sweep's ``status`` (``SweepStatus.as_dict``:
    complete, or how many trials and which setups are missing) when given, and the setups it ``stopped`` when
    decided."""
    summary = summarize(trials, search_settings(run_dir, trials), th)
    summary.status = dict(status) if status is not None else None
    summary.stopped = dict(stopped or {})
    write_json(run_dir / SUMMARY_FILE, summary.to_json())
    return summary


def read_summary(run_dir: Path) -> Optional[Summary]:
    """The run directory's summary.json as written (either layout), or None when it is missing or damaged (the
    analysis then reads trials.csv and says what is wrong with it)."""
    try:
        return Summary.from_json(json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return None
