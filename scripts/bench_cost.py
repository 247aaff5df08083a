"""What a sweep's answer cost and how precise it is: precision per training second, per setup.

    python scripts/bench_cost.py SPEC [--run DIR] [--target 4096] [--workers 1]

Without ``--run`` it runs ``mutransfer sweep SPEC`` in a fresh directory first (and prints its wall time); with it,
it reads that finished sweep's (or a kept table's) trials.csv. Per setup it prints the trials and the training
seconds spent (the trials' step time summed from trials.csv) and what they bought: per swept axis the slope's
95 % interval and its half-width, the median half-width of the per-point intervals along that axis, the half-width
of the range ``transfer`` gives at width ``--target`` where a width axis exists, and the precision per training
second, 1 / (slope half-width² · seconds), in 1/(octave² · 1000 s). The analysis is the one ``mutransfer export``
writes (``summarize_run``).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from mutransfer.analysis.cells import interval_cell
from mutransfer.analysis.prediction import predict_setup
from mutransfer.analysis.result import AxisFit, SetupResult
from mutransfer.analysis.run_files import read_tables
from mutransfer.analysis.summary import summarize_run
from mutransfer.analysis.trial_table import swept_axes

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402

COLUMNS = ("setup", "trials", "training s", "axis", "slope [95 %]", "half-width", "point half-width (median)",
           "range half-width at target", "precision per 1000 s")


def run_sweep(spec: str, workers: int) -> tuple[Path, float]:
    """Runs the sweep in a fresh directory; its directory and wall seconds."""
    out = Path(tempfile.mkdtemp(prefix="bench-cost-")) / spec
    return out, run_cli("sweep", spec, "--out", str(out), "--workers", str(workers), hide_output=True)


def half(interval: Optional[Sequence[float]]) -> Optional[float]:
    return None if not interval else (interval[1] - interval[0]) / 2


def point_half_width(entry: AxisFit) -> Optional[float]:
    """The median half-width of the measured points' 95 % intervals along one line."""
    halves = [half(p.ci) for p in entry.measured().values() if p.ci]
    return float(pd.Series(halves).median()) if halves else None


def target_half_width(info: SetupResult, base: Mapping[str, int], target: int) -> Optional[float]:
    """The half-width of the range ``transfer`` gives at width ``target`` (at the base of the other axes), drift
    corrected unless the width verdict is ``transfers``; None without a width axis."""
    return predict_setup(info, {**base, "width": target}, info.verdict != "transfers", 1.0).half_width


def cost_rows(run_dir: Path, target: int) -> list[dict[str, Any]]:
    """One row per (setup, swept axis) of the cost table."""
    trials, _ = read_tables(run_dir, all_axes=True)
    summary = summarize_run(run_dir)
    axes = [a for a in swept_axes(trials) if trials[a.column].nunique() > 1]
    base = {a.name: int(trials[a.column].min()) for a in axes}
    rows = []
    for label, info in summary.setups().items():
        own = trials[trials["setup"] == label]
        seconds = float(own["seconds"].sum())
        at_target = target_half_width(info, base, target) if "width" in base else None
        for axis in axes:
            entry = info.judged(axis.name)
            width = half(entry.slope_ci)
            rows.append({"setup": label, "trials": len(own), "training s": round(seconds), "axis": axis.name,
                         "slope [95 %]": _interval(entry.slope, entry.slope_ci),
                         "half-width": _round(width),
                         "point half-width (median)": _round(point_half_width(entry)),
                         "range half-width at target": _round(at_target) if axis.name == "width" else "",
                         "precision per 1000 s": _round(1000.0 / (width**2 * seconds), 1) if width else ""})
    return rows


def _round(value: Optional[float], digits: int = 2) -> Any:
    return "" if value is None or not math.isfinite(value) else round(value, digits)


def _interval(slope: Optional[float], ci: Optional[Sequence[float]]) -> str:
    """The slope and its interval, blank without either."""
    return "" if slope is None or not ci else interval_cell(slope, ci, carried=False)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    return "\n".join(lines + ["| " + " | ".join(str(row[c]) for c in COLUMNS) + " |" for row in rows])


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="the sweep spec (a name under sweeps/ or a path)")
    parser.add_argument("--run", type=Path, default=None, help="a finished sweep's directory (default: run one)")
    parser.add_argument("--target", type=int, default=4096, help="the width whose predicted range is reported")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    run_dir = args.run
    if run_dir is None:
        run_dir, wall = run_sweep(args.spec, args.workers)
        print(f"spec {args.spec}: wall time {wall:.0f} s ({wall / 60:.1f} min), run directory {run_dir}")
    rows = cost_rows(run_dir, args.target)
    setups = {row["setup"]: row for row in rows}.values()
    print(f"spec {args.spec}: {sum(r['trials'] for r in setups)} trials, "
          f"{sum(r['training s'] for r in setups)} training s, target width {args.target}")
    print(markdown(rows).replace("range half-width at target", f"range half-width at {args.target}"))


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
