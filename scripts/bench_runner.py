"""The one runner every benchmark goes through, whichever way it is started:

    python scripts/bench_runner.py list                  # the benchmarks, one line each
    python scripts/bench_runner.py sweep default         # scripts/bench_sweep.py's main(["default"])
    python scripts/bench_sweep.py default                # the same: a benchmark's file runs through here

Before a benchmark measures, the runner prints what it measures on (the CPUs, the load average, Python, torch and
the commit) and refuses a busy machine: two busy processes on two cores distort a timing several-fold. Pass
``--busy-ok`` to measure anyway (a benchmark that only simulates does not care). After it, the runner prints the
benchmark's wall time. Each benchmark keeps its own options: ``main(argv)`` parses them.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from importlib import util
from pathlib import Path
from typing import Callable, Optional, Sequence

__all__ = ["BUSY_LOAD_PER_CPU", "BUSY_OK", "benchmarks", "busy_problem", "machine_line", "run_benchmark", "main"]

HERE = Path(__file__).resolve().parent
BUSY_LOAD_PER_CPU = 0.25
"""A one-minute load average above this many runnable processes per CPU counts as busy (0.5 on two cores: one
process already half the machine's)."""
BUSY_OK = "--busy-ok"
EXIT_BUSY = 2

Main = Callable[[Optional[Sequence[str]]], Optional[int]]


def benchmarks() -> dict[str, str]:
    """Each benchmark's name (``bench_NAME.py``) and the first line of its docstring."""
    out = {}
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if name == "runner":
            continue
        text = path.read_text(encoding="utf-8")
        out[name] = text.split('"""', 2)[1].strip().splitlines()[0] if text.startswith('"""') else ""
    return out


def busy_problem(load: float, cpus: int) -> Optional[str]:
    """Why the machine is too busy to time on (its one-minute ``load`` on ``cpus``), or None."""
    if load <= BUSY_LOAD_PER_CPU * cpus:
        return None
    return (f"the machine is busy (load average {load:.2f} on {cpus} CPUs): wait until it is idle, or pass "
            f"{BUSY_OK} to measure anyway (its timings will read slower than an idle machine's)")


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_line(load: float, cpus: int) -> str:
    """What the benchmark measures on, in one line."""
    try:
        from importlib.metadata import version

        torch = version("torch")
    except Exception:  # torch not installed: the line says so
        torch = "not installed"
    return (f"machine: {cpus} CPUs ({platform.machine()}), load average {load:.2f}, Python "
            f"{platform.python_version()}, torch {torch}, commit {_commit()}")


def run_benchmark(main: Main, argv: Optional[Sequence[str]] = None,
                  load: Optional[Callable[[], float]] = None) -> int:
    """Run a benchmark's ``main`` on ``argv`` (default: the command line's) after the machine line and the busy
    check; its exit status (a busy machine: 2, nothing measured)."""
    args = list(sys.argv[1:] if argv is None else argv)
    busy_ok = BUSY_OK in args
    args = [a for a in args if a != BUSY_OK]
    cpus = os.cpu_count() or 1
    now = (load or (lambda: os.getloadavg()[0]))()
    print(machine_line(now, cpus), flush=True)
    problem = busy_problem(now, cpus)
    if problem is not None and not busy_ok and not any(a in ("-h", "--help") for a in args):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BUSY
    started = time.perf_counter()
    status = main(args)
    print(f"benchmark wall time: {time.perf_counter() - started:.1f} s", flush=True)
    return int(status or 0)


def _load_main(name: str) -> Main:
    path = HERE / f"bench_{name}.py"
    spec = util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.main


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    names = benchmarks()
    if not args or args[0] in ("list", "-h", "--help"):
        width = max(map(len, names))
        print("\n".join(f"{name:<{width}}  {line}" for name, line in names.items()))
        return 0
    if args[0] not in names:
        print(f"error: no benchmark '{args[0]}'; `python scripts/bench_runner.py list` lists them", file=sys.stderr)
        return EXIT_BUSY
    sys.path.insert(0, str(HERE))
    return run_benchmark(_load_main(args[0]), args[1:])


if __name__ == "__main__":
    sys.exit(main())
