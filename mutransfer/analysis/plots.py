"""Figures from tidy tables only (trials.csv, curves.csv and the summary computed from them). No torch."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..files import atomic_path
from ..schema import LR_COLUMN, LR_KEY, axis_named
from .summary import axis_entry
from .fidelity import on_lattice

__all__ = ["transfer_figure", "drift_figure", "curves_figure", "verify_figure", "compare_figure", "save"]


PANELS_PER_ROW = 3
"""A figure with more panels than this wraps them into rows."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(widths: Sequence[int]) -> dict[int, Any]:
    cmap = _pyplot().get_cmap("viridis")
    ordered = sorted(widths)
    span = max(1, len(ordered) - 1)
    return {w: cmap(0.05 + 0.85 * i / span) for i, w in enumerate(ordered)}


def _panels(runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]]) -> list[tuple[str, str, pd.DataFrame, dict]]:
    panels = []
    for run, trials, summary in runs:
        lr = trials[trials["search_key"] == LR_KEY]
        for setup in lr["setup"].unique():
            title = f"{setup}" if len(runs) == 1 else f"{run}: {setup}"
            panels.append((title, setup, lr[lr["setup"] == setup], summary.get("setups", {}).get(setup, {})))
    return panels


def transfer_figure(runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], axis: str = "width") -> Any:
    """Loss vs log2(LR), one line per width (the seeds that trained the grid), the seeds' spread shaded where
    several trained a point (the noise probes), one panel per setup (and per run), shared y axis. With
    ``axis='depth'`` (or ``'steps'``) the tables' ``width`` column holds the depths (horizons), and each setup's
    ``axes.depth`` entry gives the optima."""
    plt = _pyplot()
    panels = _panels(runs)
    count = max(1, len(panels))
    rows_of = math.ceil(count / PANELS_PER_ROW)
    per_row = math.ceil(count / rows_of)
    fig, grid = plt.subplots(rows_of, per_row, figsize=(5.2 * per_row, 4.6 * rows_of), sharey=True, squeeze=False,
                             layout="constrained")
    axes = grid.reshape(1, -1)
    for spare in axes[0][len(panels):]:
        spare.set_visible(False)
    ok_all = pd.concat([p[2] for p in panels]) if panels else pd.DataFrame()
    ok_losses = ok_all[ok_all["status"] == "ok"]["val_loss"] if not ok_all.empty else pd.Series(dtype=float)
    top = float(np.nanmax(ok_losses)) if len(ok_losses) else 1.0
    bottom = float(np.nanmin(ok_losses)) if len(ok_losses) else 0.0
    pad = 0.08 * (top - bottom if top > bottom else 1.0)
    for ax, (title, setup, rows, whole) in zip(axes[0], panels):
        info = axis_entry(whole, axis)
        colors = _colors(rows["width"].unique())
        for width, part in rows.groupby("width"):
            ok = part[part["status"] == "ok"]
            line = _grid_curve(part)
            color = colors[int(width)]
            ax.plot(line[LR_COLUMN], line["val_loss"], "-o", color=color, ms=3.5, lw=1.5, label=f"{axis} {width}")
            if ok["seed"].nunique() > 1:
                spread = ok.groupby(LR_COLUMN)["val_loss"].agg(["min", "max", "count"]).reset_index()
                spread = spread[spread["count"] > 1]
                ax.fill_between(spread[LR_COLUMN], spread["min"], spread["max"], color=color, alpha=0.25, lw=0)
            div = part[part["status"] == "diverged"][LR_COLUMN].unique()
            if len(div):
                ax.plot(div, np.full(len(div), top + 0.6 * pad), "x", color=color, ms=7, mew=2, clip_on=False)
            opt = info.get(axis_named(axis).plural, {}).get(str(int(width)))
            if opt and opt.get("log2_lr_star") is not None:
                _optimum_marker(ax, opt, opt["best_loss"] - 0.3 * pad, color)
        verdict = info.get("verdict", "")
        slope = info.get("slope")
        extra = f"\n{verdict}: LR* {slope:+.2f} octaves / {axis} doubling" if slope is not None else f"\n{verdict}"
        _label(ax, f"{title}{extra}", "log2(base learning rate η)", title_size=10, legend_loc="upper left")
    for row in grid:
        row[0].set_ylabel("validation loss (nats/token)")
    axes[0][0].set_ylim(bottom - pad, top + pad)
    fig.suptitle(f"Loss vs learning rate per {axis}\n▼ LR* with interval · ◀ ▶ past the grid's edge · × diverged",
                 fontsize=10)
    return fig


