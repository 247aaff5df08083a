"""A rank's place in its process group, joined from the environment torchrun sets (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``): gloo on CPU, NCCL on CUDA, with ``train.dist_timeout`` as the
collective timeout. Each rank trains its rows of the same global batch; losses are averaged over ranks and a
decision (stop a run) is rank 0's."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import torch
import torch.distributed as dist
from torch import Tensor

from ..errors import UserError

__all__ = ["Ranks", "RANK_ENV", "launched", "join", "leave", "backend_for"]

RANK_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
"""The variables a launcher (torchrun, ``--nproc``, a cluster's) sets for each rank."""


def launched(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether this process is one rank of a launched group (torchrun's variables are set)."""
    env = os.environ if environ is None else environ
    return "RANK" in env and "WORLD_SIZE" in env


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


@dataclass(frozen=True)
class Ranks:
    """This process's rank among ``world``, its device, the group and how the model is spread (``ddp``/``fsdp``)."""

    rank: int
    world: int
    local_rank: int
    parallel: str
    device: torch.device
    group: Any

    @property
    def main(self) -> bool:
        """Rank 0: the one that writes files and prints."""
        return self.rank == 0

    def rows(self, batch: Tensor) -> Tensor:
        """This rank's rows of a global batch (its size divisible by ``world``: ``commands.parallel_checks``)."""
        share = batch.size(0) // self.world
        return batch[self.rank * share:(self.rank + 1) * share]

    def mean(self, values: Tensor) -> Tensor:
        """The mean over ranks of each rank's ``values`` (the same shape on every rank)."""
        total = values.detach().clone()
        dist.all_reduce(total, group=self.group)
        return total / self.world

    def agree(self, flag: bool) -> bool:
        """Rank 0's ``flag`` on every rank."""
        value = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.broadcast(value, src=0, group=self.group)
        return bool(value.item())


def join(device_name: str, parallel: str, timeout_s: float, environ: Optional[Mapping[str, str]] = None) -> Ranks:
    """Join the launched group: the process group (gloo on CPU, NCCL on CUDA) with ``timeout_s`` per collective,
    and this rank's device (``cuda:LOCAL_RANK`` on CUDA)."""
    env = os.environ if environ is None else environ
    rank, world, local = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", env["RANK"]))
    wants_cuda = device_name.startswith("cuda") or device_name == "auto" and torch.cuda.is_available()
    if wants_cuda and not torch.cuda.is_available():
        raise UserError(f"train.device={device_name} asks for NCCL on CUDA, but no CUDA device is available",
                        "use train.device=cpu (gloo)")
    device = torch.device("cuda", local) if wants_cuda else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend_for(device), init_method=f"tcp://{env['MASTER_ADDR']}:{env['MASTER_PORT']}",
                                rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout_s),
                                device_id=device if device.type == "cuda" else None)
    return Ranks(rank, world, local, parallel, device, dist.group.WORLD)


def leave() -> None:
    """Destroy the process group, if this process joined one."""
    if dist.is_initialized():
        dist.destroy_process_group()
