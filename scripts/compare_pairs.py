"""The README's compare example and its control, kept: ``sweeps/compare.yaml`` swept as it is (A), with the
README's change ``train.steps=160`` (B, four times the horizon) and with other seeds ``seeds=[1]`` (C), then
``mutransfer compare`` on A against B and A against C.

    python scripts/compare_pairs.py --out docs/data/compare        # the three sweeps (about 3.5 min, 2 cores)
    python scripts/compare_pairs.py --table docs/data/compare      # the table docs/compare.md quotes

keeps each run's ``config.yaml``, ``trials.csv`` and ``summary.json`` under ``--out`` (what
``compare`` reads) and prints one row per pair: the change, the verdict, the pooled shift with its 95 % and 90 %
intervals, and each width's shift. Both write the ``compare`` section of docs/data/numbers.yaml: the trials of
one sweep of the spec (run A's)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_numbers import kept_run_numbers, write_numbers  # noqa: E402

RUNS = {"before": [], "after": ["train.steps=160"], "seeds1": ["seeds=[1]"]}
"""Each kept run: its overrides of sweeps/compare.yaml."""
PAIRS = (("before", "after", "`train.steps=160` (4× the horizon)"), ("before", "seeds1", "`seeds=[1]` (only the seeds)"))
KEPT = ("config.yaml", "trials.csv", "summary.json")


def sweep(out: Path) -> None:
    for name, overrides in RUNS.items():
        run = out / name
        shutil.rmtree(run, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="compare-pairs-") as scratch:
            command = [sys.executable, "-m", "mutransfer", "sweep", "compare", *overrides, "--out", scratch]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            run.mkdir(parents=True)
            for file in KEPT:
                shutil.copy(Path(scratch) / file, run / file)


def compared(folder: Path, a: str, b: str) -> dict:
    """``mutransfer compare`` of two kept runs: its compare.json (written to a scratch folder)."""
    with tempfile.TemporaryDirectory(prefix="compare-pairs-") as scratch:
        command = [sys.executable, "-m", "mutransfer", "compare", str(folder / a), str(folder / b), "--out", scratch]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return json.loads((Path(scratch) / "compare.json").read_text())


def table(folder: Path) -> str:
    lines = ["| B (A: `sweeps/compare.yaml` as it is) | verdict | pooled shift [95 %] | 90 % | per width: B − A |",
             "|---|---|---|---|---|"]
    for a, b, change in PAIRS:
        setup = compared(folder, a, b)["setups"]["mup_muon"]
        widths = ", ".join(f"{width}: {row['difference']:+.2f}" for width, row in setup["widths"].items())
        lines.append(f"| {change} | `{setup['verdict']}` | {setup['shift']:+.2f} [{setup['shift_ci_low']:+.2f}, "
                     f"{setup['shift_ci_high']:+.2f}] | [{setup['shift_ci90_low']:+.2f}, "
                     f"{setup['shift_ci90_high']:+.2f}] | {widths} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="sweep the three runs and keep them here")
    parser.add_argument("--table", type=Path, default=None, help="print the table of kept runs")
    args = parser.parse_args()
    if args.out is None and args.table is None:
        parser.error("give --out DIR (sweep) or --table DIR (print)")
    if args.out is not None:
        sweep(args.out)
    kept = args.table or args.out
    print(table(kept))
    write_numbers("compare", "scripts/compare_pairs.py", {"trials": kept_run_numbers(kept / "before")["trials"]})


if __name__ == "__main__":
    main()
