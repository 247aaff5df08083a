"""What ``torch.compile`` of the training step buys on this machine: compile seconds against seconds saved.

    python scripts/bench_compile.py [--widths 32,64,128,256] [--steps 30] [--variants eager,model,model+opt]
                                    [--device cpu|cuda]

For each width and setup (μP + Muon, SP + AdamW; depth 2, batch 16 × 128, as in the default sweep) it trains
``--steps`` steps three ways, each in a fresh process with an empty compile cache:
- ``eager``: the step as `train.compile=off` runs it;
- ``model``: the model compiled (forward and backward), as `train.compile=on` runs it;
- ``model+opt``: the model and the optimizer's per-role math (``block_direction``, Newton–Schulz included), an
  alternative this script measures and the tool does not ship.
It prints the first step's extra seconds (the compile), the same for a second model of the same shape in the same
process (what a sweep worker's next trial pays), the median steady step, the saving against eager, the steps after
which compiling pays back, and the step's fraction of this machine's fp32 matmul peak.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Optional, Sequence

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from bench_throughput import flops_per_token, matmul_peak  # noqa: E402

VARIANTS = ("eager", "model", "model+opt")
SETUPS = {"mup_muon": ["parametrization=mup", "optimizer=muon"], "sp_adamw": ["parametrization=sp", "optimizer=adamw"]}
BATCH, SEQ, DEPTH = 16, 128, 2


def child(variant: str, setup: str, width: int, steps: int, device_name: str) -> dict[str, float]:
    """Train two models of one shape in this process; the first and steady step times of each."""
    from mutransfer.config import compose
    from mutransfer.model.apply import build_optimizer
    from mutransfer.model_kinds import build_model
    from mutransfer.optim import steepest
    from mutransfer.train.compiled import TrainingForward
    from mutransfer.train.device import prepare_device, synchronize
    from mutransfer.train.loop import loss_of

    warnings.filterwarnings("ignore")
    device = prepare_device(device_name, threads=0)
    if variant == "model+opt":
        steepest.block_direction = torch.compile(steepest.block_direction)
    cfg = compose([*SETUPS[setup], f"model.width={width}", f"model.depth={DEPTH}", f"train.device={device_name}"])
    x = torch.randint(0, 256, (BATCH, SEQ), device=device)

    def run() -> tuple[float, float]:
        torch.manual_seed(0)
        model, plan = build_model(cfg, 256, device)
        optimizer = build_optimizer(model, plan)
        forward = TrainingForward(model, variant != "eager", device)
        times = []
        for _ in range(steps):
            synchronize(device)
            start = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = loss_of(forward, x, x)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            synchronize(device)
            times.append(time.perf_counter() - start)
        steady = statistics.median(times[3:])
        return times[0] - steady, steady

    first_compile, step = run()
    second_compile, _ = run()
    return {"compile": first_compile, "second": second_compile, "step": step}


def measure(variant: str, setup: str, width: int, steps: int, device: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="inductor-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, __file__, "--child", variant, setup, str(width), str(steps), device],
                             check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="32,64,128,256")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="eager first: the others are compared to it")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    if variants[0] != "eager" or not set(variants) <= set(VARIANTS):
        parser.error(f"--variants {args.variants}: give eager first, then any of {', '.join(VARIANTS[1:])}")
    if args.child:
        variant, setup, width, steps, device = args.child
        print(json.dumps(child(variant, setup, int(width), int(steps), device)))
        return
    peak = matmul_peak(torch.device(args.device))
    print(f"device {args.device}, {torch.get_num_threads()} threads, fp32 matmul peak {peak / 1e9:.0f} GFLOP/s; "
          f"depth {DEPTH}, batch {BATCH}×{SEQ}, {args.steps} steps, a fresh compile cache per row")
    print(f"{'width':>5} {'setup':>8} {'variant':>9} {'compile s':>9} {'2nd model s':>11} {'step ms':>8} "
          f"{'saved':>6} {'pays after':>10} {'of peak':>7}")
    for width in (int(w) for w in args.widths.split(",")):
        fpt = flops_per_token(width)
        for setup in SETUPS:
            eager = None
            for variant in variants:
                m = measure(variant, setup, width, args.steps, args.device)
                eager = eager or m
                saved = eager["step"] - m["step"]
                pays = f"{m['compile'] / saved:>10,.0f}" if variant != "eager" and saved > 0 else f"{'—':>10}"
                fraction = fpt * BATCH * SEQ / m["step"] / peak
                print(f"{width:>5} {setup:>8} {variant:>9} {m['compile']:>9.1f} {m['second']:>11.2f} "
                      f"{m['step'] * 1e3:>8.1f} {saved / eager['step']:>6.0%} {pays} {fraction:>7.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
