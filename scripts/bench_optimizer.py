"""Optimizer step time as a fraction of forward+backward time, measured vs. the FLOP-count prediction.

    python scripts/bench_optimizer.py [--widths 64,128,256,512,1024] [--device cpu] [--repeats 5]

Prediction: Newton–Schulz costs 5·(4m²n + 2m³) FLOPs for an m×n hidden matrix (m ≤ n); forward+backward
costs 6 FLOPs per matmul parameter per token plus 12·T·d per layer and token for attention scores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import torch

from mutransfer.model_kinds import build_model
from mutransfer.config import compose
from mutransfer.model.apply import build_optimizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402


def ns_flops(shape: tuple[int, ...], steps: int) -> float:
    m, n = sorted(shape[-2:])
    return steps * (4 * m * m * n + 2 * m**3)


def model_flops(plan, tokens: int, seq_len: int, depth: int, width: int) -> float:  # noqa: ANN001
    matmul_params = sum(p.shape[0] * p.shape[1] for p in plan.params if p.role in ("hidden", "readout"))
    return 6 * matmul_params * tokens + 12 * depth * seq_len * width * tokens


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(width: int, device: torch.device, repeats: int, batch: int, seq_len: int) -> dict[str, float]:
    cfg = compose([f"model.width={width}", "optimizer=muon", "parametrization=mup", f"train.batch_size={batch}",
                   f"train.seq_len={seq_len}"])
    model, plan = build_model(cfg, 256, device)
    optimizer = build_optimizer(model, plan)
    x = torch.randint(0, 256, (batch, seq_len), device=device)
    fb, step = [], []
    for i in range(repeats + 2):
        sync(device)
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            _, loss = model(x, x)
        loss.backward()
        sync(device)
        t1 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync(device)
        t2 = time.perf_counter()
        if i >= 2:
            fb.append(t1 - t0)
            step.append(t2 - t1)
    tokens = batch * seq_len
    ns = sum(ns_flops(p.shape, cfg.optimizer.ns_steps) for p in plan.params if p.update == "spectral")
    fwd_bwd = model_flops(plan, tokens, seq_len, cfg.model.depth, width)
    fb_t, step_t = statistics.median(fb), statistics.median(step)
    return {"width": width, "fwd_bwd_ms": 1e3 * fb_t, "step_ms": 1e3 * step_t, "measured": step_t / fb_t,
            "predicted": ns / fwd_bwd, "ns_gflops": ns / step_t / 1e9, "model_gflops": fwd_bwd / fb_t / 1e9}


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="64,128,256,512,1024")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    print(f"device {device}, threads {torch.get_num_threads()}, batch {args.batch}×{args.seq_len} tokens, depth 2")
    print(f"{'width':>6} {'fwd+bwd ms':>11} {'step ms':>9} {'measured':>9} {'predicted':>10} {'ratio':>6} "
          f"{'NS GFLOP/s':>11} {'model GFLOP/s':>14}")
    for width in (int(w) for w in args.widths.split(",")):
        r = bench(width, device, args.repeats, args.batch, args.seq_len)
        print(f"{r['width']:>6} {r['fwd_bwd_ms']:>11.1f} {r['step_ms']:>9.1f} {r['measured']:>9.3f} "
              f"{r['predicted']:>10.3f} {r['measured'] / r['predicted']:>6.2f} {r['ns_gflops']:>11.1f} "
              f"{r['model_gflops']:>14.1f}")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
