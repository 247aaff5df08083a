"""Steepest-descent directions of parameters spread over the ranks of a process group: FSDP2's DTensor shards
(dim 0, ``torch.chunk`` rows) and DDP's replicas.

- Sign updates are elementwise: each rank's rows alone.
- Row-norm and RMS updates reduce over the dimension they normalize; where that dimension is the sharded one (a
  vector's RMS, a transposed matrix's rows) the squares are summed with one all-reduce, per block of a fused
  parameter even where block and shard boundaries differ.
- A spectral update needs the whole matrix: each goes to one owner rank (``shards.assign_owners``) with one
  ``all_to_all_single``, is orthogonalized there once, and each rank's rows come back with a second one (a
  replicated matrix is orthogonalized by its owner and sent whole to the others).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from .directions import block_direction, row_normalize
from .shards import Layout, assign_owners, ns_flops

__all__ = ["Placed", "ShardStats", "SpectralItem", "place", "sharded_direction", "spectral_directions",
           "timed_direction"]


@dataclass
class ShardStats:
    """What this rank's optimizer did over the steps since the counters were zeroed."""

    ns_calls: int = 0
    """Spectral directions this rank computed (Newton–Schulz on one whole matrix, or on a fused one's blocks)."""
    bytes_sent: int = 0
    """Bytes this rank sent in the optimizer's own collectives (exchanges and all-reduces)."""
    ns_seconds: float = 0.0
    comm_seconds: float = 0.0


@dataclass(frozen=True)
class Placed:
    """A parameter as this rank holds it: the local rows it updates in place, its layout and its group."""

    local: Tensor
    grad: Optional[Tensor]
    layout: Layout
    rank: int
    group: Any

    @property
    def world(self) -> int:
        return len(self.layout.rows)

    @property
    def start(self) -> int:
        return self.layout.rows[self.rank][0]


def place(p: Tensor, replicas: Optional[Any]) -> Optional[Placed]:
    """``p`` as this rank holds it: a DTensor's local shard (one-dim mesh, ``Shard(0)`` or ``Replicate``), or a
    plain tensor replicated over ``replicas`` (DDP); None for a plain tensor in one process."""
    from torch.distributed.tensor import DTensor, Replicate, Shard

    if isinstance(p, DTensor):
        mesh, placement = p.device_mesh, p.placements[0]
        if mesh.ndim != 1 or not (isinstance(placement, Replicate) or placement == Shard(0)):
            raise ValueError(f"a parameter placed as {p.placements} on a {mesh.ndim}-D mesh: the optimizer "
                             "handles one-dim meshes sharded on dim 0 (FSDP2's fully_shard) or replicated")
        layout = Layout.of(p.shape, mesh.size(), isinstance(placement, Shard))
        local, rank = p.to_local(), mesh.get_local_rank()
        start, end = layout.rows[rank]
        if local.shape[0] != end - start:
            raise ValueError(f"a shard of {local.shape[0]} rows where torch.chunk gives rank {rank} {end - start} "
                             f"of {layout.shape[0]}")
        grad = p.grad.to_local() if p.grad is not None else None
        return Placed(local, grad, layout, rank, mesh.get_group())
    if replicas is None:
        return None
    world = dist.get_world_size(replicas)
    return Placed(p, p.grad, Layout.of(p.shape, world, False), dist.get_rank(replicas), replicas)


def _all_reduce(t: Tensor, placed: Placed, stats: ShardStats) -> None:
    _synchronize(t)
    start = time.perf_counter()
    dist.all_reduce(t, group=placed.group)
    _synchronize(t)
    stats.bytes_sent += t.numel() * t.element_size()
    stats.comm_seconds += time.perf_counter() - start


