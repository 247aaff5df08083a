"""The default sweep's design chosen by simulation: each candidate's precision against its simulated training seconds.

    python scripts/bench_design.py [--sims 500] [--seed 0] [--design NAME ...] [--slope-adamw -1.0]

Each candidate sets the widths and, per setup, the grid (range and step) and the noise seeds; it is simulated
``--sims`` times per setup on the real-curve simulator (``simulation.calibration.real_truth``: asymmetric bowls whose
shape changes with width, each width's optimum off the line by the measured scatter, noise growing on the high
side), with the real policies (grid, extension past an edge, noise probes on the fit window) and the real analysis.
The truth: μP + Muon's optimum stays put (slope 0), SP + AdamW's moves by ``--slope-adamw`` octaves per width
doubling (−1, the hidden layers' 1/width of SP with Adam); each starts where the 0.6 default's run (kept in
docs/data/default_0.6 with its spec, the baseline) put it at the smallest width. A trial's seconds are that run's
median per (setup, width), interpolated in log-log for other widths. Printed per design and setup: the simulated
training seconds, the median half-width of the slope's 95 % interval and of the per-width intervals, how often the
verdict is right (``transfers`` at slope 0, ``drifts`` otherwise), wrong, or ``inconclusive``, and the slope
interval's coverage; then per design the total seconds against the baseline's and whether it meets the goal:
≤ 60 % of the seconds, every setup's median slope half-width ≤ 1.05× the baseline's, and every setup's verdict
right ≥ 90 % of the time, or where the baseline's is lower, no lower than it (less two Monte Carlo standard
errors of the difference), and every slope interval still holding the truth 95 % of the time (less two Monte
Carlo standard errors). The baseline and the shipped default are read from their spec files.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from mutransfer.analysis.thresholds import Thresholds
from mutransfer.analysis.result import Summary
from mutransfer.analysis.summary import summarize_run
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.simulate import Design, Truth, simulate
from mutransfer.sweep.spec.sweep_spec import load_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BEFORE_SPEC = ROOT / "docs" / "data" / "default_0.6" / "spec.yaml"
"""The default spec up to 0.6, kept beside its run table: the baseline."""
KEPT_RUN = BEFORE_SPEC.parent
SHIPPED = ROOT / "sweeps" / "default.yaml"
BOWLS = {"mup_muon": "muon", "sp_adamw": "adamw"}
SECONDS_GOAL, WIDER_GOAL, RIGHT_GOAL = 0.60, 1.05, 0.90


@dataclass(frozen=True)
class Grid:
    low: float
    high: float
    step: float = 1.0
    noise_seeds: int = 2


@dataclass(frozen=True)
class Candidate:
    name: str
    widths: tuple[int, ...]
    grids: dict[str, Grid]
    fit_octaves: float = 1.0

    @classmethod
    def of_spec(cls, name: str, path: Path) -> "Candidate":
        """A spec file's design: its widths, and each setup's learning-rate grid and noise seeds."""
        spec = load_spec(str(path))
        grids = {s.label: Grid(s.search[0].min, s.search[0].max, s.search[0].step, s.search[0].noise_seeds)
                 for s in spec.setups}
        return cls(name, spec.widths, grids)


def candidates() -> tuple[Candidate, ...]:
    """The 0.6 default (the baseline), the shipped default, and the other designs tried."""
    return Candidate.of_spec(BEFORE_NAME, BEFORE_SPEC), Candidate.of_spec(SHIPPED_NAME, SHIPPED), *OTHERS


BEFORE_NAME, SHIPPED_NAME = "0.6 default", "0.7 default (sweeps/default.yaml)"
OTHERS = (
    Candidate("narrow grids", (32, 64, 128, 256), {"mup_muon": Grid(-6, -2), "sp_adamw": Grid(-11, -6)}),
    Candidate("narrow, Muon 1 seed", (32, 64, 128, 256),
              {"mup_muon": Grid(-6, -2, noise_seeds=1), "sp_adamw": Grid(-11, -6)}),
    Candidate("narrow, 1 seed", (32, 64, 128, 256),
              {"mup_muon": Grid(-6, -2, noise_seeds=1), "sp_adamw": Grid(-11, -6, noise_seeds=1)}),
    Candidate("narrower, 1 seed", (32, 64, 128, 256),
              {"mup_muon": Grid(-6, -3, noise_seeds=1), "sp_adamw": Grid(-11, -7, noise_seeds=1)}),
    Candidate("narrow, AdamW step 2", (32, 64, 128, 256),
              {"mup_muon": Grid(-6, -2), "sp_adamw": Grid(-12, -6, step=2)}),
    Candidate("narrow, Muon 1 seed, AdamW step 2", (32, 64, 128, 256),
              {"mup_muon": Grid(-6, -2, noise_seeds=1), "sp_adamw": Grid(-12, -6, step=2)}),
    Candidate("narrow, Muon 1 seed, AdamW step 2 1 seed", (32, 64, 128, 256),
              {"mup_muon": Grid(-6, -2, noise_seeds=1), "sp_adamw": Grid(-12, -6, step=2, noise_seeds=1)}),
    Candidate("3 widths 32/64/256, narrow", (32, 64, 256), {"mup_muon": Grid(-6, -2), "sp_adamw": Grid(-11, -6)}),
    Candidate("3 widths 32/64/256, narrow, AdamW step 2", (32, 64, 256),
              {"mup_muon": Grid(-6, -2), "sp_adamw": Grid(-12, -6, step=2)}),
    Candidate("narrow, fit ±2", (32, 64, 128, 256), {"mup_muon": Grid(-6, -2), "sp_adamw": Grid(-11, -6)}, 2.0),
)


def seconds_per_trial(trials: pd.DataFrame) -> dict[str, dict[int, float]]:
    """The median seconds of a trial per (setup, width) in the kept run."""
    medians = trials.groupby(["setup", "width"])["seconds"].median()
    return {str(s): {int(w): float(v) for w, v in part.droplevel(0).items()} for s, part in medians.groupby(level=0)}


def trial_seconds(measured: dict[int, float], width: int) -> float:
    """A trial's seconds at ``width``: measured, or interpolated (extrapolated) linearly in log2 width, log seconds."""
    if width in measured:
        return measured[width]
    xs = np.log2(sorted(measured))
    ys = np.log([measured[w] for w in sorted(measured)])
    x = math.log2(width)
    if xs[0] <= x <= xs[-1]:
        return float(np.exp(np.interp(x, xs, ys)))
    slope, intercept = np.polyfit(xs, ys, 1)
    return float(np.exp(intercept + slope * x))


