"""What a training step of the built-in GPT (μP + Muon) costs on N CPU ranks (torch.distributed, gloo, one torch
thread per rank), under DDP and under FSDP2, and how many bytes it moves:

    python scripts/bench_distributed.py [--width 256] [--depth 2] [--ranks 1 2 4] [--parallel ddp fsdp]
        [--steps 6] [--batch-size 16] [--out docs/data/distributed/cost.csv]
    python scripts/bench_distributed.py --table docs/data/distributed/cost.csv   # the table docs/distributed.md shows

For each (parallel, N) it spawns N ranks and, after one warm-up step, times ``--steps`` steps: the whole step,
forward + backward (``compute_s``: this includes DDP's gradient all-reduce, or FSDP's parameter all-gathers and
gradient reduce-scatter, which overlap the computation and are not timed apart), the optimizer's step, the
Newton–Schulz calls in it (``ns_s``, every ``msign`` call timed) and the optimizer's own collectives
(``opt_comm_s``, ``ShardStats.comm_seconds``). Each figure is
a rank's median over the steps; the table shows the slowest rank's. Bytes are per rank and step, the largest rank's:

- ``opt_bytes_measured``: ``ShardStats.bytes_sent``, everything the optimizer sent (its two exchanges of spectral
  matrices and the all-reduces of row-norm / RMS rules over a sharded dimension; the GPT has none of the latter:
  its gains are ``sign``, it has no biases, and its embedding and head are row-normalized along unsharded rows).
- ``opt_bytes_modelled``: ``shards.exchange_bytes`` of the spectral matrices, so the two columns are equal here;
  a rank whose measured bytes differ from its modelled ones is printed as a warning.
- ``grad_bytes_modelled``: the framework's traffic, P parameters of 4 bytes: a DDP ring all-reduce sends
  2(N−1)/N·P·4; FSDP's all-gathers (forward, backward) and reduce-scatter 3(N−1)/N·P·4. The FSDP figure is an
  upper bound: FSDP2 keeps the root's own parameters (embedding, head, final norm) after the forward, gathering
  them once, and pads uneven shards.

On a 2-core CPU no speed-up is expected: N ranks share two cores, and gloo's collectives cost CPU time too. The
figures are reported as they come. ``--out`` keeps them as a CSV table (under docs/data/ for the record)."""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.tensor import DTensor

import mutransfer.optim.directions as directions
from mutransfer.config import compose
from mutransfer.dist.launch import free_port
from mutransfer.dist.ranks import Ranks, join, leave
from mutransfer.dist.wrap import spread
from mutransfer.model.apply import build_optimizer
from mutransfer.model_kinds import build_model
from mutransfer.optim.shards import Layout, assign_owners, exchange_bytes, ns_flops
from mutransfer.optim.steepest import SteepestDescent
from mutransfer.train.data import Batches, load_corpus
from mutransfer.train.loop import loss_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

COLUMNS = ("ranks", "parallel", "step_s", "compute_s", "optimizer_s", "ns_s", "opt_comm_s", "opt_bytes_measured",
           "opt_bytes_modelled", "grad_bytes_modelled", "ns_calls_per_rank", "tokens_per_s")
TIMES = ("step_s", "compute_s", "optimizer_s", "ns_s", "opt_comm_s")
SEQ_LEN = 64
TIMEOUT_S = 600.0


def overrides(width: int, depth: int, batch_size: int) -> list[str]:
    return ["parametrization=mup", "optimizer=muon", f"model.width={width}", f"model.depth={depth}",
            f"train.batch_size={batch_size}", f"train.seq_len={SEQ_LEN}", "train.device=cpu", "train.compile=off"]


def modelled_exchange(optimizer: torch.optim.Optimizer, world: int, rank: int) -> int:
    """``exchange_bytes`` of the optimizer's spectral matrices, laid out and owned as its step lays them out."""
    spectral = [(p, g["ns_steps"]) for g in optimizer.param_groups if g["update"] == "spectral" for p in g["params"]]
    if world == 1 or not spectral:
        return 0
    layouts = [Layout.of(p.shape, world, isinstance(p, DTensor)) for p, _ in spectral]
    owners = assign_owners([ns_flops(layout.shape, steps) for layout, (_, steps) in zip(layouts, spectral)], world)
    return exchange_bytes(layouts, owners, rank, spectral[0][0].element_size())


def measure(ranks: Ranks, args: dict[str, Any], tokens: torch.Tensor, vocab: int) -> dict[str, Any]:
    """This rank's medians over the timed steps, its bytes and Newton–Schulz calls per step."""
    cfg = compose(overrides(args["width"], args["depth"], args["batch_size"]))
    model, plan = build_model(cfg, vocab, ranks.device)
    trained = spread(model, ranks)
    optimizer = build_optimizer(model, plan)
    assert isinstance(optimizer, SteepestDescent), "optimizer=muon builds the built-in SteepestDescent"
    if ranks.parallel == "ddp":
        optimizer.replicated_over(ranks.group)
    batches = Batches(tokens, cfg.train.batch_size, SEQ_LEN, cfg.train.seed, ranks.device)
    ns_time, original = [0.0], directions.msign

    def timed_msign(*a: Any, **k: Any) -> torch.Tensor:
        began = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            ns_time[0] += time.perf_counter() - began

    directions.msign = timed_msign
    rows: list[dict[str, float]] = []
    try:
        for step in range(args["steps"] + 1):
            before, ns_before = asdict(optimizer.shard_stats), ns_time[0]
            began = time.perf_counter()
            x, y = batches.next()
            loss_of(trained, ranks.rows(x), ranks.rows(y)).backward()
            computed = time.perf_counter()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            done = time.perf_counter()
            spent = {key: value - before[key] for key, value in asdict(optimizer.shard_stats).items()}
            if step:  # step 0 warms up
                rows.append({"step_s": done - began, "compute_s": computed - began, "optimizer_s": done - computed,
                             "ns_s": ns_time[0] - ns_before, "opt_comm_s": spent["comm_seconds"],
                             "bytes": spent["bytes_sent"], "ns_calls": spent["ns_calls"]})
    finally:
        directions.msign = original
    out: dict[str, Any] = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    n, world = sum(p.numel() for p in model.parameters()), ranks.world
    factor = {"ddp": 2, "fsdp": 3}[ranks.parallel]
    out["grad_bytes_modelled"] = round(factor * (world - 1) / world * n * next(model.parameters()).element_size())
    out["modelled"] = modelled_exchange(optimizer, world, ranks.rank)
    return out


