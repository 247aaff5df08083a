"""Print one axis of a sweep as the Markdown table the docs show: per setup the optimum at each swept value
with its interval, the slope per doubling with its 95 % interval and verdict, the law's coefficient for the
axis, and the best loss at the largest value. Reads the run directory's trials.csv afresh.

    python scripts/axis_table.py runs/depth --axis depth
    python scripts/axis_table.py runs/horizon --axis steps
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mutransfer.analysis.summary import axis_entry, summarize_run
from mutransfer.schema import TRANSFER_AXES, axis_named


def _interval(values: list[float] | None) -> str:
    return f"[{values[0]:+.2f}, {values[1]:+.2f}]" if values else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--axis", choices=[a.name for a in TRANSFER_AXES], default="width")
    args = parser.parse_args()
    axis = axis_named(args.axis)
    summary = summarize_run(args.run_dir)
    values = sorted({int(v) for info in summary["setups"].values() for v in axis_entry(info, axis.name).get(
        axis.plural, {})})
    head = [f"log2 LR* at {v}" for v in values]
    print("| setup | " + " | ".join(head) + f" | slope per {axis.name} doubling, 95 % | verdict | law "
          f"{'β' if axis.name == 'steps' else 'slope'}, 95 % | best loss at {values[-1]} |")
    print("|---" * (len(head) + 5) + "|")
    for setup, info in summary["setups"].items():
        entry = axis_entry(info, axis.name)
        optima = entry.get(axis.plural, {})
        cells = []
        for v in values:
            opt = optima.get(str(v)) or {}
            x = opt.get("log2_lr_star")
            mark = {"low": " (≤)", "high": " (≥)"}.get(opt.get("censored") or "", "")
            cells.append(f"{x:.2f}{mark}" if x is not None else "–")
        slope = entry.get("slope")
        law = info.get("law") or {}
        if axis.name == "steps" and "beta" in law:
            fitted = f"{law['beta']:.2f} {_interval(law['beta_ci'])}"
        elif axis.name in law.get("coefficients", {}):
            fitted = f"{law['coefficients'][axis.name]:+.2f} {_interval(law['slope_ci'][axis.name])}"
        else:
            fitted = "–"
        best = (optima.get(str(values[-1])) or {}).get("best_loss")
        print(f"| `{setup}` | " + " | ".join(cells) +
              f" | {f'{slope:+.2f} ' if slope is not None else ''}{_interval(entry.get('slope_ci'))} | "
              f"{entry.get('verdict', '–')} | {fitted} | {f'{best:.3f}' if best is not None else '–'} |")


if __name__ == "__main__":
    main()