def _interval_bars(opt: dict[str, Any]) -> tuple[float, float]:
    """The distances from LR* to its interval's ends (0 on a censored, open side)."""
    lo, hi = opt["ci"] if opt.get("ci") else (None, None)
    x = opt["log2_lr_star"]
    below = x - lo if lo is not None and np.isfinite(lo) else 0.0
    above = hi - x if hi is not None and np.isfinite(hi) else 0.0
    return below, above


def _optimum_marker(ax: Any, opt: dict[str, Any], y: float, color: Any) -> None:
    """▼ with its interval for a measured optimum; ◀ or ▶ for one censored at the grid's low or high edge."""
    marker = {"low": "<", "high": ">"}.get(opt.get("censored") or "", "v")
    below, above = _interval_bars(opt)
    ax.errorbar([opt["log2_lr_star"]], [y], xerr=[[below], [above]], fmt=marker, color=color, ms=7, capsize=3,
                lw=1.2)


def drift_figure(runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], axes: Sequence[str] = ("width",)) -> Any:
    """log2(LR*) vs log2(width) with intervals and the fitted line, one series per setup; one panel per axis
    in ``axes`` (a setup's depth and steps entries are its summary's ``axes.depth`` and ``axes.steps``)."""
    plt = _pyplot()
    fig, panels = plt.subplots(1, len(axes), figsize=(7.0 * len(axes), 4.6), layout="constrained", squeeze=False)
    for ax, axis in zip(panels[0], axes):
        _drift_panel(ax, runs, axis)
    return fig


def _drift_panel(ax: Any, runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]], axis: str) -> None:
    plural = axis_named(axis).plural
    cmap = _pyplot().get_cmap("tab10")
    index = 0
    for run, _, summary in runs:
        for setup, whole in summary.get("setups", {}).items():
            info = axis_entry(whole, axis)
            points = info.get(plural, {})
            widths = sorted(int(w) for w, o in points.items() if o.get("log2_lr_star") is not None)
            if not widths:
                continue
            label = setup if len(runs) == 1 else f"{run}: {setup}"
            color = cmap(index % 10)
            index += 1
            slope = info.get("slope")
            if slope is not None:
                lo, hi = info["slope_ci"]
                label += f" (slope {slope:+.2f} [{lo:+.2f}, {hi:+.2f}], {info['verdict']})"
                if axis == "steps":
                    label += f", β = {-slope:.2f}"
                x = np.log2(widths)
                ax.plot(x, info["intercept"] + slope * x, "--", color=color, lw=1)
            else:
                label += f" ({info.get('verdict', 'inconclusive')})"
            for i, width in enumerate(widths):
                opt = points[str(width)]
                below, above = _interval_bars(opt)
                marker = {"low": "v", "high": "^"}.get(opt.get("censored") or "", "o")
                ax.errorbar([np.log2(width)], [opt["log2_lr_star"]], yerr=[[below], [above]], fmt=marker, color=color,
                            capsize=3, label=label if i == 0 else None)
    all_widths = sorted({int(w) for _, _, summary in runs for info in summary.get("setups", {}).values()
                         for w in axis_entry(info, axis).get(plural, {})})
    if all_widths:
        ax.set_xticks(np.log2(all_widths), [str(w) for w in all_widths])
    _label(ax, f"Optimal learning rate vs {axis}  (▼ ▲ past the grid's edge)", f"{axis} (log2 axis)",
           "log2(LR*)  (base learning rate η)")


def _label(ax: Any, title: str, xlabel: str, ylabel: str | None = None, title_size: float | None = None,
           legend_loc: str = "best") -> None:
    """Title, axis labels, a light grid and a small legend: the finish every figure's panels share."""
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc=legend_loc)


