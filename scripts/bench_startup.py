"""How long a command takes to answer when it has no training to do: ``--help``, a misspelt key, a rerun of a
finished sweep, ``transfer`` and ``verify`` refusing a bad run directory or option, and ``verify --dry-run`` on a
finished sweep (its estimate from the sweep's own trials). Each case runs ``--repeats`` times in a fresh process
(the first run warms the file cache and is not counted); the script prints the median and the slowest wall seconds
against the case's target (1.5 s; 2 s for the dry run), and which heavy packages the command imported (a case that
imports torch pays about a second for it).

    python scripts/bench_startup.py [--repeats 5] [--run-dir DIR]

The rerun case needs a finished sweep: ``--run-dir`` names one made by ``mutransfer sweep smoke --out DIR``;
without it the script runs that sweep first (about a minute on 2 cores) into a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402

TARGET = 1.5
"""Seconds: the most a command without training may take to answer."""
DRY_RUN_TARGET = 2.0
"""Seconds: the most ``verify --dry-run`` on a finished sweep may take (it reads the sweep and prices its trials)."""
HEAVY = ("torch", "optuna", "pandas", "matplotlib", "hydra", "scipy")
PROBE = ("import sys\nfrom mutransfer.cli import app\ntry:\n    app(sys.argv[1:], standalone_mode=False)\n"
         "except BaseException as exc:\n    print(f'exit: {exc!r}')\n"
         "print('heavy:', ' '.join(m for m in %r if m in sys.modules))\n" % (HEAVY,))
"""Runs the CLI as ``mutransfer`` does, then names the heavy packages it imported on a line of its own."""


def cases(run_dir: Path) -> dict[str, tuple[list[str], float]]:
    """Each case's words and its target in seconds."""
    missing = str(run_dir.parent / "no-such-run")
    return {"--help": (["--help"], TARGET),
            "sweep --help": (["sweep", "--help"], TARGET),
            "train, misspelt key": (["train", "model.widht=64"], TARGET),
            "show, misspelt key": (["show", "model.widht=64"], TARGET),
            "sweep, misspelt key": (["sweep", "smoke", "model.widht=64"], TARGET),
            "sweep, finished (rerun)": (["sweep", "smoke", "--out", str(run_dir)], TARGET),
            "transfer, no such run directory": (["transfer", "--width", "512", "--from", missing], TARGET),
            "transfer, bad option": (["transfer", "--width", "512", "--tolerance", "x", "--from", str(run_dir)],
                                     TARGET),
            "verify, no such run directory": (["verify", "--width", "512", "--from", missing], TARGET),
            "verify, bad option": (["verify", "--width", "5x2", "--from", str(run_dir)], TARGET),
            "verify --dry-run, finished": (["verify", "--width", "512", "--from", str(run_dir), "--dry-run"],
                                           DRY_RUN_TARGET)}


def wall_seconds(words: list[str]) -> float:
    return run_cli(*words, check=False, hide_output=True, hide_errors=True)


def heavy_imports(words: list[str]) -> tuple[str, list[str]]:
    """A command's output, and the heavy packages it imported, from a process that runs it as the CLI does."""
    done = subprocess.run([sys.executable, "-c", PROBE, *words], capture_output=True, text=True, check=False,
                          timeout=300)
    output = done.stdout + done.stderr
    heavy = next((line for line in output.splitlines() if line.startswith("heavy:")), "heavy: (no answer)")
    return output, heavy.split()[1:]


def finished_sweep(run_dir: Path | None) -> Path:
    if run_dir is not None:
        return run_dir
    made = Path(tempfile.mkdtemp(prefix="bench-startup-")) / "smoke"
    print(f"running the smoke sweep into {made} first ...", flush=True)
    run_cli("sweep", "smoke", "--out", str(made), hide_output=True)
    return made


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run-dir", type=Path, default=None, help="A finished smoke sweep's run directory.")
    args = parser.parse_args(argv)
    run_dir = finished_sweep(args.run_dir)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| command | median s | slowest s | target s | within | heavy imports |")
    print("|---|---|---|---|---|---|")
    for label, (words, target) in cases(run_dir).items():
        wall_seconds(words)
        times = [wall_seconds(words) for _ in range(args.repeats)]
        verdict = "yes" if max(times) <= target else "no"
        print(f"| `mutransfer {' '.join(words)}` ({label}) | {statistics.median(times):.2f} | {max(times):.2f} | "
              f"{target:g} | {verdict} | {' '.join(heavy_imports(words)[1]) or '—'} |", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
