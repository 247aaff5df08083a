"""The rates of ``mutransfer compare``'s verdicts over simulated pairs of sweeps (docs/compare.md's table).

Each row simulates ``--pairs`` pairs of sweeps of one model, before (A) and after (B) a change, through the real
grid policy and analysis (``mutransfer.simulation.simulated_rates.compare_rates``), and prints how often the setup reads
``same`` / ``moved`` / ``inconclusive``, how often a width is called moved (Holm), and how often the intervals hold
the truth (each width's difference, the pooled shift, the loss difference).

    python scripts/bench_compare.py [--pairs 400]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.simulate import Design, Truth
from mutransfer.simulation.simulated_rates import compare_rates

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

COLUMNS = ("same", "moved", "inconclusive", "width_moved_rate", "width_coverage", "shift_coverage", "loss_coverage")


def rows() -> list[tuple[str, Truth, Truth, Design]]:
    """(label, truth A, truth B, design): the targets on the real-curve simulator, then its flat AdamW bowl, a
    noisier smoke-size sweep, one seed without probes, and the ideal simulator."""
    muon, adamw, default = real_truth(), real_truth("adamw"), Design()
    noisy = real_truth("adamw", noise=0.1)
    ideal = Truth(curvature=0.2, noise=0.02)
    return [
        ("μP+Muon bowl, nothing changed", muon, muon, default),
        ("μP+Muon bowl, shift 0.5 octave", muon, replace(muon, x0=muon.x0 + 0.5), default),
        ("μP+Muon bowl, shift 0.25 octave", muon, replace(muon, x0=muon.x0 + 0.25), default),
        ("μP+Muon bowl, slope +0.25 per doubling", muon, replace(muon, slope=muon.slope + 0.25), default),
        ("AdamW bowl, nothing changed", adamw, adamw, default),
        ("AdamW bowl, shift 0.5 octave", adamw, replace(adamw, x0=adamw.x0 + 0.5), default),
        ("AdamW bowl, noise 0.1, widths 32/64, nothing changed", noisy, noisy, Design(widths=(32, 64))),
        ("μP+Muon bowl, one seed, nothing changed", muon, muon, Design(noise_seeds=0)),
        ("μP+Muon bowl, one seed, shift 1 octave", muon, replace(muon, x0=muon.x0 + 1.0), Design(noise_seeds=0)),
        ("ideal bowl, nothing changed", ideal, ideal, default),
        ("ideal bowl, shift 0.5 octave", ideal, replace(ideal, x0=ideal.x0 + 0.5), default),
    ]


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print("| pairs of sweeps | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for label, a, b, design in rows():
        rates = compare_rates(a, b, design, args.pairs, args.seed)
        cells = ("–" if math.isnan(rates[c]) else f"{rates[c]:.3f}" for c in COLUMNS)
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