def truths(summary: Summary, slope_adamw: float) -> dict[str, Truth]:
    """Each setup's truth: its bowl, the kept run's optimum at its smallest width, the slope of the theory."""
    out = {}
    for label, bowl in BOWLS.items():
        line = summary.setups()[label].line
        assert line.intercept is not None and line.slope is not None
        x0 = line.intercept + line.slope * math.log2(min(line.points))
        out[label] = real_truth(bowl, slope=0.0 if bowl == "muon" else slope_adamw, x0=x0)
    return out


def simulate_setup(truth: Truth, candidate: Candidate, label: str, sims: int, seed: int,
                   seconds: dict[int, float]) -> dict[str, float]:
    grid = candidate.grids[label]
    design = Design(widths=candidate.widths, low=grid.low, high=grid.high, step=grid.step,
                    noise_seeds=grid.noise_seeds)
    th = Thresholds(fit_octaves=candidate.fit_octaves)
    rng = np.random.default_rng(seed)
    right_verdict = "transfers" if truth.slope == 0 else "drifts"
    halves, points, cost, right, wrong, covered = [], [], 0.0, 0, 0, 0
    for _ in range(sims):
        out = simulate(truth, design, rng, th)
        cost += sum(n * trial_seconds(seconds, w) for w, n in out.trained.items()) / sims
        points += [(o.ci[1] - o.ci[0]) / 2 for o in out.optima if o.measured]
        verdict = out.fit.verdict
        right += verdict == right_verdict
        wrong += verdict not in (right_verdict, "inconclusive")
        if out.fit.slope_ci is not None:
            halves.append((out.fit.slope_ci[1] - out.fit.slope_ci[0]) / 2)
            covered += out.fit.slope_ci[0] <= truth.slope <= out.fit.slope_ci[1]
    return {"seconds": cost, "half_width": float(np.median(halves)) if halves else math.inf,
            "point_half_width": float(np.median(points)) if points else math.inf,
            "right": right / sims, "wrong": wrong / sims, "inconclusive": 1 - (right + wrong) / sims,
            "coverage": covered / max(len(halves), 1)}


