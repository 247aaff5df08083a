"""Two sweeps compared — did a change move the optimum? Pure numpy/pandas: two summaries in, tidy tables out.

For every searched key and setup both runs swept, at every width both estimated: each run's optimum x* (log2 η*
for the learning rate) with its interval, the difference B − A with its 95 % interval, p-value and Holm-adjusted
p-value, each run's best loss (the fitted minimum of the seeds' mean curve, ``analysis.optimum``) and the loss
difference with its interval; per setup, the pooled shift over the widths and the verdict ``same`` / ``moved`` /
``inconclusive`` (``analysis.shift`` holds the statistics and the rule). Setups only one run swept are listed.

The loss difference's interval is Welch's on each seed's own fitted minimum at that width (``seed_best_losses``);
there is none when either run has a single seed there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from ..defaults import COMPARE_TOLERANCE
from ..schema import LR_KEY
from .result import AxisFit, PointResult, SetupResult, Summary, point_key
from .stats import welch_difference
from .shift import SHIFT_VERDICTS, estimate_of, pooled_shift, shared_noise, shift_verdict, width_difference

__all__ = ["Comparison", "SetupComparison", "PointComparison", "RunLine", "compare", "compare_setup", "loss_difference", "keyed_setups", "config_changes",
           "law_point_label",
           "VERDICTS", "WIDTH_COLUMNS", "SETUP_COLUMNS", "DEFAULT_TOLERANCE"]

VERDICTS = SHIFT_VERDICTS
DEFAULT_TOLERANCE = COMPARE_TOLERANCE
"""Octaves: a shift inside ±0.25 counts as ``same`` (the margin ``transfer`` and ``verify`` use)."""
WIDTH_COLUMNS = ["key", "setup", "width", "x_a", "ci_a_low", "ci_a_high", "x_b", "ci_b_low", "ci_b_high",
                 "difference", "ci_low", "ci_high", "ci_kind", "p", "p_holm", "moved", "weight", "loss_a", "loss_b",
                 "loss_difference", "loss_ci_low", "loss_ci_high"]
RUN_SPECIFIC = ("name", "model.width", LR_KEY, "train.threads", "train.device")
"""Config keys that differ between runs by design (a setup's config is stored at its first width and LR)."""
SETUP_COLUMNS = ["key", "setup", "verdict", "reason", "shift", "shift_ci_low", "shift_ci_high", "shift_ci90_low",
                 "shift_ci90_high", "shift_p", "shift_p_holm", "shift_dof", "moved_widths", "largest_shift", "slope_a", "slope_a_low",
                 "slope_a_high", "verdict_a", "slope_b", "slope_b_low", "slope_b_high", "verdict_b", "only_a",
                 "only_b"]


def keyed_setups(summary: Summary) -> dict[str, dict[str, AxisFit]]:
    """Each searched key's setups' width lines as a reader is shown them (``SetupResult.judged``); a setup its law
    judges compares every point of the law, matched on all axes (``law_point_label``)."""
    return {key: {label: _compared_fit(setup) for label, setup in result.setups.items() if setup.axes}
            for key, result in summary.keys.items() if result.setups}


def law_point_label(at: Mapping[str, Any]) -> str:
    """A law point's place on every axis, as compare's rows name it: ``params=2e+07 tokens=1e+08 batch=32``."""
    return " ".join(f"{name}={float(value):g}" for name, value in at.items())


def _compared_fit(setup: SetupResult) -> AxisFit:
    """The fit compare reads: the line as judged; where the law judges, its first axis as judged with every law
    point keyed by its place on all axes."""
    judged = setup.judged(setup.first_axis)
    if setup.primary != "law" or setup.law is None:
        return judged
    points = {law_point_label(p.at): replace(p.result, point=law_point_label(p.at))  # type: ignore[arg-type]
              for p in setup.law.points}
    return replace(judged, points=points)  # type: ignore[arg-type]


def loss_difference(a: PointResult, b: PointResult) -> tuple[float, Optional[tuple[float, float]]]:
    """best loss B − A at one width, with Welch's 95 % interval from each run's seeds' fitted minima (None when
    either run has fewer than two)."""
    assert a.best_loss is not None and b.best_loss is not None
    d = float(b.best_loss) - float(a.best_loss)
    seeds_a = np.asarray(a.seed_best_losses, dtype=float)
    seeds_b = np.asarray(b.seed_best_losses, dtype=float)
    return d, welch_difference(seeds_a, seeds_b, d)


def _slope(fit: AxisFit) -> tuple[float, float, float]:
    ci = fit.slope_ci or (math.nan, math.nan)
    return (math.nan if fit.slope is None else float(fit.slope), float(ci[0]), float(ci[1]))


def compare_setup(info_a: AxisFit, info_b: AxisFit, tolerance: float = DEFAULT_TOLERANCE,
                  key: str = LR_KEY, setup: str = "") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One setup's two width lines compared: its width rows and its setup row (``WIDTH_COLUMNS``,
    ``SETUP_COLUMNS``)."""
    widths_a, widths_b = info_a.estimated(), info_b.estimated()
    shared = sorted(set(widths_a) & set(widths_b))
    pairs = [shared_noise(estimate_of(widths_a[w]), estimate_of(widths_b[w])) for w in shared]
    est_a, est_b = [a for a, _ in pairs], [b for _, b in pairs]
    differences = [width_difference(w, a, b) for w, a, b in zip(shared, est_a, est_b)]
    rho = max(float(info_a.seed_correlation or 0.0), float(info_b.seed_correlation or 0.0))
    shift = pooled_shift(differences, est_a, est_b, rho, rho)
    confidence = all(e.confidence for e in est_a + est_b)
    judged = shift_verdict(shift, differences, confidence, tolerance)
    weights = dict(zip(shift.widths, shift.weights)) if shift else {}
    rows = []
    for w, d, p_holm in zip(shared, differences, judged.p_holm):
        a, b = widths_a[w], widths_b[w]
        dl, loss_ci = loss_difference(a, b)
        ci_a, ci_b = a.ci or (math.nan, math.nan), b.ci or (math.nan, math.nan)
        rows.append({"key": key, "setup": setup, "width": w, "x_a": a.x_star, "ci_a_low": ci_a[0],
                     "ci_a_high": ci_a[1], "x_b": b.x_star, "ci_b_low": ci_b[0],
                     "ci_b_high": ci_b[1], "difference": d.value, "ci_low": d.ci[0], "ci_high": d.ci[1],
                     "ci_kind": d.kind, "p": d.p, "p_holm": p_holm, "moved": w in judged.moved,
                     "weight": weights.get(w, 0.0), "loss_a": a.best_loss, "loss_b": b.best_loss,
                     "loss_difference": dl, "loss_ci_low": loss_ci[0] if loss_ci else math.nan,
                     "loss_ci_high": loss_ci[1] if loss_ci else math.nan})
    slope_a, slope_b = _slope(info_a), _slope(info_b)
    moved_rows = [r for r in rows if r["moved"]]
    row = {"key": key, "setup": setup, "verdict": judged.verdict, "reason": judged.reason,
           "shift": shift.value if shift else math.nan,
           "shift_ci_low": shift.ci[0] if shift else math.nan, "shift_ci_high": shift.ci[1] if shift else math.nan,
           "shift_ci90_low": shift.ci90[0] if shift else math.nan,
           "shift_ci90_high": shift.ci90[1] if shift else math.nan, "shift_p": shift.p if shift else math.nan, "shift_p_holm": judged.shift_p_holm,
           "shift_dof": shift.dof if shift else math.nan, "moved_widths": judged.moved,
           "largest_shift": max((r["difference"] for r in moved_rows), key=abs) if moved_rows else math.nan,
           "slope_a": slope_a[0], "slope_a_low": slope_a[1], "slope_a_high": slope_a[2],
           "verdict_a": info_a.verdict, "slope_b": slope_b[0], "slope_b_low": slope_b[1],
           "slope_b_high": slope_b[2], "verdict_b": info_b.verdict,
           "only_a": sorted(set(widths_a) - set(widths_b)), "only_b": sorted(set(widths_b) - set(widths_a))}
    return rows, row


Interval = tuple[float, float]


@dataclass(frozen=True)
class PointComparison:
    """One compared point of a setup (a row of ``Comparison.widths``, as the commands read it): each run's optimum
    with its interval, B − A with its interval, p-value and Holm-adjusted p-value, whether it moved, and each run's
    best loss with the loss difference (its interval NaN with one seed)."""

    width: Any
    x_a: float
    ci_a: Interval
    x_b: float
    ci_b: Interval
    difference: float
    ci: Interval
    p_holm: float
    moved: bool
    loss_a: float
    loss_b: float
    loss_difference: float
    loss_ci: Interval

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "PointComparison":
        return cls(row["width"], row["x_a"], (row["ci_a_low"], row["ci_a_high"]), row["x_b"],
                   (row["ci_b_low"], row["ci_b_high"]), row["difference"], (row["ci_low"], row["ci_high"]),
                   row["p_holm"], bool(row["moved"]), row["loss_a"], row["loss_b"], row["loss_difference"],
                   (row["loss_ci_low"], row["loss_ci_high"]))


@dataclass(frozen=True)
class RunLine:
    """One run's line across the compared axis: its slope with the interval, and its verdict."""

    slope: float
    ci: Interval
    verdict: str


