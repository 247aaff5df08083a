"""Stopping when decided against the fixed design: simulated default sweeps (four widths 32–256, a 5-point
1-octave grid that extends past an edge, one noise seed) on the real-curve simulator, each judged by the fixed
design and by the group-sequential rule (``stop: true``: a look after widths 32–128, O'Brien–Fleming spending)
on the same trials. Per cell: each verdict's rate under both designs, the rate of the wrong verdict (``drifts``
when |slope| < 0.25, ``transfers`` when |slope| > 0.25) with its Monte-Carlo standard error, how often the
sweep stopped early, and the trials and training seconds it saved (each width's trial seconds: the mean of the
kept default sweep's, docs/data/readme/trials.csv).

    python scripts/sequential_rates.py --sims 2000 --out docs/data/sequential/rates.csv
    python scripts/sequential_rates.py --doc docs/data/sequential

runs the cells on two processes and writes the table; ``--doc`` prints docs/sweeps.md's table from the kept one."""

from __future__ import annotations

import argparse
import math
import multiprocessing
from pathlib import Path

import numpy as np
import pandas as pd

from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.sequential import simulate_sequential
from mutransfer.simulation.simulate import Design

SLOPES = (0.0, 0.1, -0.1, 0.35, -0.35, -1.0)
BOWLS = {"muon": (-6.0, -2.0), "adamw": (-11.0, -7.0)}
"""Each calibrated bowl with the default spec's grid for its setup (μP + Muon's, SP + AdamW's)."""
CORRELATIONS = (0.0, 0.5)
KEPT_RUN = Path("docs/data/readme/trials.csv")


def trial_seconds() -> dict[int, float]:
    trials = pd.read_csv(KEPT_RUN)
    return {int(w): float(s) for w, s in trials.groupby("width")["seconds"].mean().items()}


def cell(args: tuple[str, float, float, int, int]) -> dict[str, object]:
    bowl, slope, rho, sims, seed = args
    low, high = BOWLS[bowl]
    design = Design(low=low, high=high, noise_seeds=1)
    truth = real_truth(bowl, slope=slope, x0=(low + high) / 2, seed_correlation=rho)
    rng = np.random.default_rng(seed)
    seconds = trial_seconds()
    outs = [simulate_sequential(truth, design, rng) for _ in range(sims)]
    wrong = "transfers" if abs(slope) > 0.25 else "drifts"
    row: dict[str, object] = {"bowl": bowl, "slope": slope, "seed_correlation": rho, "sims": sims}
    for name in ("fixed", "sequential"):
        verdicts = [getattr(o, name) for o in outs]
        for verdict in ("transfers", "drifts", "inconclusive"):
            row[f"{name}_{verdict}"] = verdicts.count(verdict) / sims
        rate = verdicts.count(wrong) / sims
        row[f"{name}_wrong"] = rate
        row[f"{name}_wrong_se"] = math.sqrt(max(rate * (1 - rate), 1 / sims) / sims)
    row["stopped_early"] = sum(o.stopped_at is not None for o in outs) / sims
    row["trials_saved"] = 1 - sum(o.sequential_trials for o in outs) / sum(o.fixed_trials for o in outs)
    fixed, sequential = (sum(part) for part in zip(*(o.seconds(seconds) for o in outs)))
    row["seconds_saved"] = 1 - sequential / fixed
    return row


BOWL_NAMES = {"muon": "μP + Muon", "adamw": "AdamW"}


def tables(folder: Path) -> str:
    """docs/sweeps.md's table from the kept ``rates.csv``: per cell the wrong verdict's rate under each design
    (± its Monte-Carlo standard error), how often the sweep stopped early, and the trials and seconds saved."""
    rates = pd.read_csv(folder / "rates.csv")
    lines = ["| bowl | true slope | seeds shared (ρ) | wrong verdict | fixed design | stop: true | stopped early "
             "| trials saved | seconds saved |", "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for row in rates.itertuples():
        wrong = "transfers" if abs(row.slope) > 0.25 else "drifts"
        lines.append(f"| {BOWL_NAMES[row.bowl]} | {row.slope:+.2f} | {row.seed_correlation:.1f} | `{wrong}` | "
                     f"{row.fixed_wrong:.4f} ± {row.fixed_wrong_se:.4f} | {row.sequential_wrong:.4f} | "
                     f"{row.stopped_early:.3f} | {row.trials_saved:.1%} | {row.seconds_saved:.1%} |")
    sims = int(rates["sims"].min())
    lines.append("")
    lines.append(f"{sims:,} simulated sweeps per row; the largest excess of a wrong verdict under `stop: true` over "
                 f"the fixed design's: {(rates['sequential_wrong'] - rates['fixed_wrong']).max():.4f}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--doc", type=Path, default=None, help="print docs/sweeps.md's table from a kept folder")
    args = parser.parse_args()
    if args.doc is not None:
        print(tables(args.doc))
        return
    jobs = [(bowl, slope, rho, args.sims, 1000 * i + 7) for i, (bowl, slope, rho) in enumerate(
        (b, s, r) for b in BOWLS for r in CORRELATIONS for s in SLOPES)]
    with multiprocessing.Pool(args.processes) as pool:
        rows = pool.map(cell, jobs)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[["bowl", "slope", "seed_correlation", "fixed_wrong", "sequential_wrong", "fixed_wrong_se",
                     "stopped_early", "trials_saved", "seconds_saved"]].round(4).to_string(index=False))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False, float_format="%.5g")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
