"""Regenerate the README's picture (docs/transfer.png) and its table of verdicts: run the default sweep
(`mutransfer sweep`), then draw its loss-vs-learning-rate figure small enough to commit and print the table.

    python scripts/make_readme_figure.py [--run-dir runs/default] [--skip-sweep]

`--skip-sweep --run-dir docs/data/readme` redraws both from the kept table (tests/project/test_docs.py checks the README's
table against ``tables``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mutransfer.analysis.cells import interval_cell
from mutransfer.analysis.plots import save, transfer_figure
from mutransfer.analysis.run_files import read_tables, search_settings
from mutransfer.analysis.summary import axis_table, summarize, summarize_run
from mutransfer.schema import LR_KEY, axis_named

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURE = ROOT / "docs" / "transfer.png"
DPI = 80


def tables(run_dir: Path) -> str:
    """The README's table: each setup's log2 η* per width, its slope per width doubling and the verdict."""
    setups = summarize_run(run_dir).setups()
    widths = sorted({w for info in setups.values() for w in info.line.points})
    lines = [f"| setup | log2 η* at width {' / '.join(map(str, widths))} | slope per width doubling [95 %] | verdict |",
             "|---|---|---|---|"]
    for label, info in setups.items():
        line = info.line
        optima = " / ".join(interval_cell(line.points[w].x_star) if w in line.points else "—" for w in widths)
        lines.append(f"| `{label}` | {optima} | {interval_cell(line.slope, line.slope_ci)} | **{line.verdict}** |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, default=Path("runs/default"))
    parser.add_argument("--skip-sweep", action="store_true", help="draw from an existing run directory")
    args = parser.parse_args()
    if not args.skip_sweep:
        run_cli("sweep", "--out", str(args.run_dir))
    trials, _ = read_tables(args.run_dir, all_axes=True)
    settings = search_settings(args.run_dir, trials)
    view = axis_table(trials, LR_KEY, settings, axis_named("width"))
    save(transfer_figure([(args.run_dir.name, view, summarize(trials, settings).setups())]), FIGURE, dpi=DPI)
    print(f"wrote {FIGURE} ({FIGURE.stat().st_size / 1024:.0f} KiB) from {args.run_dir}")
    print(tables(args.run_dir))


if __name__ == "__main__":
    main()
