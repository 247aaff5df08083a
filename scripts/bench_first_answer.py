"""When the default sweep's answer arrives: one run of `mutransfer sweep` (the README's first command) in a fresh
directory, each line of its plain log stamped with the seconds since the start, then the same sweep resumed with
``stop=false`` when it was run with ``stop=true`` (so one run gives both designs' times).

    python scripts/bench_first_answer.py --out docs/data/first_answer            # the default: stop off
    python scripts/bench_first_answer.py --stop --out docs/data/first_answer     # stop on, then the rest

writes ``log.csv`` (seconds, part, line) and ``run/`` (the run directory's tables) under ``--out`` and prints the
figures docs/performance.md quotes (``--report DIR`` prints them again from a kept log), and writes the
``first_answer`` section of docs/data/numbers.yaml (the kept run's trials and training seconds, and the trials
and seconds of its first answer with a slope for every setup):
- the first provisional answer with a slope for every setup, and the first whose every verdict is the final one,
  each in seconds and as a fraction of the full design's time;
- with ``--stop``: the stopped run's time, the setups it stopped, and the full design's (both parts).
Run it on an otherwise idle machine."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from doc_numbers import duration_text, kept_run_numbers, write_numbers  # noqa: E402

VERDICT = re.compile(r"(\w+) (transfers|drifts|inconclusive), slope")
PROGRESS = re.compile(r"; (\d+)/\d+ trials")


def run_part(command: list[str], part: str, rows: list[dict[str, object]], start: float) -> float:
    """Run ``command``, stamping each line of its output; returns its wall seconds."""
    began = time.perf_counter()
    env = {**os.environ, "COLUMNS": "200"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            rows.append({"seconds": round(time.perf_counter() - start, 2), "part": part, "line": line.rstrip("\n")})
        if proc.wait() != 0:
            raise SystemExit(f"{' '.join(command)} exited {proc.returncode}")
    return time.perf_counter() - began


def report(folder: Path) -> None:
    log = pd.read_csv(folder / "log.csv", keep_default_na=False)
    summary = json.loads((folder / "run" / "summary.json").read_text())
    final = {label: entry["verdict"] for label, entry in summary["keys"]["optimizer.lr"]["setups"].items()}
    full = float(log["seconds"].max())
    first = provisional = None
    for seconds, line in zip(log["seconds"], log["line"]):
        if not line.startswith("provisional ("):
            continue
        verdicts = dict(VERDICT.findall(line))
        if first is None and set(verdicts) == set(final):
            first = (seconds, line)
        if provisional is None and verdicts == final:
            provisional = (seconds, line)
    numbers = kept_run_numbers(folder / "run")
    if first is not None:
        numbers |= {"first_seconds": duration_text(first[0]),
                    "first_trials": f"{PROGRESS.search(first[1]).group(1)} trials"}
    write_numbers("first_answer", "scripts/bench_first_answer.py", numbers)
    parts = log.groupby("part")["seconds"].agg(["min", "max"])
    print(f"full design: {full:.0f} s ({full / 60:.1f} min), {len(pd.read_csv(folder / 'run' / 'trials.csv'))} trials; "
          f"final verdicts {final}")
    for name, hit in (("first provisional answer with a slope for every setup", first),
                      ("first provisional answer with the final verdicts", provisional)):
        if hit is not None:
            print(f"{name}: {hit[0]:.0f} s = {hit[0] / full:.1%} of the full time\n  {hit[1]}")
    if "rest" in parts.index:
        stopped = [line for line in log["line"] if "stopped when decided" in line]
        print(f"stop=true run: {parts.loc['stop', 'max']:.0f} s = {parts.loc['stop', 'max'] / full:.1%} of the full "
              f"design ({'; '.join(stopped) or 'no setup stopped'}); the rest (stop=false): "
              f"{parts.loc['rest', 'max'] - parts.loc['stop', 'max']:.0f} s")


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--stop", action="store_true", help="run with stop=true, then resume with stop=false")
    parser.add_argument("--report", type=Path, default=None, help="print the figures of a kept log")
    args = parser.parse_args(argv)
    if args.report is not None:
        report(args.report)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="first-answer-"))
    run = Path(tempfile.mkdtemp(prefix="first-answer-run-")) / "run"
    base = [sys.executable, "-m", "mutransfer", "sweep", "--out", str(run)]
    rows: list[dict[str, object]] = []
    start = time.perf_counter()
    if args.stop:
        run_part([*base, "stop=true"], "stop", rows, start)
        run_part([*base, "stop=false"], "rest", rows, start)
    else:
        run_part(base, "sweep", rows, start)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "log.csv", index=False)
    kept = out / "run"
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir()
    for name in ("trials.csv", "summary.json", "config.yaml"):
        shutil.copy(run / name, kept / name)
    report(out)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
