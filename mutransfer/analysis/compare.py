"""Two sweeps compared — did a change move the optimum? Pure numpy/pandas: two summaries and trials tables in,
tidy tables out.

For every searched key and setup both runs swept, at every width both estimated: each run's optimum x* (log2 η*
for the learning rate) with its interval, the difference B − A with a 95 % interval, each run's best loss and
the loss difference, and each run's slope. A setup has ``moved`` when the difference's interval excludes 0 at
some width, otherwise ``same``.

The difference's interval: when both optima have confidence intervals from the seeds' spread (standard errors
and degrees of freedom), Welch's: (x_B − x_A) ± t₀.₉₇₅(ν)·√(se_A² + se_B²), ν by Welch–Satterthwaite.
Otherwise (a one-seed resolution bound, a cap from diverged trials, an optimum censored at a grid edge) each
side's half-width is the root sum of squares of the two half-widths that face it (B's lower and A's upper for
the lower end); a side left open by censoring stays open.

The loss difference is best loss B − best loss A (each the fitted minimum); its interval comes from the spread of
each seed's lowest loss at that width (Welch), and there is none when either run has a single seed there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from ..schema import LR_KEY
from .stats import t_quantile

__all__ = ["Comparison", "compare", "difference_interval", "loss_difference", "keyed_setups", "config_changes",
           "VERDICTS", "WIDTH_COLUMNS", "SETUP_COLUMNS"]

VERDICTS = ("same", "moved")
WIDTH_COLUMNS = ["key", "setup", "width", "x_a", "ci_a_low", "ci_a_high", "x_b", "ci_b_low", "ci_b_high",
                 "difference", "ci_low", "ci_high", "ci_kind", "moved", "loss_a", "loss_b", "loss_difference",
                 "loss_ci_low", "loss_ci_high"]
RUN_SPECIFIC = ("name", "model.width", "optimizer.lr", "train.threads", "train.device")
"""Config keys that differ between runs by design (a setup's config is stored at its first width and LR)."""
SETUP_COLUMNS = ["key", "setup", "verdict", "moved_widths", "largest_shift", "slope_a", "slope_a_low",
                 "slope_a_high", "verdict_a", "slope_b", "slope_b_low", "slope_b_high", "verdict_b", "only_a",
                 "only_b"]


def keyed_setups(summary: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """summary.json's entries as ``{searched key: {setup: entry}}`` (the learning rate under its own key)."""
    keyed = {LR_KEY: dict(summary.get("setups", {}))} if summary.get("setups") else {}
    for key, part in summary.get("keys", {}).items():
        keyed[key] = dict(part.get("setups", {}))
    return keyed


def _half_widths(entry: Mapping[str, Any]) -> tuple[float, float]:
    """Distances from x* to the interval's ends (inf for an open, censored end)."""
    x = entry["log2_lr_star"]
    lo, hi = entry.get("ci") or (None, None)
    below = x - lo if lo is not None and math.isfinite(lo) else math.inf
    above = hi - x if hi is not None and math.isfinite(hi) else math.inf
    return below, above


def _welch_ready(entry: Mapping[str, Any]) -> bool:
    return (entry.get("ci_kind") == "confidence" and entry.get("censored") is None and bool(entry.get("dof"))
            and entry.get("diverged_above") is None and entry.get("se") is not None)


def difference_interval(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[float, tuple[float, float], str]:
    """x_B − x_A, its 95 % interval and how it was formed (``welch``, ``combined``, or ``bound`` when an
    end is open). The Welch interval is the seeds' alone: the bowl's asymmetry biases two runs of the same
    setup alike, so its error (``shape_se``) is left out of their difference."""
    d = b["log2_lr_star"] - a["log2_lr_star"]
    if _welch_ready(a) and _welch_ready(b):
        va, vb = a["se"] ** 2, b["se"] ** 2
        dof = (va + vb) ** 2 / (va**2 / a["dof"] + vb**2 / b["dof"])
        half = t_quantile(0.975, dof) * math.sqrt(va + vb)
        return d, (d - half, d + half), "welch"
    a_below, a_above = _half_widths(a)
    b_below, b_above = _half_widths(b)
    lo, hi = d - math.hypot(b_below, a_above), d + math.hypot(b_above, a_below)
    return d, (lo, hi), "combined" if math.isfinite(lo) and math.isfinite(hi) else "bound"


def _seed_best(trials: pd.DataFrame) -> np.ndarray:
    ok = trials[trials["status"] == "ok"]
    return ok.groupby("seed")["val_loss"].min().to_numpy(dtype=float)


def loss_difference(loss_a: float, loss_b: float, seeds_a: np.ndarray,
                    seeds_b: np.ndarray) -> tuple[float, Optional[tuple[float, float]]]:
    """best loss B − A, with a Welch interval from each run's per-seed lowest losses (None with one seed)."""
    d = loss_b - loss_a
    if len(seeds_a) < 2 or len(seeds_b) < 2:
        return d, None
    va, vb = np.var(seeds_a, ddof=1) / len(seeds_a), np.var(seeds_b, ddof=1) / len(seeds_b)
    if va + vb == 0:
        return d, (d, d)
    dof = (va + vb) ** 2 / (va**2 / (len(seeds_a) - 1) + vb**2 / (len(seeds_b) - 1))
    half = t_quantile(0.975, dof) * math.sqrt(va + vb)
    return d, (d - half, d + half)


@dataclass(frozen=True)
class Comparison:
    """Run A against run B: one row per (key, setup, width) compared, one per (key, setup)."""

    run_a: str
    run_b: str
    widths: pd.DataFrame
    setups: pd.DataFrame

    @property
    def moved(self) -> bool:
        return bool((self.setups["verdict"] == "moved").any())

    def as_dict(self) -> dict[str, Any]:
        """compare.json: summary.json's layout (the learning rate under ``setups``, other keys under ``keys``)."""
        document: dict[str, Any] = {"mutransfer_compare": 1, "run_a": self.run_a, "run_b": self.run_b,
                                    "moved": self.moved, "setups": {}, "keys": {}}
        for row in self.setups.to_dict("records"):
            rows = self.widths[(self.widths["key"] == row["key"]) & (self.widths["setup"] == row["setup"])]
            entry = {k: _plain(v) for k, v in row.items() if k not in ("key", "setup")}
            entry["widths"] = {str(int(w["width"])): {k: _plain(v) for k, v in w.items()
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


def _slope(info: Mapping[str, Any]) -> tuple[float, float, float]:
    slope, ci = info.get("slope"), info.get("slope_ci") or (None, None)
    return tuple(math.nan if v is None else float(v) for v in (slope, *ci))  # type: ignore[return-value]


def compare(summary_a: Mapping[str, Any], summary_b: Mapping[str, Any], trials_a: pd.DataFrame,
            trials_b: pd.DataFrame, run_a: str = "A", run_b: str = "B") -> Comparison:
    """Every (key, setup) both summaries hold, compared width by width."""
    keyed_a, keyed_b = keyed_setups(summary_a), keyed_setups(summary_b)
    width_rows, setup_rows = [], []
    for key in keyed_a:
        for setup in (s for s in keyed_a[key] if s in keyed_b.get(key, {})):
            info_a, info_b = keyed_a[key][setup], keyed_b[key][setup]
            widths_a = {int(w): o for w, o in info_a.get("widths", {}).items() if o.get("log2_lr_star") is not None}
            widths_b = {int(w): o for w, o in info_b.get("widths", {}).items() if o.get("log2_lr_star") is not None}
            rows = []
            for width in sorted(set(widths_a) & set(widths_b)):
                a, b = widths_a[width], widths_b[width]
                d, (lo, hi), kind = difference_interval(a, b)
                pick = [(t["search_key"] == key) & (t["setup"] == setup) & (t["width"] == width)
                        for t in (trials_a, trials_b)]
                dl, loss_ci = loss_difference(a["best_loss"], b["best_loss"], _seed_best(trials_a[pick[0]]),
                                              _seed_best(trials_b[pick[1]]))
                rows.append({"key": key, "setup": setup, "width": width, "x_a": a["log2_lr_star"],
                             "ci_a_low": a["ci"][0], "ci_a_high": a["ci"][1], "x_b": b["log2_lr_star"],
                             "ci_b_low": b["ci"][0], "ci_b_high": b["ci"][1], "difference": d, "ci_low": lo,
                             "ci_high": hi, "ci_kind": kind, "moved": bool(lo > 0 or hi < 0),
                             "loss_a": a["best_loss"], "loss_b": b["best_loss"], "loss_difference": dl,
                             "loss_ci_low": loss_ci[0] if loss_ci else math.nan,
                             "loss_ci_high": loss_ci[1] if loss_ci else math.nan})
            moved = [r for r in rows if r["moved"]]
            slope_a, slope_b = _slope(info_a), _slope(info_b)
            setup_rows.append({
                "key": key, "setup": setup, "verdict": "moved" if moved else "same",
                "moved_widths": [r["width"] for r in moved],
                "largest_shift": max((r["difference"] for r in moved), key=abs) if moved else math.nan,
                "slope_a": slope_a[0], "slope_a_low": slope_a[1], "slope_a_high": slope_a[2],
                "verdict_a": info_a.get("verdict"), "slope_b": slope_b[0], "slope_b_low": slope_b[1],
                "slope_b_high": slope_b[2], "verdict_b": info_b.get("verdict"),
                "only_a": sorted(set(widths_a) - set(widths_b)), "only_b": sorted(set(widths_b) - set(widths_a))})
            width_rows.extend(rows)
    return Comparison(run_a, run_b, pd.DataFrame(width_rows, columns=WIDTH_COLUMNS),
                      pd.DataFrame(setup_rows, columns=SETUP_COLUMNS))


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        flat: dict[str, Any] = {}
        for k, v in tree.items():
            flat.update(_flat(v, f"{prefix}{k}."))
        return flat
    return {prefix[:-1]: tree}


def config_changes(record_a: Mapping[str, Any], record_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What differs between two sweeps' config.yaml records: each shared setup's resolved config and the spec's
    own keys (widths, seeds, overrides, …), as ``{"where", "key", "a", "b"}`` rows."""
    changes = []
    spec_a = {k: v for k, v in (record_a.get("spec") or {}).items() if k != "setups"}
    spec_b = {k: v for k, v in (record_b.get("spec") or {}).items() if k != "setups"}
    places = [("spec", _flat(spec_a), _flat(spec_b))]
    setups_a, setups_b = record_a.get("setups") or {}, record_b.get("setups") or {}
    places += [(label, _flat(setups_a[label]), _flat(setups_b[label])) for label in setups_a if label in setups_b]
    for where, flat_a, flat_b in places:
        for key in sorted(set(flat_a) | set(flat_b)):
            if key in RUN_SPECIFIC or flat_a.get(key) == flat_b.get(key):
                continue
            changes.append({"where": where, "key": key, "a": flat_a.get(key), "b": flat_b.get(key)})
    return changes