def sharded_direction(rule: str, M: Tensor, placed: Placed, stats: ShardStats, *, transposed: bool = False,
                      blocks: int = 1, eps: float = 1e-8) -> Tensor:
    """The direction of this rank's rows ``M`` under ``rule`` (``sign``, ``row_norm`` or ``rms``), equal to the
    rows of the whole parameter's ``block_direction``."""
    if rule == "sign" or not placed.layout.sharded or placed.world == 1:
        return block_direction(rule, M, transposed=transposed, blocks=blocks, eps=eps)
    if rule == "row_norm" and not transposed or rule == "rms" and M.ndim > 1:
        return row_normalize(M, eps) if rule == "row_norm" else block_direction(rule, M, blocks=blocks, eps=eps)
    if rule == "row_norm":
        squares = (M * M).sum(0)
        _all_reduce(squares, placed, stats)
        return M / ((squares / placed.layout.shape[0]).sqrt() + eps)
    if rule == "rms":
        n = placed.layout.shape[0]
        block = (torch.arange(M.shape[0], device=M.device) + placed.start) // (n // blocks)
        squares = torch.zeros(blocks, dtype=M.dtype, device=M.device).index_add_(0, block, M * M)
        _all_reduce(squares, placed, stats)
        return M / ((squares / (n // blocks)).sqrt()[block] + eps)
    raise ValueError(f"update rule {rule!r} has no sharded direction here; spectral goes through spectral_directions")


def _synchronize(t: Tensor) -> None:
    if t.is_cuda:
        torch.cuda.synchronize(t.device)


def timed_direction(M: Tensor, stats: ShardStats, **options: Any) -> Tensor:
    """The spectral direction of one whole matrix, counted and timed (to the device's end of the work) in
    ``stats``."""
    _synchronize(M)
    start = time.perf_counter()
    d = block_direction("spectral", M, **options)
    _synchronize(d)
    stats.ns_calls += 1
    stats.ns_seconds += time.perf_counter() - start
    return d


@dataclass(frozen=True)
class SpectralItem:
    """One spectral parameter's momentum rows on this rank, with how its whole matrix is oriented."""

    M: Tensor
    placed: Placed
    transposed: bool
    blocks: int


def _exchange(send_parts: Sequence[list[Tensor]], recv_sizes: Sequence[int], like: Tensor, group: Any,
              stats: ShardStats) -> list[Tensor]:
    """One ``all_to_all_single``: ``send_parts[r]`` to rank r; the pieces received from each rank."""
    send_sizes = [sum(t.numel() for t in parts) for parts in send_parts]
    flat = [t.reshape(-1) for parts in send_parts for t in parts]
    send = torch.cat(flat) if flat else like.new_empty(0)
    recv = like.new_empty(sum(recv_sizes))
    _synchronize(like)
    start = time.perf_counter()
    dist.all_to_all_single(recv, send, list(recv_sizes), send_sizes, group=group)
    _synchronize(like)
    stats.comm_seconds += time.perf_counter() - start
    stats.bytes_sent += send.numel() * send.element_size()
    return list(recv.split(list(recv_sizes)))


def spectral_directions(items: Sequence[SpectralItem], stats: ShardStats, **ns: Any) -> list[Tensor]:
    """Each item's direction rows on this rank: every matrix is orthogonalized once, by its owner."""
    if not items:
        return []
    group, rank, world = items[0].placed.group, items[0].placed.rank, items[0].placed.world
    if any(item.placed.group is not group for item in items):
        raise ValueError("spectral parameters on different process groups: shard the whole model over one mesh")
    layouts = [item.placed.layout for item in items]
    owners = assign_owners([ns_flops(layout.shape, ns.get("ns_steps", 5)) for layout in layouts], world)
    like = items[0].M
    mine = [i for i, owner in enumerate(owners) if owner == rank]

    to_owner: list[list[Tensor]] = [[] for _ in range(world)]
    for i, item in enumerate(items):
        if item.placed.layout.sharded and owners[i] != rank:
            to_owner[owners[i]].append(item.M)
    from_ranks = [sum(layouts[i].numel_on(r) for i in mine if layouts[i].sharded) if r != rank else 0
                  for r in range(world)]
    received = _exchange(to_owner, from_ranks, like, group, stats)

    whole: dict[int, Tensor] = {}
    offsets = [0] * world
    for i in mine:
        layout = layouts[i]
        if not layout.sharded:
            whole[i] = items[i].M
            continue
        rows = []
        for r in range(world):
            if r == rank:
                rows.append(items[i].M)
                continue
            size = layout.numel_on(r)
            rows.append(received[r][offsets[r]:offsets[r] + size].view(-1, *layout.shape[1:]))
            offsets[r] += size
        whole[i] = torch.cat(rows).view(layout.shape)
    directions = {i: timed_direction(whole[i], stats, transposed=items[i].transposed, blocks=items[i].blocks, **ns)
                  for i in mine}

    back: list[list[Tensor]] = [[] for _ in range(world)]
    for i in mine:
        for r in range(world):
            if r != rank:
                start_row, end_row = layouts[i].rows[r]
                back[r].append(directions[i][start_row:end_row])
    to_me = [sum(layouts[i].numel_on(rank) for i in range(len(items)) if owners[i] == r) if r != rank else 0
             for r in range(world)]
    returned = _exchange(back, to_me, like, group, stats)
    out: list[Tensor] = []
    offsets = [0] * world
    for i, item in enumerate(items):
        if owners[i] == rank:
            start_row, end_row = layouts[i].rows[rank]
            out.append(directions[i][start_row:end_row])
            continue
        owner, size = owners[i], layouts[i].numel_on(rank)
        out.append(returned[owner][offsets[owner]:offsets[owner] + size].view_as(item.M))
        offsets[owner] += size
    return out
