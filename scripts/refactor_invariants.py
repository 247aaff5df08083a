"""What a refactor must leave as it was, measured at one commit: every kept run's summary recomputed from its tables
(``docs/data/**/trials.csv``, ``tests/baselines/**/trials.csv``) and every figure redrawn from it, as one JSON file.
Run it at the commit before a refactor and after it, on one machine, and compare the two files:

    python scripts/refactor_invariants.py --out before.json          # at the commit before
    python scripts/refactor_invariants.py --out after.json --against before.json

``--against`` prints what differs and exits 1 when anything does: a summary's text (to the last digit) or a
figure's pixels (a hash of the decoded image, so PNG metadata does not count)."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def kept_runs() -> list[Path]:
    """Every kept sweep or import: a directory holding trials.csv."""
    found = [*(ROOT / "docs" / "data").glob("**/trials.csv"), *(ROOT / "tests" / "baselines").glob("**/trials.csv")]
    return sorted(path.parent for path in found)


def pixels(path: Path) -> str:
    """A hash of the image's decoded pixels."""
    from matplotlib.image import imread

    image = imread(path)
    return hashlib.sha256(image.tobytes() + repr(image.shape).encode()).hexdigest()


def measure(run_dir: Path) -> dict[str, Any]:
    """The run's summary as JSON text and each figure's pixel hash, drawn in a copy of the run."""
    from mutransfer.analysis.draw import draw
    from mutransfer.analysis.summary import summarize_run

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / run_dir.name
        shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("*.png", "*.journal", "*.db"))
        summary = summarize_run(copy)
        text = json.dumps(summary.to_json(), sort_keys=True, default=str)
        figures = {path.name: pixels(path) for path in draw([copy], summary=summary) if path.suffix == ".png"}
    return {"summary": text, "figures": figures}


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = [f"{run}: only in {'before' if run in before else 'after'}" for run in sorted(before.keys() ^ after.keys())]
    for run in sorted(before.keys() & after.keys()):
        if before[run]["summary"] != after[run]["summary"]:
            out.append(f"{run}: summary.json differs")
        for name in sorted(before[run]["figures"].keys() | after[run]["figures"].keys()):
            if before[run]["figures"].get(name) != after[run]["figures"].get(name):
                out.append(f"{run}: {name} differs")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write this commit's measurements (JSON)")
    parser.add_argument("--against", type=Path, help="an earlier commit's file: print what differs, exit 1 if any")
    args = parser.parse_args()
    measured = {str(run.relative_to(ROOT)): measure(run) for run in kept_runs()}
    args.out.write_text(json.dumps(measured, indent=1, sort_keys=True), encoding="utf-8")
    figures = sum(len(m["figures"]) for m in measured.values())
    print(f"{len(measured)} kept runs, {figures} figures → {args.out}")
    if args.against is None:
        return 0
    found = differences(json.loads(args.against.read_text(encoding="utf-8")), measured)
    for line in found:
        print(line)
    print("unchanged" if not found else f"{len(found)} difference(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