def rank_main(rank: int, world: int, port: int, parallel: str, args: dict[str, Any], tokens: torch.Tensor,
              vocab: int, folder: str) -> None:
    """One rank: join the group, measure, and (rank 0) write every rank's figures to ``folder``/ranks.json."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    ranks = join("cpu", parallel, TIMEOUT_S)
    try:
        mine = measure(ranks, args, tokens, vocab)
        gathered: Optional[list[Any]] = [None] * world if ranks.main else None
        dist.gather_object(mine, gathered, dst=0, group=ranks.group)
        if ranks.main:
            (Path(folder) / "ranks.json").write_text(json.dumps(gathered), encoding="utf-8")
    finally:
        leave()


def spawn(world: int, args: tuple[Any, ...]) -> None:
    """Run ``world`` ranks of ``rank_main`` to the end; whatever ends the wait (a rank that failed, Ctrl-C, SIGTERM)
    ends every rank."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    context = mp.start_processes(rank_main, args=args, nprocs=world, start_method="spawn", join=False)
    try:
        while not context.join():
            pass
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
            process.join()


def table_row(world: int, parallel: str, per_rank: list[dict[str, Any]], batch_size: int) -> dict[str, Any]:
    row: dict[str, Any] = {"ranks": world, "parallel": parallel}
    row.update({key: round(max(r[key] for r in per_rank), 6) for key in TIMES})
    row["opt_bytes_measured"] = round(max(r["bytes"] for r in per_rank))
    row["opt_bytes_modelled"] = max(r["modelled"] for r in per_rank)
    row["grad_bytes_modelled"] = per_rank[0]["grad_bytes_modelled"]
    row["ns_calls_per_rank"] = round(max(r["ns_calls"] for r in per_rank))
    row["tokens_per_s"] = round(batch_size * SEQ_LEN / row["step_s"])
    for rank, r in enumerate(per_rank):
        if r["bytes"] != r["modelled"]:
            print(f"warning: {parallel} N={world} rank {rank} sent {r['bytes']:.0f} bytes a step, the model says "
                  f"{r['modelled']}", flush=True)
    return row


def markdown_table(path: Path) -> str:
    """The kept table as docs/distributed.md shows it (times in ms, bytes in MiB)."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))

    def ms(value: str) -> str:
        return f"{float(value) * 1000:.0f} ms"

    def mib(value: str) -> str:
        return f"{int(value) / 2**20:.2f} MiB"
    lines = ["| ranks | mode | step | forward + backward | optimizer | of it Newton–Schulz | of it exchange | optimizer "
             "bytes (measured = modelled) | gradient bytes (modelled) | Newton–Schulz calls on a rank | tokens/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['ranks']} | {r['parallel']} | {ms(r['step_s'])} | {ms(r['compute_s'])} | {ms(r['optimizer_s'])} | "
              f"{ms(r['ns_s'])} | {ms(r['opt_comm_s'])} | {mib(r['opt_bytes_measured'])} | "
              f"{mib(r['grad_bytes_modelled'])} | {r['ns_calls_per_rank']} | {float(r['tokens_per_s']):,.0f} |"
              for r in rows]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--parallel", nargs="+", choices=("ddp", "fsdp"), default=["ddp", "fsdp"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("docs/data/distributed/cost.csv"))
    parser.add_argument("--table", type=Path, help="Print a kept table as docs/distributed.md shows it, and stop.")
    args = parser.parse_args(argv)
    if args.table is not None:
        print(markdown_table(args.table))
        return 0
    bad = [n for n in args.ranks if n < 1 or args.batch_size % n]
    if bad or args.steps < 1:
        parser.error(f"--steps must be positive and every rank count divide --batch-size {args.batch_size}: {bad}")
    cfg = compose(overrides(args.width, args.depth, args.batch_size))
    corpus = load_corpus(cfg.data, SEQ_LEN)
    tokens = torch.as_tensor(corpus.train[:4_000_000]).clone()
    settings = {"width": args.width, "depth": args.depth, "steps": args.steps, "batch_size": args.batch_size}
    rows: list[dict[str, Any]] = []
    print(" ".join(COLUMNS), flush=True)
    for parallel in args.parallel:
        for world in args.ranks:
            with tempfile.TemporaryDirectory() as folder:
                spawn(world, (world, free_port(), parallel, settings, tokens, corpus.vocab_size, folder))
                per_rank = json.loads((Path(folder) / "ranks.json").read_text(encoding="utf-8"))
            rows.append(table_row(world, parallel, per_rank, args.batch_size))
            print(" ".join(f"{v:>{len(c)}.4g}" if isinstance(v, float) else f"{v:>{len(c)}}"
                           for c, v in rows[-1].items()), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
