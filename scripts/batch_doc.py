"""The batch study's tables and figures for docs/batch.md, from its kept run directory.

    python scripts/batch_doc.py [--run-dir docs/data/batch] [--figures docs]

Prints the study's Markdown tables:
1. The batch worth using per setup and token budget: best and critical batch with their 95 % intervals.
2. How η* moves with the batch at a fixed budget and with the budget (the law's slopes), beside the
   published rules, and the batch slope at each budget on its own.
3. The growth of the best and critical batch with the budget, B ∝ D^γ.
4. The gradient noise scale (``scripts/batch_noise.py``'s noise.csv) beside the critical batch.
5. ``verify`` at a batch and budget off the swept lines (verify.json): error and regret.

It also draws batch.png and batch_rules.png, small enough to commit.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mutransfer.analysis.cells import interval_cell
from mutransfer.analysis.batch import DEFAULT_BATCH_TOLERANCE
from mutransfer.analysis.batch_plot import batch_figure, batch_frame, batch_marks
from mutransfer.analysis.colors import ordered_colors
from mutransfer.analysis.plots import save
from mutransfer.analysis.result import Summary, measured_point
from mutransfer.analysis.run_files import read_tables, search_settings
from mutransfer.analysis.summary import summarize, summarize_run

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_numbers import kept_run_numbers, write_numbers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DPI = 70
RULES = {"√B (Malladi et al., Adam)": 0.5, "B (Goyal et al., SGD)": 1.0}
PUBLISHED_GAMMA = "0.4–0.6 (Li et al.: B* ∝ D^0.571)"


def worth_table(summary: Summary) -> list[str]:
    lines = ["| setup | tokens | best batch [95 %] | best loss | critical batch [95 %] | critical |",
             "|---|---|---|---|---|---|"]
    for setup, info in summary.setups().items():
        for tokens, entry in sorted((info.batch or {})["budgets"].items(), key=lambda kv: int(kv[0])):
            best, critical = entry["best"] or {}, entry["critical"] or {}
            bound = {"low": "≤ ", "high": "≥ "}.get(best.get("censored") or "", "")
            lines.append(f"| {setup} | {int(tokens):,} | {bound}{interval_cell(best.get('batch'), best.get('ci'), '.1f')} | "
                         f"{interval_cell(best.get('loss'), fmt='.4f')} | "
                         f"{'≥ ' if critical.get('status') == 'bound' else ''}"
                         f"{interval_cell(critical.get('batch'), critical.get('ci'), '.1f')} | "
                         f"{critical.get('status', '—')} |")
    return lines


def law_table(summary: Summary) -> list[str]:
    lines = ["| setup | batch slope s_B at a fixed budget [95 %] | " + " | ".join(f"rule {r}" for r in RULES) +
             " | budget slope s_D [95 %] | width slope [95 %] | lack of fit |", "|---|---|---|---|---|---|---|"]
    for setup, info in summary.setups().items():
        law = info.law
        slope, ci = (law.coefficients, law.slope_ci) if law is not None else ({}, {})
        fit = (law.lack_of_fit if law is not None else None) or {}
        lof = f"F = {fit['F']:.1f}, p = {fit['p']:.2g}" if fit else "—"
        lines.append(f"| {setup} | {interval_cell(slope.get('batch'), ci.get('batch'))} | " +
                     " | ".join(f"{r:+.1f}" for r in RULES.values()) +
                     f" | {interval_cell(slope.get('tokens'), ci.get('tokens'))} | {interval_cell(slope.get('width'), ci.get('width'))} "
                     f"| {lof} |")
    return lines


def budget_slopes_table(run_dir: Path) -> list[str]:
    """The batch slope at each budget on its own: the batch axis's line through each budget (the base width)."""
    trials, _ = read_tables(run_dir, all_axes=True)
    settings = search_settings(run_dir, trials)
    trials = trials[trials["width"] == trials["width"].min()]
    rows: dict[str, list[str]] = {}
    budgets = sorted(trials["tokens"].unique())
    for tokens in budgets:
        summary = summarize(trials[trials["tokens"] == tokens], settings)
        for setup, info in summary.setups().items():
            entry = info.judged("batch") if "batch" in info.axes else None
            rows.setdefault(setup, []).append(
                f"{interval_cell(entry.slope, entry.slope_ci)} ({entry.verdict})" if entry is not None else
                f"{interval_cell(None, None)} (—)")
    lines = ["| setup | " + " | ".join(f"s_B at {int(d):,} tokens [95 %]" for d in budgets) + " |",
             "|---|" + "---|" * len(budgets)]
    return lines + [f"| {setup} | " + " | ".join(cells) + " |" for setup, cells in rows.items()]


def growth_table(summary: Summary) -> list[str]:
    lines = ["| setup | γ of the best batch [95 %] | γ of the critical batch [95 %] | published |",
             "|---|---|---|---|"]
    for setup, info in summary.setups().items():
        growth = (info.batch or {}).get("growth") or {}
        cells = [interval_cell(g["gamma"], g["gamma_ci"]) if g else "not fitted: fewer than 3 budgets with a measured batch "
                 "(the others are bounds)"
                 for g in (growth.get("best"), growth.get("critical"))]
        lines.append(f"| {setup} | {cells[0]} | {cells[1]} | {PUBLISHED_GAMMA} |")
    return lines


