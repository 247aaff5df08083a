"""How often an imported table's intervals hold the truth: tables simulated from a known law on the real-curve
simulator (``simulation.tables``: one run per point and LR, LRs √2 apart, sizes × budgets × batches, a few
percent diverged, width and depth moving with the size), imported and analysed as ``mutransfer import`` does,
and counted: each point's 95 % interval against its true optimum, each law slope's 95 % interval against the
true slope, and the 95 % range at a target beyond the table against the target's true optimum.

    python scripts/import_coverage.py --sims 200 --out docs/data/import/coverage.csv
    python scripts/import_coverage.py --sims 200 --bowl adamw --out docs/data/import/coverage.csv
    python scripts/import_coverage.py --sims 200 --departure-scale 2 --out docs/data/import/coverage.csv
    python scripts/import_coverage.py --sims 200 --seed-correlation 0.5 --out docs/data/import/coverage.csv

prints one row per design and writes (adds its rows to) the table docs/import.md quotes."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from mutransfer.analysis.law import evaluate_law
from mutransfer.analysis.no_seeds import MIN_RESIDUAL_DOF
from mutransfer.analysis.regression import BETWEEN_POINT_SD
from mutransfer.analysis.drift import SearchSettings
from mutransfer.analysis.summary import summarize
from mutransfer.importing.convert import to_trials
from mutransfer.importing.mapping import AxisColumn, ImportMapping
from mutransfer.schema import LR_KEY
from mutransfer.simulation.calibration import real_truth
from mutransfer.simulation.tables import RealDesign, TableDesign, simulate_real_table, simulate_table

DESIGNS = {
    "4 sizes x 3 budgets x 4 batches": TableDesign(),
    "3 sizes x 3 budgets x 3 batches": TableDesign(params=(2e7, 6e7, 2e8), batches=(64, 128, 256)),
    "5 sizes x 6 budgets x 10 batches": TableDesign(params=(2e7, 6e7, 2e8, 6e8, 2e9),
                                                    tokens=(1e9, 2e9, 4e9, 8e9, 1.6e10, 3.2e10),
                                                    batches=tuple(2**k for k in range(5, 15)), lrs=8,
                                                    diverged=0.05),
    "3 sizes x 4 budgets x 2 batches": TableDesign(params=(2e7, 6e7, 2e8), tokens=(1e9, 2e9, 4e9, 8e9),
                                                   batches=(128, 256)),
    "3 sizes x 3 budgets x 1 batch, 12 LRs": TableDesign(params=(2e7, 6e7, 2e8), batches=(128,), lrs=12,
                                                         diverged=0.01),
    "4 sizes x 1 budget x 1 batch (one axis)": TableDesign(tokens=(4e9,), batches=(128,), diverged=0.02),
    "real: 5 sizes, own budgets and batches": RealDesign(),
    "real: 5 sizes, own budgets, 10-13 batches, 4-12 LRs": RealDesign(batches_per_cell=(10, 13), lrs=(4, 12),
                                                                      ladder=tuple(2**k for k in range(4, 18))),
    "real: 3 sizes, own budgets and batches": RealDesign(params=(2e7, 6e7, 2e8), batches_per_cell=(2, 3)),
}
MAPPING = ImportMapping(lr="lr", loss="val/loss", axes=(AxisColumn("width", "width"), AxisColumn("params", "n_params"),
                                                        AxisColumn("tokens", "tokens"), AxisColumn("batch", "bs")),
                        diverged_above=10.0)
TARGET = {"params": 7e9, "tokens": 2e11, "batch": 1024.0}
COUNTED = ("point", "slope", "target", "held")
"""The intervals counted against the truth, each a column of the table."""


def one_table(design: TableDesign | RealDesign, rng: np.random.Generator, bowl: str, departure_scale: float = 1.0,
              seed_correlation: float = 0.0) -> dict[str, list[int]]:
    """Hits (1) and misses (0) of one simulated table's intervals; ``departure_scale`` multiplies the points'
    scatter off the law (the calibrated σ_b the analysis assumes where it cannot estimate one);
    ``seed_correlation``: how much of its optimum shift the table's one seed carries to every point (runs that
    share their data order)."""
    truth = real_truth(bowl, diverge_after=2.5, departure=departure_scale * BETWEEN_POINT_SD,
                       seed_correlation=seed_correlation)
    sim = simulate_real_table(truth, design, rng) if isinstance(design, RealDesign) else \
        simulate_table(truth, design, rng)
    imported = to_trials(sim.table, MAPPING)
    trials = imported.trials
    settings = {LR_KEY: {label: SearchSettings(step=step) for label, step in imported.steps.items()}}
    summary = summarize(trials, settings, axes=imported.axes, no_seeds=True)
    setup = summary.setups().get("imported")
    if setup is None:
        return {"calibrated": [int(summary.noise is not None and summary.noise.calibrated)]}
    hits: dict[str, list[int]] = {"point": [], "slope": [], "target": [], "held": [],
                                  "calibrated": [int(summary.noise.calibrated)]}
    if setup.backtest is not None:
        hits["held"] = [int(bool(p.held)) for p in setup.backtest.measured()]
    law = setup.law
    if law is None:
        fit = setup.line
        for value, point in fit.points.items():
            if point.measured and point.ci is not None:
                key = next(k for k in sim.truth if k[0] == value)
                hits["point"].append(int(point.ci[0] <= sim.truth[key] <= point.ci[1]))
        if fit.slope_ci is not None:
            hits["slope"].append(int(fit.slope_ci[0] <= design.slopes["params"] <= fit.slope_ci[1]))
        return hits
    for law_point in law.points:
        result = law_point.result
        if result.measured and result.ci is not None:
            at = law_point.at
            base = design.base()
            key = (at.get("params", base["params"]), at.get("tokens", base["tokens"]),
                   int(at.get("batch", base["batch"])))
            hits["point"].append(int(result.ci[0] <= sim.truth[key] <= result.ci[1]))
    hits["dof"] = [law.points_used - len(law.axes) - 1]
    hits["censored"] = [law.censored / max(1, len(law.points))]
    hits["blocked"] = [int(bool(law.contradicted))]
    for name in law.axes:
        low, high = law.slope_ci[name]
        hits["slope"].append(int(low <= design.slopes[name] <= high))
        hits[f"slope:{name}"] = [hits["slope"][-1]]
    target = {n: TARGET[n] for n in law.axes}
    full = {**design.base(), **target}
    true_x = truth.departed(design.law(full), rng)
    _, (low, high) = evaluate_law(law, target, list(law.axes))
    hits["target"].append(int(low <= true_x <= high))
    return hits


def residual_dof(design: TableDesign | RealDesign) -> Optional[int]:
    """The law's residual degrees of freedom when every point of ``design`` is measured (points − coefficients);
    None for a real layout, whose cells are drawn per table (its rows give the median over the tables)."""
    if isinstance(design, RealDesign):
        return None
    counts = [len(design.params), len(design.tokens), len(design.batches)]
    return int(np.prod(counts)) - sum(c > 1 for c in counts) - 1


def markdown(frame: pd.DataFrame) -> str:
    """The coverage table as docs/import.md shows it: one row per design, bowl and scatter."""
    lines = ["| design (residual dof) | bowl | scatter off the law | seed shared by the points | censored | points | "
             "slopes | worst slope | range at the target | backtest held |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    frame = frame.assign(seed_correlation=frame.get("seed_correlation", 0.0)).fillna({"seed_correlation": 0.0})
    for row in frame.sort_values(["bowl", "departure_scale", "seed_correlation"], kind="stable").to_dict("records"):
        target = "–" if row["target_n"] == 0 else f"{row['target_coverage']:.3f}"
        held_n = row.get("held_n")
        held = f"{row['held_coverage']:.3f} ({int(held_n)})" if held_n == held_n and held_n else "–"
        design = DESIGNS.get(row["design"])
        exact = residual_dof(design) if design is not None else None
        median = row.get("median_dof")
        dof = f" ({exact})" if exact is not None else f" (median {median:g})" if median == median and median else ""
        worst = row.get("worst_slope_axis")
        worst = f"{row['worst_slope_coverage']:.3f} ({worst})" if isinstance(worst, str) and worst else "–"
        censored = row.get("censored_share")
        censored = f"{censored:.0%}" if censored == censored and censored is not None else "–"
        lines.append(f"| {row['design']}{dof} | {row['bowl']} | ×{row['departure_scale']:g} | "
                     f"{row['seed_correlation']:g} | {censored} | {row['point_coverage']:.3f} "
                     f"| {row['slope_coverage']:.3f} | {worst} | {target} | {held} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bowl", default="muon", choices=("muon", "adamw"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--design", action="append", help="only these designs (by name)")
    parser.add_argument("--table", type=Path, help="print the kept table (a CSV this script wrote) as Markdown, "
                        "simulating nothing")
    parser.add_argument("--departure-scale", type=float, default=1.0,
                        help="the points' true scatter off the law as a multiple of the calibrated one")
    parser.add_argument("--seed-correlation", type=float, default=0.0,
                        help="the share of the seed's optimum shift every point carries (a shared data order)")
    args = parser.parse_args()
    if args.table:
        print(markdown(pd.read_csv(args.table)))
        return
    rows = []
    for name, design in DESIGNS.items():
        if args.design and name not in args.design:
            continue
        rng = np.random.default_rng(args.seed)
        tally: dict[str, list[int]] = {"point": [], "slope": [], "target": [], "held": [], "dof": [],
                                       "blocked": [], "calibrated": []}
        for _ in range(args.sims):
            for kind, values in one_table(design, rng, args.bowl, args.departure_scale,
                                          args.seed_correlation).items():
                tally.setdefault(kind, []).extend(values)
        per_axis = {kind.split(":", 1)[1]: float(np.mean(v)) for kind, v in tally.items() if kind.startswith("slope:")}
        worst = min(per_axis, key=per_axis.__getitem__) if per_axis else ""
        row = {"design": name, "bowl": args.bowl, "departure_scale": args.departure_scale,
               "seed_correlation": args.seed_correlation, "sims": args.sims,
               **{f"{kind}_coverage": (float(np.mean(v)) if v else math.nan) for kind, v in tally.items()
                  if kind in COUNTED},
               **{f"{kind}_n": len(v) for kind, v in tally.items() if kind in COUNTED},
               "worst_slope_axis": worst, "worst_slope_coverage": per_axis.get(worst, math.nan),
               "censored_share": float(np.mean(tally["censored"])) if tally.get("censored") else math.nan,
               "blocked_share": float(np.mean(tally["blocked"])) if tally["blocked"] else math.nan,
               "median_dof": float(np.median(tally["dof"])) if tally["dof"] else math.nan,
               "calibrated_share": float(np.mean(tally["calibrated"])), "min_residual_dof": MIN_RESIDUAL_DOF}
        rows.append(row)
        print(f"{name:42s} {args.bowl} ×{args.departure_scale:g} ρ{args.seed_correlation:g}: point "
              f"{row['point_coverage']:.3f} (n {row['point_n']}), slope "
              f"{row['slope_coverage']:.3f} (n {row['slope_n']}), target {row['target_coverage']:.3f} "
              f"(n {row['target_n']}), worst slope {worst or '-'} {row['worst_slope_coverage']:.3f}, backtest held "
              f"{row['held_coverage']:.3f} (n {row['held_n']}), censored {row['censored_share']:.3f}, median "
              f"residual dof {row['median_dof']:g}; marked calibrated in {row['calibrated_share']:.2f} (from {MIN_RESIDUAL_DOF} "
              f"residual dof)", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        frame = pd.DataFrame(rows)
        if args.out.is_file():
            old = pd.read_csv(args.out)
            old["seed_correlation"] = old.get("seed_correlation", 0.0)
            keys = ["design", "bowl", "departure_scale", "seed_correlation"]
            frame = pd.concat([old[~old.set_index(keys).index.isin(frame.set_index(keys).index)], frame],
                              ignore_index=True)
        frame.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
