"""How many sweep workers, and torch threads each, a run gets: ``--workers`` and ``--threads`` as given or sized to
the cores, and to the ranks a trial trains on (``devices_per_trial``, ``verify --nproc``)."""

from __future__ import annotations

from typing import Optional

from ..errors import UserError

__all__ = ["resolve_workers"]


def resolve_workers(workers: str, threads: int, ranks: int = 1) -> tuple[Optional[int], int]:
    """``--workers N`` (N ≥ 1) or ``auto`` (None: measured later); threads default to cores / workers. With
    ``ranks`` per trial (``devices_per_trial``, ``verify --nproc``) ``auto`` is GPUs (else cores) / ranks workers, threads
    default to cores / (workers × ranks), and more than the cores in all is refused."""
    from ..train.cores import available_cores

    if threads < 0:
        raise UserError(f"--threads {threads} must be >= 0", "use 0 for cores / workers")
    cores = available_cores()
    if workers == "auto":
        if ranks == 1:
            return None, threads
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        workers = str(max(1, (gpus if gpus >= ranks else cores) // ranks))
    try:
        count = int(workers)
    except ValueError:
        raise UserError(f"--workers {workers} is not a number", "use --workers N (N >= 1) or --workers auto") from None
    if count < 1:
        raise UserError(f"--workers {count} must be at least 1", "use --workers 1 or more, or --workers auto")
    threads = threads or max(1, cores // (count * ranks))
    total = count * ranks * threads
    if ranks > 1 and total > cores:
        raise UserError(f"{count} worker(s) × {ranks} ranks per trial × {threads} thread(s) is {total} threads on "
                        f"{cores} cores", "lower --workers, --threads or the ranks per trial to fit them")
    return count, threads
