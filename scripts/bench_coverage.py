"""Coverage and verdict error rates of the analysis, by simulation from a known truth (pure numpy).

    python scripts/bench_coverage.py [--sims 1000] [--seed 0]
    python scripts/bench_coverage.py --real [--sims 400] [--seed 0] [--spec docs/data/default_0.6/spec.yaml]

Without ``--real``: a Markdown table per truth (curvature a in nats/octave², loss noise, slope, symmetric or
asymmetric bowl) and sweep design (1-octave or quarter-octave grid; one seed + 2 noise probes, three seeds, or
one seed alone): how often the per-width and slope 95 % intervals hold the truth and how often each verdict
comes out, and how often the predicted 95 % range at width 4096 (drift-corrected where the truth drifts) holds
the true optimum there. Every simulated seed also shifts its optimum by N(0, 0.1²) octaves.

With ``--real``: the same checks on curves calibrated to this project's sweeps (``simulation.calibration``), for the
designs of ``--spec`` (default: the design ``sweeps/default.yaml`` had up to 0.6, kept with its run table, on which
docs/analysis.md's tables are computed) and ``sweeps/axes.yaml`` and the bowls of their two setups (μP + Muon's, and
SP + AdamW's flatter one, the true optimum mid-grid): the ideal simulator, each departure alone and all of them
at once (true slope 0), then the verdict rates at true slopes 0 … −1. The range is the one a user acts on:
plain when the verdict is ``transfers``, drift-corrected otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

from mutransfer.simulation.calibration import CALIBRATED, FLAT_CURVATURE, departures, one_departure, real_truth
from mutransfer.simulation.simulate import Design, Truth
from mutransfer.simulation.simulated_rates import coverage, real_coverage, real_law_coverage
from mutransfer.sweep.spec.sweep_spec import SweepSpec, load_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DESIGNS = {"1 oct, 1 seed + 2 probes": Design(), "1 oct, 3 seeds": Design(seeds=3, noise_seeds=0),
           "¼ oct, 1 seed + 2 probes": Design(step=0.25), "1 oct, 1 seed (resolution)": Design(noise_seeds=0)}
TRUTHS = {"flat": {}, "slope −0.5": {"slope": -0.5},
          "flat, asymmetric": {"asymmetry": 4.0, "diverge_after": 1.5}}

BOWLS = {"mup_muon": "muon", "sp_adamw": "adamw"}
"""The default and axes specs' setups, and the calibrated bowl of each."""
SETUP_NAMES = {"mup_muon": "μP + Muon", "sp_adamw": "SP + AdamW"}
SLOPES = (0.0, 0.1, -0.1, 0.2, -0.2, 0.35, -0.35, -0.5, -1.0)
AXES_SLOPES = {"width": 0.0, "depth": -0.5, "steps": -0.3}
"""The axes design's true slopes: those of docs/axes.md's coverage check."""
AXES_TARGETS = {"4096": {"width": 4096, "depth": 2, "steps": 150}, "far": {"width": 256, "depth": 8, "steps": 600}}
"""Width 4096 at the base depth and horizon, and the point docs/axes.md predicts (width 256, depth 8, steps 600)."""


