"""Run the ``mutransfer`` command line from a script: in a child process of this interpreter, timed.

A script imports it after putting its own folder on the import path (a test loads a script by its file, where
that folder is not on it):

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cli_runner import run_cli  # noqa: E402
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Optional

__all__ = ["cli_command", "run_cli", "run_cli_or_exit"]

FAILURE_TAIL = 3000
"""Characters of each of a failed command's standard output and standard error that ``run_cli_or_exit`` shows."""


def cli_command(*words: str) -> list[str]:
    """The command line that runs ``mutransfer WORDS`` with this interpreter (for a process the script manages)."""
    return [sys.executable, "-m", "mutransfer", *words]


def _discarded(hide: bool) -> Optional[int]:
    return subprocess.DEVNULL if hide else None


def run_cli(*words: str, check: bool = True, hide_output: bool = False, hide_errors: bool = False) -> float:
    """Run ``mutransfer WORDS`` and return its wall time in seconds. ``check``: raise ``CalledProcessError`` when it
    exits non-zero; ``hide_output``, ``hide_errors``: discard its standard output, its standard error (else they
    go to the script's own)."""
    started = time.perf_counter()
    subprocess.run(cli_command(*words), check=check, stdout=_discarded(hide_output), stderr=_discarded(hide_errors))
    return time.perf_counter() - started


def run_cli_or_exit(*words: str) -> float:
    """Run ``mutransfer WORDS`` with its output captured and return its wall time in seconds; when it fails, end
    the script with the command, its exit status and the end of what it wrote."""
    started = time.perf_counter()
    proc = subprocess.run(cli_command(*words), text=True, capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"mutransfer {' '.join(words)} failed ({proc.returncode}):\n"
                 f"{proc.stdout[-FAILURE_TAIL:]}{proc.stderr[-FAILURE_TAIL:]}")
    return time.perf_counter() - started