def curves_figure(trials: pd.DataFrame, curves: pd.DataFrame, summary: dict[str, Any]) -> Any:
    """Training loss curves at each width's best learning rate, one panel per setup."""
    plt = _pyplot()
    lr = trials[(trials["search_key"] == LR_KEY) & (trials["status"] == "ok")]
    setups = list(lr["setup"].unique())
    fig, axes = plt.subplots(1, max(1, len(setups)), figsize=(5.2 * max(1, len(setups)), 4.2), sharey=True,
                             squeeze=False, layout="constrained")
    for ax, setup in zip(axes[0], setups):
        rows = lr[lr["setup"] == setup]
        colors = _colors(rows["width"].unique())
        for width, part in rows.groupby("width"):
            best = part.loc[part["val_loss"].idxmin()]
            curve = curves[(curves["trial"] == best["trial"]) & (curves["setup"] == setup) &
                           (curves["width"] == width) & (curves["seed"] == best["seed"]) &
                           (curves["search_key"] == LR_KEY)]
            ax.plot(curve["step"], curve["train_loss"], color=colors[int(width)], lw=1.2,
                    label=f"width {width}, log2 η={best[LR_COLUMN]:.2f}")
        _label(ax, f"{setup}: training loss at each width's best LR", "step", title_size=10)
    axes[0][0].set_ylabel("training loss (nats/token)")
    return fig


def _grid_curve(rows: pd.DataFrame, x: str = LR_COLUMN, y: str = "val_loss") -> pd.DataFrame:
    """Mean ok loss per searched value over the seeds that trained the most points (the grid seeds)."""
    ok = rows[rows["status"] == "ok"]
    points = ok.groupby("seed")[x].nunique()
    grid = ok[ok["seed"].isin(points[points == points.max()].index)]
    return grid.groupby(x)[y].mean().reset_index()


def verify_figure(swept: pd.DataFrame, rows: pd.DataFrame, report: dict[str, Any]) -> Any:
    """Loss vs log2 η at each verified width — the prediction as a band (its 95 % range) and a dashed line,
    the measured optimum as ★ with its interval — over the swept widths' curves, faded; one panel per setup."""
    plt = _pyplot()
    targets = report["targets"]
    setups = list(dict.fromkeys(t["setup"] for t in targets))
    fig, axes = plt.subplots(1, max(1, len(setups)), figsize=(6.4 * max(1, len(setups)), 4.8), squeeze=False,
                             layout="constrained")
    warm = plt.get_cmap("autumn")
    widths = sorted({t["width"] for t in targets})
    colors = {w: warm(0.75 * i / max(1, len(widths) - 1)) for i, w in enumerate(widths)}
    for ax, setup in zip(axes[0], setups):
        behind = swept[(swept["setup"] == setup) & (swept["search_key"] == LR_KEY)]
        faded = _colors(behind["width"].unique())
        for width, part in behind.groupby("width"):
            line = _grid_curve(part)
            ax.plot(line[LR_COLUMN], line["val_loss"], "-", color=faded[int(width)], alpha=0.35, lw=1.2,
                    label=f"swept width {width}")
        mine = rows[rows["setup"] == setup]
        for t in (t for t in targets if t["setup"] == setup):
            _verified_width(ax, mine[mine["width"] == t["width"]], t, colors[t["width"]], report["step"])
        _zoom(ax, mine, behind)
        mine_targets = [t for t in targets if t["setup"] == setup]
        point = "".join(f", {name} {mine_targets[0]['prediction'][name]}" for name in ("depth", "steps")
                        if mine_targets and mine_targets[0]["prediction"].get(name) is not None)
        _label(ax, f"{setup}: verified at width {', '.join(str(t['width']) for t in mine_targets)}{point}",
               "log2(base learning rate η)", title_size=10, legend_loc="upper left")
    axes[0][0].set_ylabel("validation loss (nats/token)")
    fig.suptitle("Verification at the target width\nband: predicted 95 % range · dashed: predicted η* · "
                 "★ measured optimum", fontsize=10)
    return fig


def _zoom(ax: Any, rows: pd.DataFrame, behind: pd.DataFrame) -> None:
    """The verified points' range of η, one octave more each side; their losses and the swept curves' lowest
    point in that range (the swept curves' high ends clipped)."""
    ok = rows[rows["status"] == "ok"]
    if ok.empty:
        return
    left, right = float(rows[LR_COLUMN].min()) - 1.0, float(rows[LR_COLUMN].max()) + 1.0
    ax.set_xlim(left, right)
    seen = behind[(behind["status"] == "ok") & behind[LR_COLUMN].between(left, right)]["val_loss"]
    low, high = min(float(ok["val_loss"].min()), float(seen.min()) if len(seen) else np.inf), float(ok["val_loss"].max())
    pad = 0.15 * (high - low if high > low else 1.0)
    ax.set_ylim(low - pad, high + pad)


