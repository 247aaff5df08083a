"""What the mixture of experts' dropless dispatch costs: the rows its batched matmul computes over the active ones
(each expert's group padded to the largest load) at every training step of a real run, per balancing rate, and the
wall time of the trained run's first MoE layer (forward and backward, its routing as trained) beside a dense MLP of
the same active FLOPs (hidden size top_k × the expert's). Writes the kept table docs/moe.md reads:

    python scripts/bench_moe.py [--steps 150] [--widths 64,256] [--rates 0.001,0.03] [--repeats 20]
                                [--out docs/data/moe/dispatch.csv]

Run it on an otherwise idle machine."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import pandas as pd
import torch

from mutransfer.config import compose
from mutransfer.files import atomic_write_text
from mutransfer.model.gpt import MLP
from mutransfer.model.moe import MoE, expert_hidden
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

RUN = ["model=moe", "parametrization=mup", "optimizer=muon", "model.depth=2", "train.batch_size=16",
       "train.seq_len=128", "train.eval_every=0"]
"""The study's μP + Muon setup (sweeps/moe.yaml) at its default learning rate."""


def trained_layer(width: int, steps: int, rate: float) -> tuple[list[dict[str, Any]], MoE, torch.Tensor]:
    """Each MoE layer's padded rows over active rows, and its largest load over the mean, at every training step;
    the run's first MoE layer as trained, and its input at the last step."""
    cfg = compose([*RUN, f"model.width={width}", f"train.steps={steps}", f"model.moe.balance_rate={rate}"])
    rows: list[dict[str, Any]] = []
    layers: list[tuple[MoE, torch.Tensor]] = []
    original = MoE.forward

    def recording(self: MoE, x: torch.Tensor) -> torch.Tensor:
        out = original(self, x)
        if self.training and self.load is not None:
            rows.append({"width": width, "balance_rate": rate, "padding": self.padding,
                         "max_over_mean": float(self.load.max() / self.load.float().mean())})
            layers.append((self, x.detach()))
            del layers[:-cfg.model.depth]  # the last step's layers alone
        return out

    MoE.forward = recording  # type: ignore[method-assign]
    try:
        train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    finally:
        MoE.forward = original  # type: ignore[method-assign]
    depth = cfg.model.depth
    for i, row in enumerate(rows):
        row.update(step=i // depth + 1, layer=i % depth)
    layer, x = layers[-cfg.model.depth]
    return rows, layer, x


def layer_seconds(module: torch.nn.Module, x: torch.Tensor, repeats: int) -> float:
    """The median wall time of one forward and backward of ``module`` on ``x``."""
    times = []
    for _ in range(repeats + 2):
        began = time.perf_counter()
        module(x).square().mean().backward()
        times.append(time.perf_counter() - began)
    return statistics.median(times[2:])


def timing_row(width: int, layer: MoE, x: torch.Tensor, repeats: int) -> dict[str, Any]:
    """A trained MoE layer (its balancing frozen: evaluation mode) on its input at the last training step, beside a
    dense MLP of its active FLOPs on the same input."""
    cfg = compose([*RUN, f"model.width={width}"])
    assert cfg.model.moe is not None
    dense = MLP(cfg.model, None, None, round(expert_hidden(cfg.model, width)) * cfg.model.moe.top_k)
    for p in dense.parameters():
        torch.nn.init.normal_(p, std=0.02)
    layer.eval()
    moe_s, dense_s = layer_seconds(layer, x, repeats), layer_seconds(dense, x, repeats)
    return {"moe_ms": 1000 * moe_s, "dense_ms": 1000 * dense_s, "time_ratio": moe_s / dense_s,
            "timed_padding": layer.padding}


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--widths", default="64,256")
    parser.add_argument("--rates", default="0.001,0.03", help="model.moe.balance_rate values")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("docs/data/moe/dispatch.csv"))
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    table = []
    for rate in (float(r) for r in args.rates.split(",")):
        for width in (int(w) for w in args.widths.split(",")):
            rows, layer, x = trained_layer(width, args.steps, rate)
            steps = pd.DataFrame(rows)
            table.append({"width": width, "balance_rate": rate, "steps": int(steps["step"].max()),
                          "padding_mean": steps["padding"].mean(), "padding_p95": steps["padding"].quantile(0.95),
                          "padding_last50": steps[steps["step"] > args.steps - 50]["padding"].mean(),
                          "load_max_over_mean": steps["max_over_mean"].max(), **timing_row(width, layer, x, args.repeats)})
    frame = pd.DataFrame(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, frame.round(4).to_csv(index=False))
    print(frame.round(3).to_string(index=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