def ideal_table(sims: int, seed: int) -> None:
    start = time.perf_counter()
    print("| truth | a | noise | design | width coverage | slope coverage | range at 4096 | transfers | drifts | "
          "inconclusive |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for truth_name, extra in TRUTHS.items():
        for curvature in (0.2, 0.05):
            for noise in (0.005, 0.01, 0.02, 0.04):
                for design_name, design in DESIGNS.items():
                    r = coverage(Truth(curvature=curvature, noise=noise, **extra), design, sims, seed)
                    print(f"| {truth_name} | {curvature:g} | {noise:g} | {design_name} | {r['width_coverage']:.3f} | "
                          f"{r['slope_coverage']:.3f} | {r['prediction_coverage']:.3f} | {r['transfers']:.3f} | "
                          f"{r['drifts']:.3f} | "
                          f"{r['inconclusive']:.3f} |", flush=True)
    print(f"\n{sims} simulated sweeps per row (widths 32–256, grid 2^-8…2^-2 with extension), "
          f"{time.perf_counter() - start:.0f} s")


def design_of(spec: SweepSpec, label: str) -> Design:
    """The simulator's design for one setup of a spec: its widths, grid, extension and seeds."""
    search = next(s for s in spec.setups if s.label == label).search[0]
    return Design(widths=spec.widths, low=search.min, high=search.max, step=search.step, seeds=len(spec.seeds),
                  noise_seeds=search.noise_seeds, extend=search.extend, extend_max=search.extend_max)


def axes_points(spec: SweepSpec) -> list[dict[str, int]]:
    """The spec's points ({axis: value} over the swept axes) as its ``axes`` setting makes them, the base first."""
    return [{axis: getattr(point, axis) for axis in spec.swept()} for point in spec.points()]


def truths(bowl: str, x0: float) -> dict[str, Truth]:
    """The rows of a bowl: the ideal simulator on that bowl, each departure alone, all of them (calibrated)."""
    base = {"x0": x0, "curvature": FLAT_CURVATURE if bowl == "adamw" else CALIBRATED["curvature"],
            "noise": CALIBRATED["noise"]}
    rows = {"ideal": Truth(**base)}
    rows.update({name: one_departure(name, **base) for name in departures() if name != "flat bowl"})
    rows["calibrated (all)"] = real_truth(bowl, x0=x0)
    return rows


def middle(design: Design) -> float:
    return (design.low + design.high) / 2


def default_table(spec: SweepSpec, sims: int, seed: int) -> None:
    labels = list(BOWLS)
    results = {}
    for label in labels:
        design = design_of(spec, label)
        results[label] = {name: real_coverage(truth, design, sims, seed)
                          for name, truth in truths(BOWLS[label], middle(design)).items()}
    head = " | ".join(f"{SETUP_NAMES[label]}: per-width | slope | range at 4096 | transfers" for label in labels)
    print(f"| truth (slope 0) | {head} |")
    print("|---" * (1 + 4 * len(labels)) + "|")
    for name in results[labels[0]]:
        cells = " | ".join(f"{r['width_coverage']:.3f} | {r['slope_coverage']:.3f} | {r['prediction_coverage']:.3f} | "
                           f"{r['transfers']:.3f}" for r in (results[label][name] for label in labels))
        print(f"| {name} | {cells} |", flush=True)


def axes_table(spec: SweepSpec, sims: int, seed: int) -> None:
    points = axes_points(spec)
    slopes = {axis: AXES_SLOPES[axis] for axis in spec.swept()}
    print("| setup | truth | per-point | " + " | ".join(f"{axis} slope" for axis in slopes) +
          " | range at (4096, 2, 150) | range at (256, 8, 600) | width transfers |")
    print("|---" * (6 + len(slopes)) + "|")
    for label, bowl in BOWLS.items():
        design = design_of(spec, label)
        for name, truth in truths(bowl, middle(design)).items():
            r = real_law_coverage(truth, slopes, points, design, sims, AXES_TARGETS, seed)
            cells = " | ".join(f"{r[f'{axis}_slope_coverage']:.3f}" for axis in slopes)
            print(f"| {SETUP_NAMES[label]} | {name} | {r['point_coverage']:.3f} | {cells} | "
                  f"{r['range_4096_coverage']:.3f} | {r['range_far_coverage']:.3f} | {r['transfers']:.3f} |",
                  flush=True)


def rates(r: dict[str, float]) -> str:
    return f"{r['transfers']:.2f} / {r['drifts']:.2f} / {r['inconclusive']:.2f} | {r['prediction_coverage']:.3f}"


def verdict_table(spec: SweepSpec, sims: int, seed: int) -> None:
    columns = [(label, kind) for label in BOWLS for kind in ("ideal", "calibrated (all)")]
    print("| true slope | " + " | ".join(f"{SETUP_NAMES[label]}, {kind}: T / D / I | range at 4096"
                                         for label, kind in columns) + " |")
    print("|---" * (1 + 2 * len(columns)) + "|")
    for slope in SLOPES:
        cells = []
        for label, kind in columns:
            design = design_of(spec, label)
            truth = truths(BOWLS[label], middle(design))[kind]
            cells.append(rates(real_coverage(replace(truth, slope=slope), design, sims, seed)))
        print(f"| {slope:+g} | " + " | ".join(cells) + " |", flush=True)


def axes_verdict_table(spec: SweepSpec, sims: int, seed: int) -> None:
    points = axes_points(spec)
    print("| true width slope | " + " | ".join(f"{SETUP_NAMES[label]}, calibrated: T / D / I | range at 4096"
                                               for label in BOWLS) + " |")
    print("|---" * (1 + 2 * len(BOWLS)) + "|")
    for slope in SLOPES:
        slopes = {**{axis: AXES_SLOPES[axis] for axis in spec.swept()}, "width": slope}
        cells = []
        for label, bowl in BOWLS.items():
            design = design_of(spec, label)
            r = real_law_coverage(real_truth(bowl, x0=middle(design)), slopes, points, design, sims,
                                  {"4096": AXES_TARGETS["4096"]}, seed)
            cells.append(rates({**r, "prediction_coverage": r["range_4096_coverage"]}))
        print(f"| {slope:+g} | " + " | ".join(cells) + " |", flush=True)


def three_widths_table(spec: SweepSpec, sims: int, seed: int) -> None:
    """Why the default spec sweeps four widths: the same rates from three (32/64/128) and from four."""
    print("| design | true slope | per-width | slope | range at 4096 | T / D / I |")
    print("|---|---|---|---|---|---|")
    design = design_of(spec, "mup_muon")
    for name, widths in (("3 widths, 32–128", design.widths[:3]), ("4 widths, 32–256", design.widths)):
        for slope in (0.0, 0.35):
            r = real_coverage(real_truth("muon", x0=middle(design), slope=slope), replace(design, widths=widths),
                              sims, seed)
            print(f"| {name} | {slope:+g} | {r['width_coverage']:.3f} | {r['slope_coverage']:.3f} | "
                  f"{r['prediction_coverage']:.3f} | {r['transfers']:.2f} / {r['drifts']:.2f} / "
                  f"{r['inconclusive']:.2f} |", flush=True)


def real_tables(sims: int, seed: int, spec: Path) -> None:
    start = time.perf_counter()
    default, axes = load_spec(str(spec)), load_spec("axes")
    values = ", ".join(f"{k}={v:g}" for k, v in CALIBRATED.items())
    print(f"CALIBRATED: {values}; FLAT_CURVATURE={FLAT_CURVATURE:g}")
    print(f"\n{spec}'s design, true slope 0:\n")
    default_table(default, sims, seed)
    print("\nsweeps/axes.yaml's design, true slopes " + ", ".join(f"{k} {v:+g}" for k, v in AXES_SLOPES.items()) +
          " (the law's slope intervals, the ranges `transfer` gives):\n")
    axes_table(axes, sims, seed)
    print(f"\nVerdict rates (transfers / drifts / inconclusive) and the range at 4096, {spec}'s design:\n")
    verdict_table(default, sims, seed)
    print("\nThe same for the width slope of sweeps/axes.yaml's design (its law), calibrated curves:\n")
    axes_verdict_table(axes, sims, seed)
    print(f"\nμP + Muon, calibrated curves, {spec}'s design with three widths and with four:\n")
    three_widths_table(default, sims, seed)
    print(f"\n{sims} simulated sweeps per cell, seed {seed}, {time.perf_counter() - start:.0f} s")


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="curves calibrated to this project's sweeps")
    parser.add_argument("--sims", type=int, default=None, help="simulated sweeps per row (1000; 400 with --real)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spec", type=Path, default=ROOT / "docs" / "data" / "default_0.6" / "spec.yaml",
                        help="with --real: the default design's spec (default: the 0.6 default, kept with its table)")
    args = parser.parse_args(argv)
    if args.real:
        real_tables(args.sims or 400, args.seed, args.spec)
    else:
        ideal_table(args.sims or 1000, args.seed)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