def _verified_width(ax: Any, rows: pd.DataFrame, target: dict[str, Any], color: Any, step: float) -> None:
    """The grid's curve (points on the lattice of ``step``), every trained point as a dot, the prediction and
    the measured optimum."""
    width, prediction = target["width"], target["prediction"]
    ok = rows[rows["status"] == "ok"]
    line = _grid_curve(rows[on_lattice(rows[LR_COLUMN].to_numpy(float), step)])
    ax.plot(line[LR_COLUMN], line["val_loss"], "-o", color=color, ms=3.5, lw=1.8, label=f"width {width}")
    ax.plot(ok[LR_COLUMN], ok["val_loss"], ".", color=color, ms=3, alpha=0.6)
    if prediction.get("interval"):
        ax.axvspan(*prediction["interval"], color=color, alpha=0.12, lw=0)
    ax.axvline(target.get("predicted_log2_lr", prediction["log2_lr"]), color=color, ls="--", lw=1)
    measured = target.get("measured")
    if measured and measured.get("log2_lr_star") is not None:
        below, above = _interval_bars(measured)
        y = measured["best_loss"]
        ax.errorbar([measured["log2_lr_star"]], [y], xerr=[[below], [above]], fmt="*", color=color, ms=12,
                    mec="black", mew=0.6, capsize=3, lw=1.2,
                    label=f"error {target['error']:+.2f} octaves" if target.get("error") is not None else None)


def compare_figure(points_a: pd.DataFrame, points_b: pd.DataFrame, widths: pd.DataFrame, setups: pd.DataFrame,
                   names: tuple[str, str], tolerance: float) -> Any:
    """Run A against run B, one column per compared (key, setup). Top: loss vs the searched value per width,
    A solid and B dashed in the width's colour, each optimum marked at its best loss. Bottom: x*_B − x*_A per
    width with its 95 % interval, red where it moved (Holm), the pooled shift with its 95 % interval and the
    ±``tolerance`` band. ``points_*``: key, setup, width, seed, x, loss, status."""
    plt = _pyplot()
    columns = list(setups[["key", "setup"]].itertuples(index=False, name=None))
    fig, axes = plt.subplots(2, max(1, len(columns)), figsize=(5.6 * max(1, len(columns)), 7.6), squeeze=False,
                             layout="constrained", height_ratios=[3, 2])
    for c, (key, setup) in enumerate(columns):
        top, bottom = axes[0][c], axes[1][c]
        rows = widths[(widths["key"] == key) & (widths["setup"] == setup)]
        parts = [p[(p["key"] == key) & (p["setup"] == setup) & p["width"].isin(rows["width"])]
                 for p in (points_a, points_b)]
        colors = _colors(rows["width"].unique())
        for part, style, name, side in zip(parts, ("-", "--"), names, ("a", "b")):
            for width, one in part.groupby("width"):
                line = _grid_curve(one, "x", "loss")
                color = colors[int(width)]
                top.plot(line["x"], line["loss"], style, marker="o" if side == "a" else "s", ms=3.5, lw=1.5,
                         color=color, mfc=color if side == "a" else "white", label=f"{name} · width {width}")
                row = rows[rows["width"] == width].iloc[0]
                opt = {"log2_lr_star": row[f"x_{side}"], "ci": (row[f"ci_{side}_low"], row[f"ci_{side}_high"])}
                below, above = _interval_bars(opt)
                top.errorbar([opt["log2_lr_star"]], [row[f"loss_{side}"]], xerr=[[below], [above]],
                             fmt="v" if side == "a" else "^", color=color, mfc=color if side == "a" else "white",
                             ms=7, capsize=3, lw=1.0)
        summary = setups[(setups["key"] == key) & (setups["setup"] == setup)].iloc[0]
        label = "log2(base learning rate η)" if key == LR_KEY else key
        _label(top, f"{setup}: {summary['verdict']}", label, title_size=10, legend_loc="upper left")
        x = np.log2(rows["width"].to_numpy(float))
        span = (x.min() - 0.5, x.max() + 0.5)
        bottom.axhspan(-tolerance, tolerance, color="0.9", zorder=0, label=f"±{tolerance:g} (same)")
        if summary["shift"] == summary["shift"]:
            bottom.fill_between(span, summary["shift_ci_low"], summary["shift_ci_high"], color="tab:purple",
                                alpha=0.15, lw=0)
            bottom.axhline(summary["shift"], color="tab:purple", lw=1.2,
                           label=f"pooled shift {summary['shift']:+.2f} "
                                 f"[{summary['shift_ci_low']:+.2f}, {summary['shift_ci_high']:+.2f}]")
        moved = rows["moved"].to_numpy(bool)
        below = np.where(np.isfinite(rows["ci_low"]), rows["difference"] - rows["ci_low"], 0.0)
        above = np.where(np.isfinite(rows["ci_high"]), rows["ci_high"] - rows["difference"], 0.0)
        for mask, color, text in ((~moved, "tab:blue", "width: not moved (Holm)"), (moved, "tab:red",
                                                                                  "width: moved (Holm)")):
            if mask.any():
                bottom.errorbar(x[mask], rows["difference"].to_numpy(float)[mask],
                                yerr=[below[mask], above[mask]], fmt="o", color=color, capsize=4, label=text)
        bottom.axhline(0.0, color="black", lw=0.8)
        bottom.set_xticks(x, [str(int(w)) for w in rows["width"]])
        bottom.set_xlim(*span)
        _label(bottom, f"{names[1]} − {names[0]} (octaves), 95 % intervals", "width (log2 axis)", title_size=10)
    axes[0][0].set_ylabel("validation loss (nats/token)")
    axes[1][0].set_ylabel("Δ log2 optimum")
    fig.suptitle(f"Did the optimum move?  {names[0]} (solid, ▼) vs {names[1]} (dashed, △)", fontsize=11)
    return fig


