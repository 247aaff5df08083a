"""How a parameter's rows lie over the ranks of a process group, who orthogonalizes each hidden matrix, and what
that costs: plain numbers in and out, no communication.

FSDP2 (``fully_shard``) splits dim 0 as ``torch.chunk`` does: ``ceil(n / world)`` rows per rank, so the last
ranks can hold fewer rows, or none. DDP replicates: every rank holds every row.

Each spectral matrix gets one owner rank. Owners are chosen greedily by Newton–Schulz FLOPs, largest matrix
first, each to the least loaded rank (Graham's LPT rule): the same answer on every rank, no padding, and uneven
or empty shards need nothing special.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Layout", "chunk_rows", "ns_flops", "assign_owners", "exchange_bytes"]


def chunk_rows(n: int, world: int) -> tuple[tuple[int, int], ...]:
    """Each rank's rows [start, end) of a dim of ``n`` rows split as ``torch.chunk(…, world)`` splits it."""
    if world < 1:
        raise ValueError(f"world size must be at least 1, got {world}")
    size = math.ceil(n / world) if n else 0
    return tuple((min(r * size, n), min((r + 1) * size, n)) for r in range(world))


@dataclass(frozen=True)
class Layout:
    """A parameter over a process group: its global shape, each rank's rows of dim 0, and whether those rows are
    shards (FSDP2) or every rank holds the whole tensor (DDP)."""

    shape: tuple[int, ...]
    rows: tuple[tuple[int, int], ...]
    sharded: bool

    @classmethod
    def of(cls, shape: Sequence[int], world: int, sharded: bool) -> "Layout":
        shape = tuple(int(s) for s in shape)
        rows = chunk_rows(shape[0], world) if sharded else ((0, shape[0]),) * world
        return cls(shape, rows, sharded)

    @property
    def row_numel(self) -> int:
        """Elements per row of dim 0."""
        return math.prod(self.shape[1:])

    def numel_on(self, rank: int) -> int:
        start, end = self.rows[rank]
        return (end - start) * self.row_numel


def ns_flops(shape: Sequence[int], steps: int = 5) -> float:
    """Multiply-adds ×2 of ``steps`` quintic Newton–Schulz iterations on a (…, m, n) matrix (m ≤ n after the
    transpose ``msign`` does): X Xᵀ is 2m²n, A·A is 2m³ and B·X is 2m²n per step."""
    *batch, rows, cols = shape
    m, n = min(rows, cols), max(rows, cols)
    return math.prod(batch) * steps * (4.0 * m * m * n + 2.0 * m ** 3)


def assign_owners(costs: Sequence[float], world: int) -> tuple[int, ...]:
    """Each item's owner rank: largest cost first, each to the least loaded rank (ties: the lower rank)."""
    load = [0.0] * world
    owners = [0] * len(costs)
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        rank = min(range(world), key=lambda r: (load[r], r))
        owners[index] = rank
        load[rank] += costs[index]
    return tuple(owners)


def exchange_bytes(layouts: Sequence[Layout], owners: Sequence[int], rank: int, itemsize: int) -> int:
    """Bytes ``rank`` sends in one step's two exchanges: a shard to each matrix's owner and, as owner, each other
    rank's rows of the direction back (for a replicated matrix, the whole matrix to every other rank)."""
    sent = 0
    world = len(layouts[0].rows) if layouts else 1
    for layout, owner in zip(layouts, owners):
        if rank == owner:
            sent += sum(layout.numel_on(r) for r in range(world) if r != rank)
        elif layout.sharded:
            sent += layout.numel_on(rank)
    return sent * itemsize