def noise_table(run_dir: Path) -> list[str]:
    path = run_dir / "noise.csv"
    if not path.is_file():
        return []
    rows = pd.read_csv(path)
    lines = ["| setup | tokens | batch trained (log2 η) | B_simple (sequences) | critical batch [95 %] | best batch |",
             "|---|---|---|---|---|---|"]
    for row in rows.itertuples():
        critical = [None if pd.isna(v) else float(v) for v in (row.critical_low, row.critical_high)]
        lines.append(f"| {row.setup} | {int(row.tokens):,} | {int(row.batch)} ({row.log2_lr:+.2f}) | "
                     f"{row.noise_scale:.1f} | {interval_cell(row.critical_batch, critical, '.1f')} ({row.critical_status}) | "
                     f"{'≤ ' if row.best_censored == 'low' else '≥ ' if row.best_censored == 'high' else ''}"
                     f"{row.best_batch:.1f} |")
    return lines


def verify_table(run_dir: Path) -> list[str]:
    path = run_dir / "verify.json"
    if not path.is_file():
        return []
    report = json.loads(path.read_text())
    lines = ["| setup | target | predicted log2 η* [95 % range] | measured log2 η* [95 %] | error (octaves) | "
             "regret (nats) | covered |", "|---|---|---|---|---|---|---|"]
    for t in report["targets"]:
        p = t["prediction"]
        where = f"width {t['width']}, batch {p.get('batch')}, {p.get('tokens'):,} tokens"
        measured, regret = measured_point(t["width"], t.get("measured")), t.get("regret") or {}
        lines.append(f"| {t['setup']} | {where} | {interval_cell(p['log2_lr'], p['interval'])} | "
                     f"{interval_cell(measured.x_star, measured.ci) if measured else interval_cell(None, None)} | "
                     f"{interval_cell(t.get('error'), t.get('error_ci'))} | "
                     f"{interval_cell(regret.get('nats'), regret.get('nats_ci'), '+.4f')} "
                     f"| {'yes' if t.get('covered') else 'no'} |")
    return lines


def tables(run_dir: Path) -> str:
    summary = summarize_run(run_dir)
    parts = [worth_table(summary), law_table(summary), budget_slopes_table(run_dir), growth_table(summary),
             noise_table(run_dir), verify_table(run_dir)]
    return "\n\n".join("\n".join(p) for p in parts if p)


def rules_figure(summary: Summary) -> Any:
    """log2 η* against log2 batch per budget and setup, the law's fitted lines, and the √B and linear rules drawn
    through the law at the base budget's middle batch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    setups = list(summary.setups())
    fig, axes = plt.subplots(1, len(setups), figsize=(5.2 * len(setups), 3.8), squeeze=False, layout="constrained")
    for ax, setup in zip(axes[0], setups):
        info = summary.setups()[setup]
        batch = info.batch or {}
        budgets = sorted(batch["budgets"], key=int)
        colors = dict(zip(budgets, ordered_colors(len(budgets))))
        law = info.law
        coefficients = law.coefficients if law is not None else {}
        centre = law.centre if law is not None else {}
        xs = np.array([p["log2_batch"] for p in batch["budgets"][budgets[0]]["curve"]])
        for tokens in budgets:
            curve = [p for p in batch["budgets"][tokens]["curve"] if p["lr_censored"] is None]
            ax.plot([p["log2_batch"] for p in curve], [p["log2_lr_star"] for p in curve], "o", color=colors[tokens],
                    label=f"{int(tokens):,} tokens")
            if "batch" in coefficients:
                at = coefficients["intercept"] + coefficients["batch"] * xs + coefficients.get("tokens", 0.0) * \
                    math.log2(int(tokens)) + coefficients.get("width", 0.0) * centre.get("width", 0.0)
                ax.plot(xs, at, "-", color=colors[tokens], lw=1)
        if "batch" in coefficients:
            middle = float(np.median(xs))
            anchor = coefficients["intercept"] + coefficients["batch"] * middle + coefficients.get("tokens", 0.0) * \
                math.log2(int(budgets[0])) + coefficients.get("width", 0.0) * centre.get("width", 0.0)
            for (name, slope), style in zip(RULES.items(), ("--", ":")):
                ax.plot(xs, anchor + slope * (xs - middle), style, color="black", lw=1, label=f"rule {name}")
        ax.set_xticks(xs, [str(int(2**x)) for x in xs])
        ax.set_xlabel("batch size (sequences)")
        ax.set_ylabel("log2 η*")
        ax.set_title(f"{setup}: s_B = {coefficients.get('batch', math.nan):+.2f} per doubling", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, default=ROOT / "docs" / "data" / "batch")
    parser.add_argument("--figures", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    print(tables(args.run_dir))
    write_numbers("batch", "scripts/batch_doc.py", kept_run_numbers(args.run_dir))
    summary = summarize_run(args.run_dir)
    save(batch_figure(batch_frame(summary), batch_marks(summary), DEFAULT_BATCH_TOLERANCE), args.figures / "batch.png",
         dpi=DPI)
    save(rules_figure(summary), args.figures / "batch_rules.png", dpi=DPI)
    print(f"wrote {args.figures / 'batch.png'} and {args.figures / 'batch_rules.png'}")


if __name__ == "__main__":
    main()
