"""Fewer trials per optimum: the `refine` sampler against a full fine grid, on the same spec.

    python scripts/bench_refine.py [SPEC] [--fine-step 0.25] [--workers 2] [--threads 1]

Runs SPEC twice: with `search.step=<fine-step>` (the reference) and with `search.sampler=refine` (the spec's
coarse step, then four points around each width's best), and prints per (setup, width) both estimates of
log2 LR*, their difference, and the trial counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from mutransfer.analysis.result import Summary

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402


def sweep(spec: str, out: Path, words: list[str], workers: int, threads: int) -> tuple[Summary, int]:
    run_cli("sweep", spec, "--out", str(out), "--workers", str(workers), "--threads", str(threads), *words,
            hide_output=True)
    return Summary.from_json(json.loads((out / "summary.json").read_text())), len(pd.read_csv(out / "trials.csv"))


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="default")
    parser.add_argument("--fine-step", type=float, default=0.25)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-refine-"))
    fine, n_fine = sweep(args.spec, root / "fine", [f"search.step={args.fine_step}"], args.workers, args.threads)
    refine, n_refine = sweep(args.spec, root / "refine", ["search.sampler=refine"], args.workers, args.threads)
    print(f"spec {args.spec}: full grid at step {args.fine_step}: {n_fine} trials; refine: {n_refine} trials "
          f"({n_refine / n_fine:.0%})")
    worst = 0.0
    for setup, info in fine.setups().items():
        for width, opt in info.line.points.items():
            ref, got = opt.x_star, refine.setups()[setup].line.points[width].x_star
            assert ref is not None and got is not None
            worst = max(worst, abs(got - ref))
            print(f"{setup:<10} width {width:>5}: fine grid {ref:7.2f}  refine {got:7.2f}  |Δ| {abs(got - ref):.2f}")
    print(f"largest |Δ log2 LR*| = {worst:.2f} octaves; runs in {root}")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
