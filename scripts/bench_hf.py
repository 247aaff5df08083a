"""Training throughput of a Hugging Face model against the built-in GPT at the same width, on this machine.

    python scripts/bench_hf.py [--widths 32,64,128,256] [--architecture llama] [--steps 10] [--repeats 3]

Both models are trained as a sweep trial trains them (the default sweep's depth 2, batch 16 × 128 bytes, the
same preset and optimizer); one step is forward, backward and the optimizer. The two alternate within each
repeat so that machine noise hits both; printed: median tokens/s per (setup, width, model) and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Optional, Sequence

from mutransfer.config import compose
from mutransfer.train.timing import measure_step

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

SETUPS = {"mup_muon": ["parametrization=mup", "optimizer=muon"], "sp_adamw": ["parametrization=sp", "optimizer=adamw"]}


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="32,64,128,256")
    parser.add_argument("--architecture", default="llama")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    common = ["model.depth=2", "train.batch_size=16", "train.seq_len=128", "train.device=cpu"]
    models = {"gpt": [], "hf": ["model=hf", f"model.hf.architecture={args.architecture}"]}
    print(f"{'setup':9} {'width':>5} {'gpt tok/s':>10} {args.architecture + ' tok/s':>12} {'gpt/hf':>7}")
    for setup, preset in SETUPS.items():
        for width in (int(w) for w in args.widths.split(",")):
            cfgs = {name: compose([*extra, *preset, *common, f"model.width={width}"]) for name, extra in models.items()}
            seconds: dict[str, list[float]] = {name: [] for name in models}
            for _ in range(args.repeats):
                for name, cfg in cfgs.items():
                    seconds[name].append(measure_step(cfg, steps=args.steps))
            tokens = 16 * 128
            rate = {name: tokens / statistics.median(values) for name, values in seconds.items()}
            print(f"{setup:9} {width:5d} {rate['gpt']:10,.0f} {rate['hf']:12,.0f} {rate['gpt'] / rate['hf']:7.2f}")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