@dataclass(frozen=True)
class SetupComparison:
    """One compared (key, setup) (a row of ``Comparison.setups``): the verdict and why, the pooled shift with its
    95 % and 90 % intervals and Holm-adjusted p-value, the points that moved, each run's line, and the points only
    one run has."""

    key: str
    setup: str
    verdict: str
    reason: str
    shift: float
    shift_ci: Interval
    shift_ci90: Interval
    shift_p_holm: float
    moved_widths: list[Any]
    a: RunLine
    b: RunLine
    only_a: list[Any]
    only_b: list[Any]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "SetupComparison":
        line = {side: RunLine(row[f"slope_{side}"], (row[f"slope_{side}_low"], row[f"slope_{side}_high"]),
                              row[f"verdict_{side}"]) for side in ("a", "b")}
        return cls(row["key"], row["setup"], row["verdict"], row["reason"], row["shift"],
                   (row["shift_ci_low"], row["shift_ci_high"]), (row["shift_ci90_low"], row["shift_ci90_high"]),
                   row["shift_p_holm"], list(row["moved_widths"]), line["a"], line["b"], list(row["only_a"]),
                   list(row["only_b"]))


@dataclass(frozen=True)
class Comparison:
    """Run A against run B: one row per (key, setup, width) compared, one per (key, setup); the setups only
    one run swept, as (key, setup) pairs."""

    run_a: str
    run_b: str
    widths: pd.DataFrame
    setups: pd.DataFrame
    tolerance: float = DEFAULT_TOLERANCE
    only_in_a: list[tuple[str, str]] = field(default_factory=list)
    only_in_b: list[tuple[str, str]] = field(default_factory=list)
    axis: str = "width"
    """The axis whose points are compared (an import's first axis; its rows keep the column name ``width``)."""

    @property
    def moved(self) -> bool:
        return bool((self.setups["verdict"] == "moved").any())

    @property
    def verdict(self) -> str:
        """``moved`` when some setup moved, ``same`` when every setup is the same, else ``inconclusive``."""
        verdicts = set(self.setups["verdict"])
        return "moved" if "moved" in verdicts else "same" if verdicts == {"same"} else "inconclusive"

    def blocks(self) -> list[tuple[SetupComparison, list[PointComparison]]]:
        """Every compared (key, setup) with its compared points, as typed rows."""
        frame = self.widths
        return [(SetupComparison.of(row), [PointComparison.of(w) for w in frame[(frame["key"] == row["key"]) &
                                                                             (frame["setup"] == row["setup"])]
                                          .to_dict("records")])
                for row in self.setups.to_dict("records")]

    def as_dict(self) -> dict[str, Any]:
        """compare.json: the learning rate's setups under ``setups``, other keys' under ``keys``, each setup's
        width rows under ``widths``."""
        document: dict[str, Any] = {
            "mutransfer_compare": 2, "run_a": self.run_a, "run_b": self.run_b, "axis": self.axis,
            "verdict": self.verdict,
            "moved": self.moved, "tolerance": self.tolerance,
            "only_in_a": [{"key": k, "setup": s} for k, s in self.only_in_a],
            "only_in_b": [{"key": k, "setup": s} for k, s in self.only_in_b], "setups": {}, "keys": {}}
        for row in self.setups.to_dict("records"):
            rows = self.widths[(self.widths["key"] == row["key"]) & (self.widths["setup"] == row["setup"])]
            entry = {k: _plain(v) for k, v in row.items() if k not in ("key", "setup")}
            entry["widths"] = {(w["width"] if isinstance(w["width"], str) else point_key(w["width"])): {k: _plain(v) for k, v in w.items()
                                                      if k not in ("key", "setup", "width")}
                               for w in rows.to_dict("records")}
            place = document["setups"] if row["key"] == LR_KEY else document["keys"].setdefault(
                row["key"], {"setups": {}})["setups"]
            place[row["setup"]] = entry
        return document


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, NaN as None."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def compare(summary_a: Summary, summary_b: Summary, run_a: str = "A", run_b: str = "B",
            tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    """Every (key, setup) both summaries hold, compared (``compare_setup``); the others listed."""
    keyed_a, keyed_b = keyed_setups(summary_a), keyed_setups(summary_b)
    width_rows, setup_rows = [], []
    for key in keyed_a:
        for setup in (s for s in keyed_a[key] if s in keyed_b.get(key, {})):
            rows, row = compare_setup(keyed_a[key][setup], keyed_b[key][setup], tolerance, key, setup)
            width_rows.extend(rows)
            setup_rows.append(row)
    only_a = [(k, s) for k in keyed_a for s in keyed_a[k] if s not in keyed_b.get(k, {})]
    only_b = [(k, s) for k in keyed_b for s in keyed_b[k] if s not in keyed_a.get(k, {})]
    return Comparison(run_a, run_b, pd.DataFrame(width_rows, columns=WIDTH_COLUMNS),
                      pd.DataFrame(setup_rows, columns=SETUP_COLUMNS), tolerance, only_a, only_b)


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        flat: dict[str, Any] = {}
        for k, v in tree.items():
            flat.update(_flat(v, f"{prefix}{k}."))
        return flat
    return {prefix[:-1]: tree}


