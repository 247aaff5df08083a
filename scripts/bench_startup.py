"""How long a command takes to answer when it has no training to do: ``--help``, a misspelt key, a rerun of a
finished sweep. Each case runs ``--repeats`` times in a fresh process (the first run warms the file cache and is
not counted); the script prints the median and the slowest wall seconds against the 1.5 s target, and which heavy
packages the command imported (a case that imports torch pays about a second for it).

    python scripts/bench_startup.py [--repeats 5] [--run-dir DIR]

The rerun case needs a finished sweep: ``--run-dir`` names one made by ``mutransfer sweep smoke --out DIR``;
without it the script runs that sweep first (about a minute on 2 cores) into a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli  # noqa: E402

TARGET = 1.5
"""Seconds: the most a command without training may take to answer."""
HEAVY = ("torch", "optuna", "pandas", "matplotlib", "hydra", "scipy")
PROBE = ("import sys\nfrom mutransfer.cli import app\ntry:\n    app(sys.argv[1:], standalone_mode=False)\n"
         "except BaseException as exc:\n    print(f'exit: {exc!r}')\n"
         "print('heavy:', ' '.join(m for m in %r if m in sys.modules))\n" % (HEAVY,))
"""Runs the CLI as ``mutransfer`` does, then names the heavy packages it imported on a line of its own."""


def cases(run_dir: Path) -> dict[str, list[str]]:
    return {"--help": ["--help"],
            "sweep --help": ["sweep", "--help"],
            "train, misspelt key": ["train", "model.widht=64"],
            "show, misspelt key": ["show", "model.widht=64"],
            "sweep, misspelt key": ["sweep", "smoke", "model.widht=64"],
            "sweep, finished (rerun)": ["sweep", "smoke", "--out", str(run_dir)]}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run-dir", type=Path, default=None, help="A finished smoke sweep's run directory.")
    args = parser.parse_args()
    run_dir = finished_sweep(args.run_dir)
    print(f"| command | median s | slowest s | ≤ {TARGET} s | heavy imports |")
    print("|---|---|---|---|---|")
    for label, words in cases(run_dir).items():
        wall_seconds(words)
        times = [wall_seconds(words) for _ in range(args.repeats)]
        verdict = "yes" if max(times) <= TARGET else "no"
        print(f"| `mutransfer {' '.join(words)}` ({label}) | {statistics.median(times):.2f} | {max(times):.2f} | "
              f"{verdict} | {' '.join(heavy_imports(words)[1]) or '—'} |", flush=True)


if __name__ == "__main__":
    main()
