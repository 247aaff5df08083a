"""What a run on several ranks refuses before any rank starts, each in one line: a batch that does not split over
the ranks, settings the distributed loop does not support, CUDA asked for without a GPU."""

from __future__ import annotations

from ..errors import UserError
from ..schema import Config
from ..train.data import eval_batch_size

__all__ = ["check_parallel", "check_nproc"]


def check_nproc(value: int) -> int:
    if value < 1:
        raise UserError(f"--nproc {value} starts no rank", "give a positive number of ranks, e.g. --nproc 2")
    return value


def check_parallel(cfg: Config, world: int) -> None:
    """Refuse a config that cannot train on ``world`` ranks."""
    from ..train.device import resolve_device

    t = cfg.train
    resolve_device(t.device)
    for key, size in (("train.batch_size", t.batch_size), ("train.eval_batch_size", eval_batch_size(t))):
        if size % world:
            multiple = (size // world + 1) * world
            raise UserError(f"{key}={size} does not split over {world} ranks (each trains its equal share of "
                            "the global batch)", f"give a multiple of {world}, e.g. {key}={multiple}")
    if t.noise_scale:
        raise UserError("train.noise_scale=true measures the noise in one process", "set train.noise_scale=false "
                        "for a run on several ranks")
