"""Print one axis of a sweep as the Markdown table the docs show: per setup the optimum at each swept value
with its interval, the slope per doubling with its 95 % interval and verdict, the law's coefficient for the
axis, and the best loss at the largest value. Reads the run directory's trials.csv afresh. With ``--numbers
SECTION`` it also writes what the run cost (its trials and training seconds) to that section of
docs/data/numbers.yaml.

    python scripts/axis_table.py runs/depth --axis depth
    python scripts/axis_table.py docs/data/horizon --axis steps --numbers horizon
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from mutransfer.analysis.cells import format_interval
from mutransfer.analysis.summary import summarize_run
from mutransfer.schema import TRANSFER_AXES, axis_named

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_numbers import kept_run_numbers, write_numbers  # noqa: E402


def _interval(values: Optional[Sequence[float]]) -> str:
    """An interval as the docs' axis tables write it: ``–`` where there is none."""
    return format_interval(values, missing="–")


def table(run_dir: Path, axis_name: str = "width") -> str:
    """The Markdown table of one axis of the sweep in ``run_dir`` (tests/project/test_docs.py checks the pages' copies)."""
    axis = axis_named(axis_name)
    summary = summarize_run(run_dir)
    setups = summary.setups()
    values = sorted({v for info in setups.values() if axis.name in info.axes for v in info.axes[axis.name].points})
    head = [f"log2 LR* at {v}" for v in values]
    lines = ["| setup | " + " | ".join(head) + f" | slope per {axis.name} doubling, 95 % | verdict | law "
             f"{'β' if axis.name == 'steps' else 'slope'}, 95 % | best loss at {values[-1]} |",
             "|---" * (len(head) + 5) + "|"]
    for setup, info in setups.items():
        if axis.name not in info.axes:
            continue
        entry = info.judged(axis.name)
        cells = []
        for v in values:
            opt = entry.points.get(v)
            x = opt.x_star if opt is not None else None
            mark = {"low": " (≤)", "high": " (≥)"}.get((opt.censored if opt is not None else None) or "", "")
            cells.append(f"{x:.2f}{mark}" if x is not None else "–")
        law = info.law
        if axis.name == "steps" and law is not None and law.beta is not None:
            fitted = f"{law.beta:.2f} {_interval(law.beta_ci)}"
        elif law is not None and axis.name in law.coefficients:
            fitted = f"{law.coefficients[axis.name]:+.2f} {_interval(law.slope_ci[axis.name])}"
        else:
            fitted = "–"
        last = entry.points.get(values[-1])
        best = last.best_loss if last is not None else None
        lines.append(f"| `{setup}` | " + " | ".join(cells) +
                     f" | {f'{entry.slope:+.2f} ' if entry.slope is not None else ''}{_interval(entry.slope_ci)} | "
                     f"{entry.verdict or '–'} | {fitted} | {f'{best:.3f}' if best is not None else '–'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--axis", choices=[a.name for a in TRANSFER_AXES], default="width")
    parser.add_argument("--numbers", default=None, help="the section of docs/data/numbers.yaml to write the run's cost to")
    args = parser.parse_args()
    print(table(args.run_dir, args.axis))
    if args.numbers is not None:
        write_numbers(args.numbers, "scripts/axis_table.py", kept_run_numbers(args.run_dir))


if __name__ == "__main__":
    main()
