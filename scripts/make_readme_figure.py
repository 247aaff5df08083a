"""Regenerate docs/transfer.png, the README's picture: run the default sweep (`mutransfer sweep`, 9–17
minutes on 2 cores), then draw its loss-vs-learning-rate figure small enough to commit.

    python scripts/make_readme_figure.py [--run-dir runs/default] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mutransfer.analysis.plots import save, transfer_figure
from mutransfer.analysis.summary import axis_table, read_tables, search_settings, summarize
from mutransfer.schema import LR_KEY, axis_named

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURE = ROOT / "docs" / "transfer.png"
DPI = 80


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


if __name__ == "__main__":
    main()
