"""What each rank of a spawned CPU process group (gloo, one thread per rank) checks and reports to the test: the
built-in optimizer's step on FSDP2 shards and DDP replicas against one process, in float64; the Newton–Schulz
calls and bytes it spent; 20 training steps of the GPT under DDP and FSDP2; a user's own model, sharded, with
the optimizer built before or after ``fully_shard``."""

from __future__ import annotations

import dataclasses
import functools
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from torch import nn

import mutransfer
import mutransfer.optim.directions as directions
from mutransfer.config import compose
from mutransfer.dist.ranks import Ranks, join, leave
from mutransfer.dist.wrap import spread
from mutransfer.optim.shards import Layout, assign_owners, exchange_bytes, ns_flops
from mutransfer.optim.steepest import SteepestDescent
from mutransfer.schema import Config
from mutransfer.train.data import Corpus, load_corpus
from mutransfer.train.loop import train_model

PARAMS: tuple[tuple[str, tuple[int, ...], str, bool, int], ...] = (
    ("hidden", (7, 5), "spectral", False, 1),
    ("wide", (5, 9), "spectral", False, 1),
    ("two_rows", (2, 6), "spectral", False, 1),
    ("fused_qkv", (12, 5), "spectral", False, 3),
    ("conv1d_qkv", (5, 12), "spectral", True, 3),
    ("embedding", (7, 6), "row_norm", False, 1),
    ("conv1d_head", (6, 9), "row_norm", True, 1),
    ("gain", (10,), "sign", False, 1),
    ("fused_bias", (12,), "rms", False, 3),
    ("bias", (5,), "rms", False, 1),
)
"""name, shape (as stored), rule, transposed (stored (din, dout)), blocks: every rule, uneven shards at world
sizes 2–4, empty ones (two rows over 3 or 4 ranks), fused blocks and shards whose boundaries differ."""
SPECTRAL = sum(1 for _, _, rule, _, _ in PARAMS if rule == "spectral")
STEPS = 2
TRAIN_STEPS = 20
TRAIN_OVERRIDES = ("model.width=32", "model.depth=2", "model.head_dim=16", "parametrization=mup", "optimizer=muon",
                   "parametrization.base_width=32", f"train.steps={TRAIN_STEPS}", "train.batch_size=12",
                   "train.seq_len=16", "train.eval_every=0", "train.eval_batches=2", "train.device=cpu",
                   "train.compile=off", "train.grad_clip=1.0", "data=text")


def full_tensors(seed: int) -> dict[str, list[torch.Tensor]]:
    """Each parameter's initial value and ``STEPS`` gradients, the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    return {name: [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(STEPS + 1)]
            for name, shape, _, _, _ in PARAMS}


def groups_of(params: dict[str, torch.Tensor]) -> list[dict[str, Any]]:
    groups = []
    for name, shape, rule, transposed, blocks in PARAMS:
        group: dict[str, Any] = {"params": [params[name]], "update": rule, "name": name, "lr": 0.1,
                                 "weight_decay": 0.01}
        if rule == "spectral":
            group["scale_rule"] = "mup"
            group["scale_shape"] = (shape[1], shape[0]) if transposed else None
        if transposed or blocks > 1:
            group["transposed"], group["blocks"] = transposed, blocks
        groups.append(group)
    return groups


def stepped(params: dict[str, torch.Tensor], grads: Callable[[str, int], torch.Tensor],
            optimizer: torch.optim.Optimizer) -> None:
    for step in range(STEPS):
        for name, p in params.items():
            p.grad = grads(name, step)
        optimizer.step()


def reference(tensors: dict[str, list[torch.Tensor]], build: Callable[[list[Any]], torch.optim.Optimizer],
              with_groups: bool) -> dict[str, torch.Tensor]:
    params = {name: nn.Parameter(values[0].clone()) for name, values in tensors.items()}
    opt = build(groups_of(params) if with_groups else list(params.values()))
    stepped(params, lambda name, step: tensors[name][step + 1].clone(), opt)
    return {name: p.detach() for name, p in params.items()}


@contextmanager
def counting_msign() -> Iterator[list[int]]:
    """Count the Newton–Schulz calls this rank makes inside the block."""
    original, calls = directions.msign, [0]

    def counted(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls[0] += 1
        return original(*args, **kwargs)
    directions.msign = counted
    try:
        yield calls
    finally:
        directions.msign = original


def optimizer_checks(ranks: Ranks) -> dict[str, Any]:
    """Max |sharded − one process| per parameter and optimizer, the Newton–Schulz calls and bytes of this rank,
    and the error of the wrong design that orthogonalizes each shard alone."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (ranks.world,))
    tensors = full_tensors(seed=7)
    out: dict[str, Any] = {"errors": {}, "rows": {}}
    builders: dict[str, tuple[Callable[[list[Any]], torch.optim.Optimizer], bool]] = {
        "steepest": (lambda groups: SteepestDescent(groups, lr=0.1, ns_dtype=torch.float64), True),
        "adamw": (lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1), False),
        "sgd": (lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True), False),
    }
    for label, (build, with_groups) in builders.items():
        ref = reference(tensors, build, with_groups)
        params = {name: nn.Parameter(distribute_tensor(values[0].clone(), mesh, [Shard(0)]))
                  for name, values in tensors.items()}
        opt = build(groups_of(params) if with_groups else list(params.values()))
        with counting_msign() as calls:
            stepped(params, lambda name, step: distribute_tensor(tensors[name][step + 1].clone(), mesh, [Shard(0)]),
                    opt)
        start = {name: params[name].to_local().shape[0] for name in params}
        for name, p in params.items():
            layout = Layout.of(p.shape, ranks.world, True)
            begin, end = layout.rows[ranks.rank]
            out["errors"][(label, name)] = float((p.to_local() - ref[name][begin:end]).abs().max()) \
                if end > begin else 0.0
            out["rows"][name] = start[name]
        if label == "steepest":
            out["ns_calls"] = calls[0]
            out["stats_ns_calls"] = opt.shard_stats.ns_calls
    out.update(replicated_checks(ranks, tensors))
    out.update(exchange_checks(ranks, mesh, tensors))
    return out


