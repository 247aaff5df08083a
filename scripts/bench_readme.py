"""How long the README's commands take: each command line of the README's code blocks that this script knows,
run as written (``bash -c LINE``) and timed, the quick ones in one fresh directory in the README's order (so
``runs/smoke`` exists when ``transfer --from runs/smoke`` runs; ``runs/default`` is the kept default sweep
``docs/data/first_answer/run``, copied in untimed), the test suite as a stage of ``.ci/run`` (below). It waits for
the one-minute load average to fall to ``--max-load`` and records it (``load``).

    python scripts/bench_readme.py --out docs/data/readme/durations.csv                 # the quick commands
    python scripts/bench_readme.py --parts tests --out docs/data/readme/durations.csv   # install, the test suite
    python scripts/bench_readme.py --parts ci --out docs/data/readme/durations.csv      # every stage of .ci/run
    python scripts/bench_readme.py --table docs/data/readme/durations.csv               # the table docs quote
    python scripts/bench_readme.py --ci-table docs/data/readme/durations.csv            # the CI stages' table

``--parts ci`` runs ``.ci/run`` stage by stage as CI does: a ``git clone`` of the committed HEAD into a fresh
directory, ``CI=true``, each stage its lines of ``.ci/run`` as written (``CI_STAGES``; a test fails when a line of
``.ci/run`` belongs to no stage), in ``.ci/run``'s order, from the install stage (the clone's own venv) up to the
last stage asked for: each needs what the ones before it installed. A stage that fails is timed and its exit code
kept. The README's test command (the part ``tests``, CI's second stage) and the slow suite run with
``PYTEST_ADDOPTS=--durations=30``, and the script prints each suite's 30 slowest tests with their modules; the
stages' sum is the whole run, set against the budgets of ``tests/budgets.py``.

Each run replaces its parts' rows in ``--out``, writes the ``readme`` section of docs/data/numbers.yaml from the
README's parts (each part's duration as ``duration_text`` writes it, and the trials of the sweeps it ran), and prints
the table docs/performance.md quotes (and, for CI stages, the one docs/development.md quotes). The README gives those
numbers as literals (``tests/project/test_docs.py`` checks them against the numbers file). Run it on an otherwise
idle machine: it refuses to start while the load stays above ``--max-load``."""

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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_runner import run_benchmark  # noqa: E402
from budgets import CI_BUDGET_S, CI_LIMIT_S, budget_of  # noqa: E402
from doc_numbers import duration_text, write_numbers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
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
CI_STAGES = {
    "ci_install": (r"^python3 -m venv \.venv$", r"^\. \.venv/bin/activate$",
                   r"^python -m pip install -q --upgrade pip$", r"^python -m pip install -q torch==", r"^eval \"\$\(bash scripts/postgres_test_server\.sh\)\"$"),
    "tests": (r"python -m pytest -q$",),
    "ci_slow": (r"^python -m pytest -q -m slow$",),
    "ci_artifacts": (r"^bash scripts/ci_artifacts\.sh$",),
    "ci_site": (r"mkdocs build --strict",),
    "ci_screenshots": (r"^bash scripts/install_chromium\.sh$", r"^pip install -q -e '\.\[docs\]'$",
                       r"^python scripts/site_screenshots\.py "),
}
"""Each stage of ``.ci/run``: the regular expressions of its lines (every command line of ``.ci/run`` matches exactly
one stage's)."""
CI_STAGE_NAMES = {"ci_install": "install: venv, torch, PostgreSQL", "tests": "the README's test command",
                  "ci_slow": "the slow suite", "ci_artifacts": "the smoke sweep's artifacts",
                  "ci_site": "the documentation site", "ci_screenshots": "the site's screenshots"}
SUITE_MARKERS = {"tests": "not slow and not long", "ci_slow": "slow"}
"""The stages that run a test suite, and the marker expression that selects it (its budget's key)."""
SLOWEST = 30
DURATION_LINE = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(.+?)\s*$")
FENCE = re.compile(r"```bash\n(.*?)```", re.S)
COLUMNS = ["part", "command", "seconds", "trials", "load", "date", "commit", "exit"]
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


def ci_lines() -> list[str]:
    """``.ci/run``'s command lines, comments and the shell's set-up lines (``set``, ``cd``) left out."""
    lines = [line.split(" #", 1)[0].strip() for line in CI_RUN.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith(("#", "set ", "cd "))]


def stage_of(line: str) -> list[str]:
    """The CI stages whose expressions match ``line`` (one, for a line that belongs)."""
    return [stage for stage, patterns in CI_STAGES.items() if any(re.search(p, line) for p in patterns)]


