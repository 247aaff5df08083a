"""Wall time of a sweep and tokens/s per trial, measured on this machine.

    python scripts/bench_sweep.py [SPEC] [--out DIR] [--workers N] [--record CSV --run TEXT]
    python scripts/bench_sweep.py --table docs/data/default/wall_times.csv

Runs `mutransfer sweep SPEC` in a fresh directory, times it, and prints per (setup, width) the median
tokens/s per trial and the optimizer's share of step time, read from the sweep's trials.csv. ``--record`` adds the
run's wall time to a kept table of wall times (``--run`` says which run it was: the machine, what else ran);
``--table`` prints that table for docs/performance.md and writes the ``default_sweep`` section of
docs/data/numbers.yaml: its trials and the range of its wall times.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402
from doc_numbers import duration_text, write_numbers  # noqa: E402

WALL_COLUMNS = ["run", "spec", "workers", "trials", "seconds"]


def wall_table(walls: pd.DataFrame) -> str:
    """The kept wall times as docs/performance.md shows them."""
    out = ["| run | trials | wall time |", "|---|---:|---:|"]
    for row in walls.itertuples():
        minutes, seconds = divmod(int(round(row.seconds)), 60)
        out.append(f"| {row.run} | {row.trials} | {minutes} min {seconds:02d} s |")
    return "\n".join(out)


def wall_numbers(walls: pd.DataFrame) -> dict[str, str]:
    """The default sweep's trials (each kept run's; they must agree) and the range of its wall times."""
    trials = set(walls["trials"])
    if len(trials) != 1:
        raise SystemExit(f"the kept runs have {sorted(trials)} trials: a changed spec starts a new table")
    low, high = duration_text(walls["seconds"].min()), duration_text(walls["seconds"].max())
    return {"trials": f"{trials.pop()} trials", "wall_range": f"{low.split()[0]}–{high}"}


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="default")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--record", type=Path, default=None, help="a kept CSV of wall times this run joins")
    parser.add_argument("--run", default=None, help="with --record: which run this was, as the table says it")
    parser.add_argument("--table", type=Path, default=None, help="print a kept CSV's table, write its numbers, stop")
    args = parser.parse_args(argv)
    if args.table is not None:
        walls = pd.read_csv(args.table)
        print(wall_table(walls))
        write_numbers("default_sweep", "scripts/bench_sweep.py", wall_numbers(walls))
        return
    if args.record is not None and not args.run:
        raise SystemExit("--record needs --run TEXT: which run this was (the machine, what else ran)")
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
    if args.record is not None:
        kept = pd.read_csv(args.record) if args.record.exists() else pd.DataFrame(columns=WALL_COLUMNS)
        row = pd.DataFrame([[args.run, args.spec, args.workers, len(trials), round(wall)]], columns=WALL_COLUMNS)
        pd.concat([kept, row]).to_csv(args.record, index=False)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