def replicated_checks(ranks: Ranks, tensors: dict[str, list[torch.Tensor]]) -> dict[str, Any]:
    """DDP's layout: every rank holds the whole tensor and the same gradient."""
    build = lambda groups: SteepestDescent(groups, lr=0.1, ns_dtype=torch.float64)  # noqa: E731
    ref = reference(tensors, build, True)
    params = {name: nn.Parameter(values[0].clone()) for name, values in tensors.items()}
    opt = build(groups_of(params))
    opt.replicated_over(ranks.group)
    with counting_msign() as calls:
        stepped(params, lambda name, step: tensors[name][step + 1].clone(), opt)
    error = max(float((p.detach() - ref[name]).abs().max()) for name, p in params.items())
    return {"replicated_error": error, "replicated_ns_calls": calls[0]}


def exchange_checks(ranks: Ranks, mesh: Any, tensors: dict[str, list[torch.Tensor]]) -> dict[str, Any]:
    """The spectral parameters alone: the bytes this rank sent against the model's count, and the error of
    orthogonalizing each rank's shard on its own (the mistake the equality check must catch)."""
    from torch.distributed.tensor import Shard, distribute_tensor

    spectral = [spec for spec in PARAMS if spec[2] == "spectral"]
    params = {name: nn.Parameter(distribute_tensor(tensors[name][0].clone(), mesh, [Shard(0)]))
              for name, *_ in spectral}
    groups = [g for g in groups_of({**{n: torch.zeros(1) for n, *_ in PARAMS}, **params})
              if g["update"] == "spectral"]
    opt = SteepestDescent(groups, lr=0.1, ns_dtype=torch.float64)
    stepped(params, lambda name, step: distribute_tensor(tensors[name][step + 1].clone(), mesh, [Shard(0)]), opt)
    layouts = [Layout.of(shape, ranks.world, True) for _, shape, *_ in spectral]
    owners = assign_owners([ns_flops(layout.shape) for layout in layouts], ranks.world)
    modelled = STEPS * exchange_bytes(layouts, owners, ranks.rank, 8)
    name, shape = "hidden", (7, 5)
    layout = Layout.of(shape, ranks.world, True)
    begin, end = layout.rows[ranks.rank]
    grad = tensors[name][1]
    whole = directions.block_direction("spectral", grad, ns_dtype=torch.float64)[begin:end]
    alone = directions.block_direction("spectral", grad[begin:end], ns_dtype=torch.float64) if end > begin \
        else whole
    return {"bytes_sent": opt.shard_stats.bytes_sent, "bytes_modelled": modelled,
            "shard_alone_error": float((alone - whole).abs().max()) if end > begin else None}


def training_checks(ranks: Ranks, text: Path) -> dict[str, float]:
    """The final training and validation loss of 20 GPT steps per (parallel, dtype)."""
    out = {}
    for parallel in ("ddp", "fsdp"):
        for dtype in (torch.float64, torch.float32):
            out[(parallel, str(dtype))] = train_losses(dataclasses.replace(ranks, parallel=parallel), text, dtype)
    return out