def stage_lines(stage: str, lines: list[str]) -> list[str]:
    """``stage``'s lines of ``.ci/run``, in their order; stops with a message when a line belongs to no stage or to
    several."""
    for line in lines:
        if len(stage_of(line)) != 1:
            raise SystemExit(f".ci/run line {line!r} belongs to {stage_of(line) or 'no'} stage(s): give it one in "
                             "CI_STAGES (scripts/bench_readme.py)")
    return [line for line in lines if stage_of(line) == [stage]]


def slowest(output: str) -> list[tuple[float, str, str]]:
    """The ``--durations`` lines of pytest's ``output``: (seconds, phase, test id), slowest first."""
    found = [(float(m.group(1)), m.group(2), m.group(3)) for m in map(DURATION_LINE.match, output.splitlines()) if m]
    return sorted(found, reverse=True)[:SLOWEST]


def print_slowest(part: str, output: str) -> None:
    rows = slowest(output)
    print(f"{part}: the {len(rows)} slowest tests (seconds, phase, module, test)")
    for seconds, phase, test in rows:
        module, _, name = test.partition("::")
        print(f"  {seconds:7.1f}  {phase:<8}  {module}  {name}")


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


def time_line(line: str, cwd: Path, env: Optional[dict[str, str]] = None,
              check: bool = True) -> tuple[float, str, int]:
    """``line`` run by bash in ``cwd`` (``env`` added to this process's environment); its wall seconds, its output
    and its exit code. With ``check``, stops with its output when it fails."""
    began = time.perf_counter()
    done = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})
    seconds = time.perf_counter() - began
    if check and done.returncode != 0:
        raise SystemExit(f"{line} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return seconds, done.stderr + done.stdout, done.returncode


def stage_script(stage: str) -> str:
    """The bash lines that run ``stage`` in a clone as ``.ci/run`` would: after the install stage, in its venv with
    the PostgreSQL server's address exported."""
    lines = stage_lines(stage, ci_lines())
    prelude = [] if stage == "ci_install" else [". .venv/bin/activate",
                                                'eval "$(bash scripts/postgres_test_server.sh 2>/dev/null)"']
    return "\n".join(["set -euo pipefail", *prelude, *lines])


def measure_ci(stages: list[str], workdir: Path, before: float) -> list[dict[str, object]]:
    """The stages of ``.ci/run`` up to the last of ``stages``, each timed, in ``.ci/run``'s order in a fresh clone of
    HEAD under ``workdir``, as CI runs them: a stage needs what the ones before it installed (the venv, the dev
    extra)."""
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    measured = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    rows = []
    order = list(CI_STAGES)
    for stage in order[:max(order.index(s) for s in stages) + 1]:
        env = {"CI": "true", **({"PYTEST_ADDOPTS": f"--durations={SLOWEST}"} if stage in SUITE_MARKERS else {})}
        seconds, output, code = time_line(stage_script(stage), clone, env, check=stage == "ci_install")
        failure = f", exited {code} (CI would stop here):\n{output[-2000:]}" if code else ""
        print(f"{stage}: {seconds:.1f} s{failure}", flush=True)
        if stage in SUITE_MARKERS:
            print_slowest(stage, output)
        rows.append({"part": stage, "command": "; ".join(stage_lines(stage, ci_lines())), "seconds": round(seconds, 1),
                     "trials": None, "load": round(before, 2), "date": date.today().isoformat(), "commit": measured,
                     "exit": code})
    return rows


def measure(parts: list[str], max_load: float) -> pd.DataFrame:
    lines = readme_lines()
    workdir = Path(tempfile.mkdtemp(prefix="readme-"))
    shutil.copytree(KEPT_DEFAULT_RUN, workdir / "runs" / "default")
    rows = []
    before = idle(max_load)
    try:
        for part in [p for p in PARTS if p in parts and p not in CI_STAGES]:
            line = command_of(part, lines)
            seconds, _, _ = time_line(line, workdir)
            trials = sum(len(pd.read_csv(workdir / run / "trials.csv")) for run in SWEEP_RUNS.get(part, ()))
            print(f"{part}: {seconds:.1f} s: {line}", flush=True)
            rows.append({"part": part, "command": line, "seconds": round(seconds, 1),
                         "trials": trials if part in SWEEP_RUNS else None, "load": round(before, 2),
                         "date": date.today().isoformat(), "commit": commit(), "exit": 0})
        rows.extend(measure_ci([p for p in parts if p in CI_STAGES], workdir, before) if set(parts) & set(CI_STAGES)
                    else [])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pd.DataFrame(rows, columns=COLUMNS)


def table(durations: pd.DataFrame) -> str:
    """The markdown table docs/performance.md quotes, one row per README command (the date and commit each was
    measured at stay in the CSV)."""
    out = ["| README command | seconds | the README says | load at the start |", "|---|---:|---|---:|"]
    for row in durations[durations["part"].isin(list(PARTS))].itertuples():
        out.append(f"| `{row.command}` | {row.seconds:.1f} | {duration_text(row.seconds)} | {row.load:.2f} |")
    return "\n".join(out)


def ci_table(durations: pd.DataFrame) -> str:
    """The markdown table docs/development.md quotes: each stage of ``.ci/run`` with its seconds and budget, and the
    whole run against CI's budget and limit."""
    rows = durations[durations["part"].isin(list(CI_STAGES))].set_index("part")
    out = ["| stage of `.ci/run` | seconds | minutes | budget | measured at |", "|---|---:|---:|---|---|"]
    for stage in [s for s in CI_STAGES if s in rows.index]:
        row = rows.loc[stage]
        budget = budget_of(SUITE_MARKERS[stage]) if stage in SUITE_MARKERS else None
        limit = f"{budget.seconds:.0f} s" if budget is not None else "—"
        code = row.get("exit", 0)
        failed = f" (exited {int(code)})" if pd.notna(code) and code else ""
        out.append(f"| {CI_STAGE_NAMES[stage]}{failed} | {row.seconds:.1f} | {row.seconds / 60:.1f} | {limit} | "
                   f"{row.date}, {row.commit} |")
    total = rows["seconds"].sum()
    out.append(f"| **the whole run** | {total:.1f} | {total / 60:.1f} | {CI_BUDGET_S:.0f} s (CI stops at "
               f"{CI_LIMIT_S:.0f} s) | |")
    return "\n".join(out)


def numbers(durations: pd.DataFrame) -> dict[str, str]:
    """The ``readme`` section of the numbers file: ``<part>`` is the part's duration as the README writes it,
    ``<part>_trials`` the trials of the sweeps it ran (the CI stages are docs/development.md's table's)."""
    out = {}
    for row in durations[durations["part"].isin(list(PARTS))].itertuples():
        out[row.part] = duration_text(row.seconds)
        if pd.notna(row.trials):
            out[f"{row.part}_trials"] = f"{int(row.trials)} trials"
    return out


def merged(old: Optional[pd.DataFrame], new: pd.DataFrame) -> pd.DataFrame:
    """``old`` with ``new``'s parts replaced, in ``PARTS``' order."""
    rows = new if old is None else pd.concat([old[~old["part"].isin(new["part"])], new])
    order = {part: i for i, part in enumerate([*PARTS, *CI_STAGES])}
    rows = rows.sort_values("part", key=lambda s: s.map(order)).reset_index(drop=True)
    return rows.reindex(columns=COLUMNS).astype({"trials": "Int64", "exit": "Int64"})


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default=",".join(QUICK),
                        help=f"comma-separated, of {', '.join([*PARTS, *CI_STAGES])}, or ci (every CI stage)")
    parser.add_argument("--out", type=Path, default=None, help="the CSV whose parts' rows this run replaces")
    parser.add_argument("--table", type=Path, default=None, help="print the table of a kept CSV and stop")
    parser.add_argument("--ci-table", type=Path, default=None, help="print the CI stages' table of a kept CSV and stop")
    parser.add_argument("--max-load", type=float, default=0.5)
    args = parser.parse_args(argv)
    if args.table is not None:
        print(table(pd.read_csv(args.table)))
        return
    if args.ci_table is not None:
        print(ci_table(pd.read_csv(args.ci_table)))
        return
    parts = [q for p in args.parts.split(",") if p.strip()
             for q in (list(CI_STAGES) if p.strip() == "ci" else [p.strip()])]
    unknown = sorted(set(parts) - set(PARTS) - set(CI_STAGES))
    if unknown:
        raise SystemExit(f"unknown part(s) {', '.join(unknown)}; the parts are {', '.join([*PARTS, *CI_STAGES])}, "
                         "and ci")
    durations = measure(parts, args.max_load)
    if args.out is not None:
        old = pd.read_csv(args.out) if args.out.exists() else None
        durations = merged(old, durations)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        durations.to_csv(args.out, index=False)
        write_numbers("readme", "scripts/bench_readme.py", numbers(durations))
    print(table(durations))
    if durations["part"].isin(list(CI_STAGES)).any():
        print(ci_table(durations))


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
