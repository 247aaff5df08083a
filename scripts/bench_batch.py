"""Trial batching: trials/hour with K learning-rate trials stacked as one model, K = 1, 2, 4, 8.

    python scripts/bench_batch.py [--widths 32 64 128 256] [--ks 1 2 4 8] [--steps 30] [--trial-steps 150]
                                  [--device auto] [--threads 0] [OVERRIDE ...]

Each (width, K) trains K trials of the default sweep's model (depth 2, 16×128 tokens per step, μP + Muon
unless overridden) for --steps steps, K = 1 through the ordinary model, K > 1 as one stacked model, and
times the whole call (build, steps, final evaluation). trials/hour is 3600 · K / (that time scaled to
--trial-steps steps per trial); the speed-up is against K = 1 at the same width.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import torch

from mutransfer.config import compose
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model, train_trials

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402

DEFAULT = ["parametrization=mup", "optimizer=muon", "model.depth=2", "train.batch_size=16", "train.seq_len=128",
           "train.eval_every=0"]


def timed(overrides: list[str], k: int) -> tuple[float, int]:
    """Seconds to train K trials (spread over half an octave around the config's LR) and how many stayed ok."""
    cfg = compose(overrides)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    lrs = [cfg.optimizer.lr * 2 ** (0.125 * (i - (k - 1) / 2)) for i in range(k)]
    start = time.perf_counter()
    if k == 1:
        results = [train_model(cfg, corpus)[0]]
    else:
        results = train_trials(cfg, corpus, lrs)[0]
    seconds = time.perf_counter() - start
    return seconds, sum(r.status == "ok" for r in results)


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--trial-steps", type=int, default=150)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    device = "cpu" if device == "auto" else device
    threads = args.threads or torch.get_num_threads()
    print(f"device {device}, {threads} thread(s), {args.steps} steps timed, trials/hour for "
          f"{args.trial_steps}-step trials; overrides {' '.join(args.overrides) or '(none)'}")
    timed([*DEFAULT, f"model.width={args.widths[0]}", "train.steps=3", f"train.device={device}",
           f"train.threads={threads}", *args.overrides], 2)
    print(f"{'width':>6} {'K':>3} {'seconds':>8} {'ok':>3} {'trials/hour':>12} {'speed-up':>9}")
    for width in args.widths:
        base = None
        for k in args.ks:
            overrides = [*DEFAULT, f"model.width={width}", f"train.steps={args.steps}", f"train.device={device}",
                         f"train.threads={threads}", *args.overrides]
            seconds, ok = timed(overrides, k)
            per_hour = 3600 * k / (seconds * args.trial_steps / args.steps)
            base = base or per_hour
            print(f"{width:>6} {k:>3} {seconds:8.2f} {ok:>3} {per_hour:12.0f} {per_hour / base:8.2f}×", flush=True)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
