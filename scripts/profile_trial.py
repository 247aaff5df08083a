"""Where a default-sweep trial's seconds go: one trial of ``sweeps/default.yaml`` at width 256 (each setup's grid
centre), trained as the sweep trains it, with the loop's parts timed from outside — building the model, the data
batches, the forward pass, the backward pass, the rest of the step (clipping, the optimizer with Newton–Schulz
shown apart, the loss records), the evaluations — and the loop around the step as what the parts leave of the
whole. The training FLOPs per step
(``train.flops``) over the forward + backward + optimizer seconds give the fraction of the matmul peak this
machine reaches (``scripts/bench_throughput.py``'s square-matmul peak on the same threads).

    python scripts/profile_trial.py                 # both setups, 2 threads
    python scripts/profile_trial.py --threads 1 --width 128

Run it on an otherwise idle machine."""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import matmul_peak  # noqa: E402

import mutransfer.optim.directions as directions  # noqa: E402
import mutransfer.train.loop as loop  # noqa: E402
from mutransfer.config import compose  # noqa: E402
from mutransfer.sweep.spec.sweep_spec import load_spec  # noqa: E402
from mutransfer.train.data import load_corpus  # noqa: E402
from mutransfer.train.flops import training_flops  # noqa: E402

PARTS = ("build", "data", "forward", "backward", "optimizer", "newton-schulz", "evaluation")
LABELS = {"optimizer": "optimizer, clipping, records", "newton-schulz": "Newton-Schulz (in the optimizer)"}


class Clock:
    """Seconds per part; ``forward`` inside an evaluation counts as the evaluation's."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.inside: list[str] = []

    def timed(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.inside and part == "forward":
                return fn(*args, **kwargs)
            self.inside.append(part)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start
                self.inside.pop()
        return wrapper


@contextmanager
def patched(clock: Clock) -> Iterator[None]:
    """The loop's parts wrapped by ``clock`` for the duration."""
    saved = {"loss_of": loop.loss_of, "evaluate": loop.evaluate, "msign": directions.msign,
             "next": loop.Batches.next, "init": loop._Run.__init__, "backward": torch.Tensor.backward}
    loop.loss_of = clock.timed("forward", saved["loss_of"])
    loop.evaluate = clock.timed("evaluation", saved["evaluate"])
    directions.msign = clock.timed("newton-schulz", saved["msign"])
    loop.Batches.next = clock.timed("data", saved["next"])  # type: ignore[method-assign]
    loop._Run.__init__ = clock.timed("build", saved["init"])  # type: ignore[method-assign]
    torch.Tensor.backward = clock.timed("backward", saved["backward"])  # type: ignore[method-assign]
    try:
        yield
    finally:
        loop.loss_of, loop.evaluate, directions.msign = saved["loss_of"], saved["evaluate"], saved["msign"]
        loop.Batches.next = saved["next"]  # type: ignore[method-assign]
        loop._Run.__init__ = saved["init"]  # type: ignore[method-assign]
        torch.Tensor.backward = saved["backward"]  # type: ignore[method-assign]


def profile(overrides: list[str]) -> tuple[dict[str, float], float, float]:
    """(seconds per part, the whole trial's seconds, training FLOPs) of one trial under ``overrides``."""
    cfg = compose(overrides)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    clock = Clock()
    with patched(clock):
        original = loop._Run._step

        def step(self: Any, number: int) -> list[float]:
            start = time.perf_counter()
            losses = original(self, number)
            clock.seconds["step"] += time.perf_counter() - start
            return losses

        loop._Run._step = step  # type: ignore[method-assign]
        try:
            start = time.perf_counter()
            loop.train_model(cfg, corpus)
            whole = time.perf_counter() - start
        finally:
            loop._Run._step = original  # type: ignore[method-assign]
    seconds = dict(clock.seconds)
    inside = seconds.pop("step") - seconds.get("data", 0.0) - seconds.get("forward", 0.0) - seconds.get("backward", 0.0)
    seconds["optimizer"] = inside
    return seconds, whole, training_flops(cfg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = load_spec("default")
    peak = matmul_peak(torch.device("cpu"))
    print(f"matmul peak on {args.threads} threads: {peak / 1e9:.0f} GFLOP/s; width {args.width}")
    for setup in spec.setups:
        grid = setup.search[0]
        centre = 2.0 ** ((grid.min + grid.max) / 2)
        overrides = [*spec.overrides, *setup.overrides, f"model.width={args.width}", f"optimizer.lr={centre}",
                     "train.device=cpu", f"train.threads={args.threads}"]
        seconds, whole, flops = profile(overrides)
        parts = {part: seconds.get(part, 0.0) for part in PARTS}
        parts["optimizer"] -= parts["newton-schulz"]
        rest = whole - sum(parts.values())
        model = seconds.get("forward", 0.0) + seconds.get("backward", 0.0)
        print(f"\n{setup.label}: {whole:.1f} s; forward + backward reach {flops / model / peak:.2f} of the matmul "
              f"peak (their FLOPs: train.flops)")
        for part, value in [*parts.items(), ("rest (the loop around the step)", rest)]:
            print(f"  {LABELS.get(part, part):34s} {value:7.2f} s  {100 * value / whole:5.1f} %")


if __name__ == "__main__":
    main()
