"""A lever the profile pointed to on a μP + Muon trial (Newton–Schulz, about a quarter of a width-256 trial,
docs/performance.md): orthogonalising the matrices of one shape together, as one batched product, instead of one
by one. Times one optimizer step's Newton–Schulz on the shapes of the default sweep's width-256 model both ways
and checks whether the batched result is bit-identical (the rule for a change that ships on by default). Tried
and not kept: docs/performance.md has the figures.

    python scripts/bench_newton_schulz.py [--width 256] [--threads 2] [--repeats 30]

Run it on an otherwise idle machine."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Optional, Sequence

import torch

import mutransfer.optim.directions as directions
from mutransfer.config import compose
from mutransfer.optim.newton_schulz import msign
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402


def muon_shapes(width: int) -> list[tuple[int, ...]]:
    """The shapes of the matrices the default sweep's μP + Muon setup orthogonalises in one step at ``width``:
    recorded from one training step of that trial."""
    spec = load_spec("default")
    setup = next(s for s in spec.setups if s.label == "mup_muon")
    cfg = compose([*setup.overrides, *spec.overrides, f"model.width={width}", "train.steps=1", "train.eval_every=0"])
    shapes: list[tuple[int, ...]] = []
    original = directions.msign

    def recording(G: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        shapes.append(tuple(G.shape))
        return original(G, *args, **kwargs)  # type: ignore[arg-type]

    directions.msign = recording
    try:
        train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    finally:
        directions.msign = original
    return shapes


def seconds(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    shapes = muon_shapes(args.width)
    torch.manual_seed(0)
    grads = [torch.randn(shape) for shape in shapes]
    by_shape: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for i, g in enumerate(grads):
        by_shape[tuple(g.shape)].append(i)

    def one_by_one() -> list[torch.Tensor]:
        return [msign(g) for g in grads]

    def batched() -> list[torch.Tensor]:
        out: list[torch.Tensor] = [torch.empty(0)] * len(grads)
        for indices in by_shape.values():
            stacked = msign(torch.stack([grads[i] for i in indices]))
            for j, i in enumerate(indices):
                out[i] = stacked[j]
        return out

    one_by_one(), batched()
    identical = all(torch.equal(a, b) for a, b in zip(one_by_one(), batched()))
    largest = max(abs(a - b).max().item() for a, b in zip(one_by_one(), batched()))
    separate, together = seconds(one_by_one, args.repeats), seconds(batched, args.repeats)
    print(f"width {args.width}, {args.threads} thread(s): {len(shapes)} matrices in {len(by_shape)} shapes "
          f"({', '.join(f'{len(v)}×{k}' for k, v in by_shape.items())})")
    print(f"Newton-Schulz per step: one by one {1000 * separate:.2f} ms, batched by shape {1000 * together:.2f} ms "
          f"({separate / together:.3f}x); bit-identical: {identical} (largest difference {largest:.2g})")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
