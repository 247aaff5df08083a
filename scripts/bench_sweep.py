"""Wall time of a sweep and tokens/s per trial, measured on this machine.

    python scripts/bench_sweep.py [SPEC] [--out DIR] [--workers N]

Runs `mutransfer sweep SPEC` in a fresh directory, times it, and prints per (setup, width) the median
tokens/s per trial and the optimizer's share of step time, read from the sweep's trials.csv.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="default")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-sweep-")) / args.spec
    wall = run_cli("sweep", args.spec, "--out", str(out), "--workers", str(args.workers), hide_output=True)
    trials = pd.read_csv(out / "trials.csv")
    print(f"spec {args.spec}: {len(trials)} trials, {args.workers} worker(s), wall time {wall:.0f} s "
          f"({wall / 60:.1f} min), {wall / len(trials):.1f} s per trial")
    table = trials.groupby(["setup", "width"]).agg(trials=("trial", "count"), tokens_per_s=("tokens_per_s", "median"),
                                                   seconds=("seconds", "median"),
                                                   optimizer_fraction=("optimizer_fraction", "median"))
    print(table.round({"tokens_per_s": 0, "seconds": 2, "optimizer_fraction": 3}).to_string())
    print(f"run directory: {out}")


if __name__ == "__main__":
    main()
