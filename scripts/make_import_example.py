"""docs/import.md's example end to end: a table of finished runs generated from a known law (one run per point
and LR, no seeds: 4 model sizes × 3 token budgets × 4 batch sizes, 10 LRs √2 apart, a few percent diverged,
width and depth chosen per size), imported, and η* predicted at a target beyond it.

    python scripts/make_import_example.py

writes docs/data/import/example.csv (the table), docs/data/import/example/ (the run directory the import writes,
without its figures), docs/import.png (its loss-vs-LR figure across model sizes) and
docs/data/import/example/transfer.yaml (the prediction at params 7e9, tokens 2e11, batch 1024)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli_or_exit  # noqa: E402

from mutransfer.simulation.calibration import real_truth  # noqa: E402
from mutransfer.simulation.tables import TableDesign, simulate_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("docs") / "data" / "import"
SEED = 11


def main() -> None:
    os.chdir(ROOT)
    DATA.mkdir(parents=True, exist_ok=True)
    table = simulate_table(real_truth(diverge_after=2.5), TableDesign(), np.random.default_rng(SEED)).table
    table.to_csv(DATA / "example.csv", index=False)
    out = DATA / "example"
    shutil.rmtree(out, ignore_errors=True)
    run_cli_or_exit("import", str(DATA / "example.csv"), "--lr", "lr", "--loss", "val/loss", "--axis", "width",
                    "--axis", "params=n_params", "--axis", "tokens", "--axis", "batch=bs", "--diverged-above", "10",
                    "--out", str(out))
    run_cli_or_exit("transfer", "--from", str(out), "--at", "params=7e9", "--at", "tokens=2e11", "--at",
                    "batch=1024", "--out", str(out / "transfer.yaml"))
    shutil.copy(out / "transfer_params.png", Path("docs") / "import.png")
    for figure in out.glob("*.png"):
        figure.unlink()
    print(f"wrote {DATA / 'example.csv'}, {out} and docs/import.png")


if __name__ == "__main__":
    main()
