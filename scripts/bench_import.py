"""How long ``mutransfer import`` takes, and how much memory, on tables of finished runs of growing size: each
table has 4 setups (optimizers), each a grid of model sizes × token budgets × batch sizes with one run per (point,
LR) at 10 LRs √2 apart, simulated on the real-curve simulator (``simulation.tables``). Each import runs as its own
process (read, convert, analyse, summary.json and every figure), timed from outside; its peak resident memory is
the child's ``ru_maxrss``.

    python scripts/bench_import.py                  # 12,500 to 100,000 rows
    python scripts/bench_import.py --rows 100000    # one size

Run it on an otherwise idle machine; it prints one row per size and the cost per 1,000 rows."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.tables import TableDesign, simulate_table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

SETUPS = ("adamw", "muon", "sgd", "lion")
LRS = 10
BATCHES = (64, 128, 256, 512, 1024)


def table_of(rows: int, seed: int = 0) -> pd.DataFrame:
    """At least ``rows`` rows: 4 setups × sizes × budgets × 5 batches × 10 LRs, sizes and budgets grown together."""
    points = rows // (len(SETUPS) * LRS * len(BATCHES))
    sizes = max(2, int(round(np.sqrt(points))))
    budgets = max(2, -(-points // sizes))
    design = TableDesign(params=tuple(2e7 * 1.5**i for i in range(sizes)),
                         tokens=tuple(1e9 * 1.5**i for i in range(budgets)), batches=BATCHES, lrs=LRS)
    rng = np.random.default_rng(seed)
    parts = [simulate_table(real_truth(diverge_after=2.5), design, rng).table.assign(optimizer=name)
             for name in SETUPS]
    return pd.concat(parts, ignore_index=True)


def import_once(path: Path, out: Path) -> tuple[float, float]:
    """(seconds, peak MiB) of one ``mutransfer import`` of ``path`` in a child process."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mutransfer", "import", str(path), "--lr", "lr", "--loss", "val/loss",
                    "--setup", "optimizer", "--axis", "params=n_params", "--axis", "tokens", "--axis", "batch=bs",
                    "--diverged-above", "10", "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="table sizes (default 12,500 to 100,000)")
    args = parser.parse_args(argv)
    sizes = args.rows or [12_500, 25_000, 50_000, 100_000]
    print(f"{'rows':>8} {'points':>7} {'seconds':>8} {'s per 1,000 rows':>17} {'peak MiB':>9}   (cpus {os.cpu_count()})")
    with tempfile.TemporaryDirectory() as folder:
        for rows in sizes:
            table = table_of(rows)
            path = Path(folder) / f"runs_{rows}.csv"
            table.to_csv(path, index=False)
            seconds, peak = import_once(path, Path(folder) / f"imported_{rows}")
            points = table.groupby(["optimizer", "n_params", "tokens", "bs"]).ngroups
            print(f"{len(table):8d} {points:7d} {seconds:8.1f} {1000 * seconds / len(table):17.3f} {peak:9.0f}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
