"""How long the README's commands take: each command line of the README's code blocks that this script knows,
run as written (``bash -c LINE``) and timed, the quick ones in one fresh directory in the README's order (so
``runs/smoke`` exists when ``transfer --from runs/smoke`` runs; ``runs/default`` is the kept default sweep
``docs/data/first_answer/run``, copied in untimed), the test suite in the repository. It waits for the
one-minute load average to fall to ``--max-load`` and records it (``load``).

    python scripts/bench_readme.py --out docs/data/readme/durations.csv                 # the quick commands
    python scripts/bench_readme.py --parts tests --out docs/data/readme/durations.csv   # the test suite
    python scripts/bench_readme.py --table docs/data/readme/durations.csv               # the table docs quote

Each run replaces its parts' rows in ``--out`` and prints the table docs/performance.md quotes; the README gives
each command's duration as ``says`` writes it (``tests/test_docs.py`` checks that it does). Run it on an otherwise idle machine: it
refuses to start while the load stays above ``--max-load``."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Optional

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
KEPT_DEFAULT_RUN = ROOT / "docs" / "data" / "first_answer" / "run"

PARTS = {
    "smoke": r"^mutransfer sweep smoke\b",
    "smoke_transfer": r"^mutransfer transfer .*--from runs/smoke\b",
    "transfer": r"^mutransfer transfer --width 4096 --from runs/default$",
    "verify_dry_run": r"^mutransfer verify .*--dry-run$",
    "before_after": r"^mutransfer sweep compare\b",
    "compare": r"^mutransfer compare ",
    "tests": r"python -m pytest -q$",
}
"""Each timed part: the README command line it is (a regular expression over the line, its comment cut)."""
QUICK = ("smoke", "smoke_transfer", "transfer", "verify_dry_run", "before_after", "compare")
FENCE = re.compile(r"```bash\n(.*?)```", re.S)
COLUMNS = ["part", "command", "seconds", "load", "date", "commit"]


def readme_lines() -> list[str]:
    """The README's command lines, their comments cut, in the README's order."""
    return [line.split("#", 1)[0].strip() for block in FENCE.findall(README.read_text())
            for line in block.splitlines() if line.split("#", 1)[0].strip()]


def command_of(part: str, lines: list[str]) -> str:
    """The one README line ``part`` names; stops with a message when it names none or several."""
    found = [line for line in lines if re.search(PARTS[part], line)]
    if len(found) != 1:
        raise SystemExit(f"part {part}: the README has {len(found)} lines matching {PARTS[part]!r}, not one")
    return found[0]


def says(seconds: float) -> str:
    """How the README writes a duration: whole seconds under 10 s, to 5 s under 90 s, else minutes (to a half
    under 10 min)."""
    if seconds < 10:
        return f"{max(1, round(seconds)):.0f} s"
    if seconds < 90:
        return f"{5 * round(seconds / 5):.0f} s"
    minutes = seconds / 60
    return f"{round(minutes * 2) / 2:g} min" if minutes < 10 else f"{round(minutes):.0f} min"


def load() -> float:
    return os.getloadavg()[0]


def idle(max_load: float, wait_s: float = 300.0) -> float:
    """The one-minute load average once it is at most ``max_load`` (waiting up to ``wait_s`` for the machine to
    settle); stops when it stays above."""
    waited = 0.0
    while load() > max_load and waited < wait_s:
        time.sleep(10)
        waited += 10
    if load() > max_load:
        raise SystemExit(f"load average {load():.2f} > --max-load {max_load} after {wait_s:.0f} s: run on an idle "
                         "machine")
    return load()


def commit() -> str:
    """The commit measured, marked ``+`` when the working tree had changes."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    changes = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return (head.stdout.strip() or "unknown") + ("+" if changes.stdout.strip() else "")


def time_line(line: str, cwd: Path) -> float:
    """``line`` run by bash in ``cwd``; its wall seconds. Stops with its output when it fails."""
    began = time.perf_counter()
    done = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{line} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return seconds


def measure(parts: list[str], max_load: float) -> pd.DataFrame:
    lines = readme_lines()
    workdir = Path(tempfile.mkdtemp(prefix="readme-"))
    shutil.copytree(KEPT_DEFAULT_RUN, workdir / "runs" / "default")
    rows = []
    before = idle(max_load)
    try:
        for part in [p for p in PARTS if p in parts]:
            line = command_of(part, lines)
            seconds = time_line(line, ROOT if part == "tests" else workdir)
            print(f"{part}: {seconds:.1f} s: {line}", flush=True)
            rows.append({"part": part, "command": line, "seconds": round(seconds, 1), "load": round(before, 2), "date": date.today().isoformat(), "commit": commit()})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pd.DataFrame(rows, columns=COLUMNS)


def table(durations: pd.DataFrame) -> str:
    """The markdown table docs/performance.md quotes, one row per README command (the date and commit each was
    measured at stay in the CSV)."""
    out = ["| README command | seconds | the README says | load at the start |", "|---|---:|---|---:|"]
    for row in durations.itertuples():
        out.append(f"| `{row.command}` | {row.seconds:.1f} | {says(row.seconds)} | {row.load:.2f} |")
    return "\n".join(out)


def merged(old: Optional[pd.DataFrame], new: pd.DataFrame) -> pd.DataFrame:
    """``old`` with ``new``'s parts replaced, in ``PARTS``' order."""
    rows = new if old is None else pd.concat([old[~old["part"].isin(new["part"])], new])
    order = {part: i for i, part in enumerate(PARTS)}
    return rows.sort_values("part", key=lambda s: s.map(order)).reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default=",".join(QUICK), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--out", type=Path, default=None, help="the CSV whose parts' rows this run replaces")
    parser.add_argument("--table", type=Path, default=None, help="print the table of a kept CSV and stop")
    parser.add_argument("--max-load", type=float, default=0.5)
    args = parser.parse_args()
    if args.table is not None:
        print(table(pd.read_csv(args.table)))
        return
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SystemExit(f"unknown part(s) {', '.join(unknown)}; the parts are {', '.join(PARTS)}")
    durations = measure(parts, args.max_load)
    if args.out is not None:
        old = pd.read_csv(args.out) if args.out.exists() else None
        durations = merged(old, durations)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        durations.to_csv(args.out, index=False)
    print(table(durations))


if __name__ == "__main__":
    sys.exit(main())