@functools.lru_cache(maxsize=None)
def training_run(text: Path) -> tuple[Config, Corpus]:
    """The 20-step run's config and corpus, composed and read once per process."""
    cfg = compose([*TRAIN_OVERRIDES, f"data.path={text}"])
    return cfg, load_corpus(cfg.data, cfg.train.seq_len)


def train_losses(ranks: Ranks | None, text: Path, dtype: torch.dtype) -> float:
    cfg, corpus = training_run(text)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        result, _ = train_model(cfg, corpus, ranks=ranks)
    finally:
        torch.set_default_dtype(previous)
    return result.curve[-1]["train_loss"]


class UserModel(nn.Module):
    """A user's own model: an input layer, a ModuleList of residual MLP layers, a readout."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(8, width, bias=False)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(2))
        self.out = nn.Linear(width, 3, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for layer in self.layers:
            h = h + torch.tanh(layer(h))
        return self.out(h)


USER_ROLES = {"inp.weight": "embedding", "out.weight": "readout", "*.bias": "bias", "*": "hidden"}


def user_model_loss(ranks: Ranks | None) -> float:
    """Five steps of ``UserModel`` through parametrize → (fully_shard) → the tool's optimizer, in float64."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        model = UserModel(24)
        plan = mutransfer.parametrize(model, USER_ROLES, preset="mup", optimizer="muon", width=24, base_width=12,
                                      factory=UserModel, seed=3)
        trained = model if ranks is None else spread(model, ranks)
        opt = mutransfer.build_optimizer(model, plan, lr=0.05)
        g = torch.Generator().manual_seed(5)
        x, y = torch.randn(12, 8, generator=g), torch.randn(12, 3, generator=g)
        if ranks is not None:
            x, y = ranks.rows(x), ranks.rows(y)
        for _ in range(5):
            loss = ((trained(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        loss = ((trained(x) - y) ** 2).mean().detach()
        return float(loss if ranks is None else ranks.mean(loss))
    finally:
        torch.set_default_dtype(previous)


ORDERS = ("before", "after", "unsharded_at_step")
"""Where a user builds the optimizer: before ``fully_shard`` (refused), after it, and after it with FSDP2 keeping
the unsharded parameters on the model through the step (``set_reshard_after_backward(False)``)."""


def order_checks(ranks: Ranks) -> dict[str, dict[str, Any]]:
    """Per order in ``ORDERS``: the mean loss before each of five steps of ``UserModel``, the one-line error each
    step raised (none when it stepped), and how many of the optimizer's parameters the model held at the first."""
    from torch.distributed.fsdp import FSDPModule

    out = {}
    for order in ORDERS:
        model = UserModel(24)
        plan = mutransfer.parametrize(model, USER_ROLES, preset="mup", optimizer="muon", width=24, base_width=12,
                                      factory=UserModel, seed=3)
        early = mutransfer.build_optimizer(model, plan, lr=0.05) if order == "before" else None
        spread(model, ranks)
        opt = early or mutransfer.build_optimizer(model, plan, lr=0.05)
        for module in model.modules():
            if isinstance(module, FSDPModule):
                module.set_reshard_after_backward(order != "unsharded_at_step")
        g = torch.Generator().manual_seed(5)
        x, y = ranks.rows(torch.randn(12, 8, generator=g)), ranks.rows(torch.randn(12, 3, generator=g))
        losses, errors, held = [], [], []
        for _ in range(5):
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            current = {id(p) for p in model.parameters()}
            held.append(sum(id(p) in current for group in opt.param_groups for p in group["params"]))
            try:
                opt.step()
            except mutransfer.UserError as exc:
                errors.append(exc.one_line())
            opt.zero_grad(set_to_none=True)
            losses.append(float(ranks.mean(loss.detach())))
        out[order] = {"losses": losses, "errors": errors, "held": held[0], "params": len(list(model.parameters()))}
    return out


def rank_main(rank: int, world: int, port: int, folder: str, text: str) -> None:
    """One rank: join the group, run every check, save what it found as ``rank{rank}.pt`` in ``folder``."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    ranks = join("cpu", "fsdp", 10.0)
    try:
        report = {"optimizer": optimizer_checks(ranks), "train": training_checks(ranks, Path(text)),
                  "user_model": user_model_loss(dataclasses.replace(ranks, parallel="fsdp")),
                  "order": order_checks(dataclasses.replace(ranks, parallel="fsdp"))}
        torch.save(report, Path(folder) / f"rank{rank}.pt")
    finally:
        leave()