def _spec_setups(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The spec's setups by label, each searched key's settings under ``search.<key>`` (grid, range, step,
    sampler, noise seeds …)."""
    setups = {}
    for entry in (record.get("spec") or {}).get("setups") or []:
        search = {str(s.get("key")): {k: v for k, v in s.items() if k != "key"} for s in entry.get("search") or []}
        setups[str(entry.get("label"))] = {**{k: v for k, v in entry.items() if k not in ("label", "search")},
                                           "search": search}
    return setups


def config_changes(record_a: Mapping[str, Any], record_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What differs between two sweeps' config.yaml records, as ``{"where", "key", "a", "b"}`` rows: the spec's own
    keys (``where: spec``: widths, seeds, the other axes, overrides …), each shared setup's spec entry (``where``:
    the label, keys under ``spec.``: its overrides and every searched key's grid, range, step and noise seeds) and
    its resolved config (the label, the config's keys)."""
    changes = []
    spec_a = {k: v for k, v in (record_a.get("spec") or {}).items() if k != "setups"}
    spec_b = {k: v for k, v in (record_b.get("spec") or {}).items() if k != "setups"}
    places = [("spec", _flat(spec_a), _flat(spec_b))]
    searched_a, searched_b = _spec_setups(record_a), _spec_setups(record_b)
    places += [(label, _flat(searched_a[label], "spec."), _flat(searched_b[label], "spec."))
               for label in searched_a if label in searched_b]
    setups_a, setups_b = record_a.get("setups") or {}, record_b.get("setups") or {}
    places += [(label, _flat(setups_a[label]), _flat(setups_b[label])) for label in setups_a if label in setups_b]
    for where, flat_a, flat_b in places:
        for key in sorted(set(flat_a) | set(flat_b)):
            if key in RUN_SPECIFIC or flat_a.get(key) == flat_b.get(key):
                continue
            changes.append({"where": where, "key": key, "a": flat_a.get(key), "b": flat_b.get(key)})
    return changes
