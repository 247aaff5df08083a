"""How long the README's commands take: each command line of the README's code blocks that this script knows,
run as written (``bash -c LINE``) and timed, the quick ones in one fresh directory in the README's order (so
``runs/smoke`` exists when ``transfer --from runs/smoke`` runs; ``runs/default`` is the kept default sweep
``docs/data/first_answer/run``, copied in untimed), the test suite in the repository. It waits for the
one-minute load average to fall to ``--max-load`` and records it (``load``).

    python scripts/bench_readme.py --out docs/data/readme/durations.csv                 # the quick commands
    python scripts/bench_readme.py --parts tests --out docs/data/readme/durations.csv   # the test suite
    python scripts/bench_readme.py --table docs/data/readme/durations.csv               # the table docs quote

Each run replaces its parts' rows in ``--out``, writes the ``readme`` section of docs/data/numbers.yaml from the
whole CSV (each part's duration as ``duration_text`` writes it, and the trials of the sweeps it ran), and prints the
table docs/performance.md quotes. The README gives those numbers as literals (``tests/project/test_docs.py`` checks them
against the numbers file). Run it on an otherwise idle machine: it
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
from typing import Optional, Sequence

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from doc_numbers import duration_text, write_numbers  # noqa: E402

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
COLUMNS = ["part", "command", "seconds", "trials", "load", "date", "commit"]
SWEEP_RUNS = {"smoke": ("runs/smoke",), "before_after": ("runs/before", "runs/after")}
"""The run directories a part's sweeps write (its trials are theirs, counted from their ``trials.csv``)."""


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
            trials = sum(len(pd.read_csv(workdir / run / "trials.csv")) for run in SWEEP_RUNS.get(part, ()))
            print(f"{part}: {seconds:.1f} s: {line}", flush=True)
            rows.append({"part": part, "command": line, "seconds": round(seconds, 1),
                         "trials": trials if part in SWEEP_RUNS else None, "load": round(before, 2),
                         "date": date.today().isoformat(), "commit": commit()})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pd.DataFrame(rows, columns=COLUMNS)


def table(durations: pd.DataFrame) -> str:
    """The markdown table docs/performance.md quotes, one row per README command (the date and commit each was
    measured at stay in the CSV)."""
    out = ["| README command | seconds | the README says | load at the start |", "|---|---:|---|---:|"]
    for row in durations.itertuples():
        out.append(f"| `{row.command}` | {row.seconds:.1f} | {duration_text(row.seconds)} | {row.load:.2f} |")
    return "\n".join(out)


def numbers(durations: pd.DataFrame) -> dict[str, str]:
    """The ``readme`` section of the numbers file: ``<part>`` is the part's duration as the README writes it,
    ``<part>_trials`` the trials of the sweeps it ran."""
    out = {}
    for row in durations.itertuples():
        out[row.part] = duration_text(row.seconds)
        if pd.notna(row.trials):
            out[f"{row.part}_trials"] = f"{int(row.trials)} trials"
    return out


def merged(old: Optional[pd.DataFrame], new: pd.DataFrame) -> pd.DataFrame:
    """``old`` with ``new``'s parts replaced, in ``PARTS``' order."""
    rows = new if old is None else pd.concat([old[~old["part"].isin(new["part"])], new])
    order = {part: i for i, part in enumerate(PARTS)}
    rows = rows.sort_values("part", key=lambda s: s.map(order)).reset_index(drop=True)
    return rows.reindex(columns=COLUMNS).astype({"trials": "Int64"})


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default=",".join(QUICK), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--out", type=Path, default=None, help="the CSV whose parts' rows this run replaces")
    parser.add_argument("--table", type=Path, default=None, help="print the table of a kept CSV and stop")
    parser.add_argument("--max-load", type=float, default=0.5)
    args = parser.parse_args(argv)
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
        write_numbers("readme", "scripts/bench_readme.py", numbers(durations))
    print(table(durations))


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
