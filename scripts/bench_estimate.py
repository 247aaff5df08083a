"""The dry run's time estimate against the measured wall time of the same sweep, on this machine.

    python scripts/bench_estimate.py [SPEC ...] [--workers N] [--repeats R]

For each spec: R dry-run estimates (their spread), then `mutransfer sweep SPEC` in a fresh directory, timed
from the command's start to its exit. Prints the estimate, its range, the measured time, the ratio, and the
parts the estimate models (trials and their extension, training seconds from trials.csv, the rest). Run it on
an otherwise idle machine: a second busy process on two cores distorts both numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.commands.dry_run import estimate_sweep
from mutransfer.commands.workers import resolve_workers
from mutransfer.sweep.spec.sweep_spec import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=["smoke", "default", "horizon"])
    parser.add_argument("--workers", default="1")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    workers, threads = resolve_workers(args.workers, 0)
    assert workers is not None, "give --workers N"
    rows = []
    for name in args.specs:
        spec = load_spec(name)
        estimates = [estimate_sweep(SweepPlan.of(spec), workers, threads) for _ in range(args.repeats)]
        medians = [e.wall_seconds() for e in estimates]
        out = Path(tempfile.mkdtemp(prefix="bench-estimate-")) / name
        wall = run_cli("sweep", name, "--out", str(out), "--workers", str(workers), hide_output=True)
        trials = pd.read_csv(out / "trials.csv")
        estimate = estimates[len(estimates) // 2]
        rows.append({"spec": name, "estimate min": statistics.median(medians) / 60,
                     "estimates min": " / ".join(f"{m / 60:.1f}" for m in medians),
                     "range min": f"{estimate.wall_seconds('low') / 60:.1f}–{estimate.wall_seconds('high') / 60:.1f}",
                     "measured min": wall / 60, "estimate / measured": statistics.median(medians) / wall,
                     "trials est.": round(estimate.trials(), 1), "trials run": len(trials),
                     "training s": trials["seconds"].sum(), "other s": wall - trials["seconds"].sum()})
        print(pd.DataFrame(rows[-1:]).round(2).to_string(index=False), flush=True)
    print()
    print(pd.DataFrame(rows).round(2).to_string(index=False))


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
