"""Measure the real-curve simulator's defaults (``mutransfer.simulation.calibration``) from sweeps' trials.csv.

Reads the run directories' trials.csv (default: the tables kept under docs/data/) and prints, per quantity, the
value, how it was measured and from which tables, the per-point bowls, the optima's χ² about their lines, and the
dict for ``CALIBRATED`` (two significant digits) with ``FLAT_CURVATURE``. ``--check`` exits 1 when that dict
differs from the committed one. docs/analysis.md ("The real-curve simulator's calibration") says how each number
was measured.

    python scripts/calibrate_simulator.py
    python scripts/calibrate_simulator.py --check
    python scripts/calibrate_simulator.py runs/default runs/seeds
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Optional, Sequence

from mutransfer.simulation.measured_calibration import (Calibration, Table, calibrated, differences, load, measure,
                                                         significant)

ROOT = Path(__file__).resolve().parents[1]
TABLES = tuple(ROOT / "docs" / "data" / name for name in ("default", "factorial", "depth", "horizon", "seeds"))


def _print_report(tables: Sequence[Table], calibration: Calibration) -> None:
    for t in tables:
        minutes = float(t.trials["seconds"].sum()) / 60 if "seconds" in t.trials else math.nan
        print(f"{t.name}: {len(t.trials)} trials, setups {', '.join(sorted(t.trials['setup'].unique()))}, "
              f"{minutes:.1f} min of training")
    print("\n| quantity | value | estimate | how measured | tables |\n|---|---|---|---|---|")
    for m in calibration.measurements:
        value = significant(m.value) if m.resolved else 0.0
        print(f"| {m.name} | {value:g} | {m.value:.4g} | {m.how} | {', '.join(m.tables)} |")
    print("\nPer point, the median over its grid seeds' bowls:")
    shapes = calibration.shapes.astype(object).where(calibration.shapes.notna(), "–")
    print(shapes.to_string(index=False, formatters={k: "{:.3f}".format for k in ("curvature", "asymmetry")}))
    print("\n| table | setup | axis | points | χ² about the line | dof | τ² alone |\n|---|---|---|---|---|---|---|")
    for line in calibration.lines:
        print(f"| {line.table} | {line.setup} | {line.axis} | {line.points} | {line.chi2:.1f} | {line.dof} | "
              f"{line.tau2:+.3f} |")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", type=Path, nargs="*", default=list(TABLES),
                        help="sweep run directories holding trials.csv (default: docs/data/*)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the measured values differ from mutransfer/simulation/calibration.py's")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.run_dirs if not (d / "trials.csv").is_file()]
    if missing:
        parser.error(f"no trials.csv in {', '.join(missing)}: give sweep run directories (or the docs/data tables)")
    tables = [load(d) for d in args.run_dirs]
    calibration = measure(tables)
    _print_report(tables, calibration)
    values, flat = calibrated(calibration.measurements)
    print(f"\nCALIBRATED = {values}\nFLAT_CURVATURE = {flat}")
    wrong = differences(values, flat)
    if args.check and wrong:
        print("mutransfer/simulation/calibration.py differs from the measurement:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
