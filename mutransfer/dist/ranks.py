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

__all__ = ["Ranks", "START_SECONDS", "launched", "join", "leave", "backend_for"]
START_SECONDS = 120.0
"""How long the ranks wait for each other to start (a rank imports torch and reads its data first, seconds on a
busy machine), apart from ``train.dist_timeout``, which bounds every collective after."""
READY_KEY, ALL_READY_KEY = "mutransfer/ready", "mutransfer/all-ready"


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
        dist.init_process_group(backend_for(device), store=_started(env, rank, world, timeout_s), rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=timeout_s),
                                device_id=device if device.type == "cuda" else None)
    return Ranks(rank, world, local, parallel, device, dist.group.WORLD)


def _started(env: Mapping[str, str], rank: int, world: int, timeout_s: float) -> Any:
    """The group's store, once every rank has reached it (within ``START_SECONDS``), so that a slow start never
    counts against the collective timeout. Rank 0 hosts it, unless torchrun's agent already does."""
    hosted_by_agent = env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(env["MASTER_ADDR"], int(env["MASTER_PORT"]), world, rank == 0 and not hosted_by_agent,
                          datetime.timedelta(seconds=max(timeout_s, START_SECONDS)))
    if store.add(READY_KEY, 1) == world:
        store.set(ALL_READY_KEY, "1")
    store.wait([ALL_READY_KEY])
    return store


def leave(finished: bool = False) -> None:
    """Destroy the process group, if this process joined one. After a run every rank ``finished``, a barrier first:
    no collective is still in flight on a gloo worker thread when the group goes (a thread left holding one aborts
    the process at exit, "terminate called without an active exception"). A failed run leaves at once."""
    if dist.is_initialized():
        if finished:
            dist.barrier()
        dist.destroy_process_group()