def describe(candidate: Candidate, label: str) -> str:
    g = candidate.grids[label]
    return f"[{g.low:g}, {g.high:g}] step {g.step:g}, {g.noise_seeds} noise seed{'s' if g.noise_seeds != 1 else ''}"


def right_enough(right: float, baseline: float, sims: int) -> bool:
    """The verdict goal: right ≥ 90 %, or no lower than a baseline below that, less two Monte Carlo standard
    errors of the difference of two rates."""
    return right >= min(RIGHT_GOAL, baseline - 2 * math.sqrt(2 * baseline * (1 - baseline) / sims))


def covers(coverage: float, sims: int) -> bool:
    """The slope's 95 % interval holds the truth as often as it says, within two Monte Carlo standard errors."""
    return coverage >= 0.95 - 2 * math.sqrt(0.95 * 0.05 / sims)


def report(results: dict[str, dict[str, dict[str, float]]], candidates: Sequence[Candidate], sims: int) -> None:
    base = results[BEFORE_NAME]
    base_seconds = sum(r["seconds"] for r in base.values())
    print("| design | widths | setup | grid | simulated training s | slope half-width (× 0.6's) | per-width "
          "half-width | right / wrong / inconclusive | slope coverage |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in candidates:
        for label, r in results[c.name].items():
            ratio = r["half_width"] / base[label]["half_width"]
            print(f"| {c.name} | {'/'.join(map(str, c.widths))} | {label} | {describe(c, label)} | "
                  f"{r['seconds']:.0f} | {r['half_width']:.3f} ({ratio:.2f}×) | {r['point_half_width']:.2f} | "
                  f"{r['right']:.2f} / {r['wrong']:.2f} / {r['inconclusive']:.2f} | {r['coverage']:.3f} |")
    print()
    print("| design | simulated training s | of the 0.6 default's | meets the goal |")
    print("|---|---|---|---|")
    for c in candidates:
        total = sum(r["seconds"] for r in results[c.name].values())
        meets = total <= SECONDS_GOAL * base_seconds and all(
            r["half_width"] <= WIDER_GOAL * base[label]["half_width"]
            and right_enough(r["right"], base[label]["right"], sims) and covers(r["coverage"], sims)
            for label, r in results[c.name].items())
        print(f"| {c.name} | {total:.0f} | {total / base_seconds:.0%} | {'yes' if meets else 'no'} |")


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--design", action="append", default=None, help="a candidate's name (default: all)")
    parser.add_argument("--slope-adamw", type=float, default=-1.0)
    args = parser.parse_args(argv)
    chosen = [c for c in candidates() if args.design is None or c.name in args.design or c.name == BEFORE_NAME]
    kept = pd.read_csv(KEPT_RUN / "trials.csv")
    seconds = seconds_per_trial(kept)
    setups = truths(summarize_run(KEPT_RUN), args.slope_adamw)
    results = {c.name: {label: simulate_setup(truth, c, label, args.sims, args.seed, seconds[label])
                        for label, truth in setups.items()} for c in chosen}
    report(results, chosen, args.sims)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
