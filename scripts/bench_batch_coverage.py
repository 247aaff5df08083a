"""How often the best and the critical batch's 95 % intervals hold the truth, by simulation from a known truth.

    python scripts/bench_batch_coverage.py [--draws 400] [--seed 0]

Each simulated sweep trains (on paper) batches 4–64 at one token budget, three seeds each, an LR grid around
each batch's optimum; the loss at η* against log2 B is a bowl with its minimum at B* = 11.3 (between two swept
batches) and, as real curves are, steeper past the minimum (large batches, 1.7×); every seed's level is shared
by all its batches (seeds share their data), and each trial adds noise. The analysis is the real one
(``analysis.batch``). Printed: per noise level, the fraction of sweeps whose best-batch interval holds B*, whose
critical-batch interval holds the true critical batch (where the true curve crosses the tolerance), and how
often the critical batch is called ``measured``, ``bound`` or ``unresolved``; then, over sweeps of three budgets
whose best batch grows as D^0.5, how often γ's interval holds 0.5 (half as many draws).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from mutransfer.analysis.batch import batch_analysis
from mutransfer.analysis.drift import SearchSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

BATCHES = (4, 8, 16, 32, 64)
BUDGETS = (2**16, 2**18, 2**20)
GAMMA = 0.5
"""The growth table's truth: the best (and critical) batch ∝ D^0.5, 8 → 16 → 32 over the three budgets."""
GROWTH_CURVATURE = 0.03
"""A steeper bowl there, so that every budget's critical batch (0.63 octave past the best) is inside the grid."""
BEST = 2**3.5
LEVEL = 2.0
CURVATURE = 0.01
"""Nats per octave² below B*; 1.7× that above it."""
STEEP = 1.7
TOLERANCE = 0.01


def true_loss(log2_batch: float, best: float = BEST, curvature: float = CURVATURE) -> float:
    d = log2_batch - math.log2(best)
    return LEVEL + curvature * d * d * (STEEP if d > 0 else 1.0)


def true_critical() -> float:
    """Where the true curve reaches (1 + tolerance) × its minimum, past the minimum (log2 B)."""
    return math.log2(BEST) + math.sqrt(TOLERANCE * LEVEL / (CURVATURE * STEEP))


def simulate(rng: np.random.Generator, noise: float, seed_sd: float, seeds: int = 3,
             budgets: dict[int, float] = {2**20: BEST}, curvature: float = CURVATURE) -> pd.DataFrame:
    """Trials at every (budget, batch): ``budgets`` maps each budget to its true best batch."""
    levels = rng.normal(0, seed_sd, seeds)
    rows = []
    for tokens, best in budgets.items():
        for batch in BATCHES:
            centre = -6 + 0.5 * math.log2(batch / 4)
            for seed in range(seeds):
                for x in np.arange(centre - 3, centre + 3.5, 1.0):
                    d = x - centre
                    loss = true_loss(math.log2(batch), best, curvature) + levels[seed] + rng.normal(0, noise) + \
                        0.15 * d * d * (1.7 if d > 0 else 1.0)
                    rows.append({"setup": "s", "batch_size": batch, "tokens": tokens, "seed": seed, "x": x,
                                 "loss": loss, "status": "ok"})
    return pd.DataFrame(rows)


def coverage(draws: int, noise: float, seed_sd: float, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    best_hits = critical_hits = 0
    statuses = {"measured": 0, "bound": 0, "unresolved": 0}
    truth = true_critical()
    for _ in range(draws):
        entry = batch_analysis(simulate(rng, noise, seed_sd), {"s": SearchSettings()})["s"]
        low, high = entry["best"]["ci"]
        best_hits += (low is None or low <= BEST) and (high is None or BEST <= high)
        critical = entry["critical"]
        statuses[critical["status"]] += 1
        c_low, c_high = critical["ci"]
        critical_hits += (c_low is None or math.log2(c_low) <= truth) and (c_high is None or truth <= math.log2(c_high))
    return {"best": best_hits / draws, "critical": critical_hits / draws,
            **{k: v / draws for k, v in statuses.items()}}


def growth_coverage(draws: int, noise: float, seed_sd: float, seed: int) -> dict[str, float]:
    """How often γ's interval holds ``GAMMA`` (best and critical batch), over sweeps of three budgets."""
    rng = np.random.default_rng(seed)
    budgets = {d: 8 * (d / BUDGETS[0]) ** GAMMA for d in BUDGETS}
    hits = {"best": 0, "critical": 0}
    fitted = {"best": 0, "critical": 0}
    for _ in range(draws):
        trials = simulate(rng, noise, seed_sd, budgets=budgets, curvature=GROWTH_CURVATURE)
        growth = batch_analysis(trials, {"s": SearchSettings()})["s"]["growth"]
        for kind in hits:
            if growth[kind] is not None:
                fitted[kind] += 1
                low, high = growth[kind]["gamma_ci"]
                hits[kind] += low <= GAMMA <= high
    return {**{f"{k} covered": hits[k] / max(1, fitted[k]) for k in hits},
            **{f"{k} fitted": fitted[k] / draws for k in fitted}}


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"true best batch {BEST:.1f}, true critical batch {2 ** true_critical():.1f} (tolerance {TOLERANCE:.0%})")
    print("| loss noise per trial | seed level sd | best batch covered | critical covered | measured | bound | "
          "unresolved |")
    print("|---|---|---|---|---|---|---|")
    for noise, seed_sd in ((0.002, 0.004), (0.005, 0.01), (0.01, 0.01), (0.01, 0.0)):
        result = coverage(args.draws, noise, seed_sd, args.seed)
        print(f"| {noise} | {seed_sd} | {result['best']:.1%} | {result['critical']:.1%} | {result['measured']:.0%} | "
              f"{result['bound']:.0%} | {result['unresolved']:.0%} |", flush=True)
    print(f"\nγ = {GAMMA} over budgets {', '.join(f'{d:,}' for d in BUDGETS)} (best batch 8, 16, 32; critical 12.4, "
          "24.7, 49.5):")
    print("| loss noise per trial | seed level sd | γ(best) covered | fitted | γ(critical) covered | fitted |")
    print("|---|---|---|---|---|---|")
    for noise, seed_sd in ((0.002, 0.004), (0.01, 0.01)):
        g = growth_coverage(args.draws // 2, noise, seed_sd, args.seed)
        print(f"| {noise} | {seed_sd} | {g['best covered']:.1%} | {g['best fitted']:.0%} | "
              f"{g['critical covered']:.1%} | {g['critical fitted']:.0%} |", flush=True)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
