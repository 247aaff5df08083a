"""Start N ranks of a command on this machine, as torchrun would: each a ``python -m mutransfer …`` process with
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` set. A rank that fails gives the
others ``grace_s`` to fail on their own (their next collective times out), then they are killed; Ctrl-C stops
every rank. No rank outlives the launcher."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Mapping, Optional, Sequence

__all__ = ["launch", "rank_environment", "free_port", "stop_all", "die_with_parent", "EXIT_INTERRUPTED"]

EXIT_INTERRUPTED = 130
"""The launcher's exit after Ctrl-C (128 + SIGINT)."""
POLL_SECONDS = 0.1
STOP_SECONDS = 10.0
"""How long a rank has to exit after SIGINT or SIGTERM before it is killed."""


def free_port() -> int:
    """A TCP port free on this machine now (the rendezvous port of a new group)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rank_environment(rank: int, world: int, port: int, base: Optional[Mapping[str, str]] = None,
                     local_rank: Optional[int] = None, threads: Optional[int] = None) -> dict[str, str]:
    """``base`` (the current environment) with one local rank's torchrun variables (``LOCAL_RANK``, its GPU:
    ``local_rank``, else ``rank``), and ``OMP_NUM_THREADS`` at ``threads`` unless the environment sets it (each rank
    would otherwise take every core, as torchrun also avoids)."""
    env = dict(os.environ if base is None else base)
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank if local_rank is None else local_rank),
               LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if threads is not None:
        env.setdefault("OMP_NUM_THREADS", str(threads))
    return env


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the process that started it dies, so no orphan keeps training."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def stop_all(processes: Sequence[subprocess.Popen[bytes]], sig: int = signal.SIGTERM) -> None:
    """Signal every live process, wait up to ``STOP_SECONDS``, then kill what is left and reap it."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(sig)
    deadline = time.monotonic() + STOP_SECONDS
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _exit_code(code: int) -> int:
    return 128 - code if code < 0 else code


def launch(nproc: int, argv: Sequence[str], grace_s: float, threads: Optional[int] = None) -> int:
    """Run ``python -m mutransfer ARGV`` as ``nproc`` ranks (``threads`` torch threads each, unless
    ``OMP_NUM_THREADS`` is set); rank 0's stdout is this process's. The exit code is 0 when every rank succeeded,
    else the first failed rank's (a signal N as 128 + N)."""
    port = free_port()
    command = [sys.executable, "-m", "mutransfer", *argv]
    processes = [subprocess.Popen(command, env=rank_environment(rank, nproc, port, threads=threads),
                                  stdout=None if rank == 0 else subprocess.DEVNULL) for rank in range(nproc)]
    failed_at: Optional[float] = None
    failure = 0
    try:
        while True:
            codes = [process.poll() for process in processes]
            bad = [code for code in codes if code not in (None, 0)]
            if bad and failed_at is None:
                failed_at, failure = time.monotonic(), _exit_code(bad[0])
            if all(code is not None for code in codes):
                return failure
            if failed_at is not None and time.monotonic() - failed_at > grace_s:
                stop_all(processes)
                return failure
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        stop_all(processes, signal.SIGINT)
        return EXIT_INTERRUPTED
    finally:
        stop_all(processes, signal.SIGKILL)