def save(fig: Any, path: Path, dpi: int = 120) -> None:
    """Write atomically (temp file + rename) and close the figure, also when writing fails."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    finally:
        _pyplot().close(fig)


def coord_check_figure(table: pd.DataFrame, slopes: pd.DataFrame, steps: Sequence[int], axis: str = "width") -> Any:
    """One panel per (quantity, step): value vs width (or depth) on log axes, one line per module, with the
    slope each quantity needs drawn as a dashed guide through the median module."""
    plt = _pyplot()
    quantities = [q for q in ("forward", "update", "dependency", "weight_update") if q in set(table["quantity"])]
    fig, axes = plt.subplots(len(quantities), len(steps), figsize=(4.6 * len(steps), 3.3 * len(quantities)),
                             squeeze=False, layout="constrained")
    cmap = plt.get_cmap("tab20")
    modules = list(dict.fromkeys(table["module"]))
    colors = {m: cmap(i % 20) for i, m in enumerate(modules)}
    for r, quantity in enumerate(quantities):
        for c, step in enumerate(steps):
            ax = axes[r][c]
            part = table[(table["quantity"] == quantity) & (table["step"] == step)]
            if part.empty:
                ax.set_visible(False)
                continue
            means = part.groupby(["module", axis], sort=False)["value"].mean().reset_index()
            for module, rows in means.groupby("module", sort=False):
                ax.plot(rows[axis], rows["value"], "-o", ms=3, lw=1.2, color=colors[module],
                        label=module if quantity != "weight_update" else module.replace(".weight", ""))
            widths = np.array(sorted(part[axis].unique()), dtype=float)
            guide_slope = 0.0
            anchor = float(np.median(means[means[axis] == widths[0]]["value"]))
            ax.plot(widths, anchor * (widths / widths[0]) ** guide_slope, "k--", lw=1, alpha=0.6)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
            ax.set_title(f"{quantity} · step {step}", fontsize=10)
            ax.set_xlabel(axis)
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel({"forward": "RMS of output", "update": "RMS of change since step 0",
                               "dependency": "RMS Δout / RMS Δin", "weight_update": "‖ΔW‖₂ / ‖W₀‖₂"}[quantity])
            if c == len(steps) - 1:
                ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"Coordinate check (dashed: the {axis}-independent slope a stable quantity needs)", fontsize=11)
    return fig
