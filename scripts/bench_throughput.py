"""Per-trial throughput of the tool against the hardware and a plain PyTorch loop.

    python scripts/bench.py [--widths 64,128,256,512,1024] [--device cpu|cuda]

For each width: tokens/s of one `mutransfer train` run (read from its result.json, like everything else the
tool reports), model FLOPs per token counted with torch's FlopCounterMode, achieved FLOP/s as a fraction of
this machine's measured fp32 matmul peak, the optimizer's share of step time, peak memory — and the tokens/s
of the same model trained by a minimal hand-written loop (no Optuna, Hydra or rich), with the ratio.
Both use SP + AdamW at batch 16 × 128 tokens, depth 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from mutransfer.model.gpt import GPT
from mutransfer.schema import ModelConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402

BATCH, SEQ, DEPTH = 16, 128, 2
STEPS = {64: 60, 128: 40, 256: 20, 512: 10, 1024: 6}


def matmul_peak(device: torch.device, n: int = 2048, repeats: int = 10) -> float:
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    for _ in range(2):
        a @ b
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 2 * n**3 * repeats / (time.perf_counter() - start)


def flops_per_token(width: int) -> float:
    model = GPT(ModelConfig(width=width, depth=DEPTH), 256)
    x = torch.randint(0, 256, (BATCH, SEQ))
    with FlopCounterMode(display=False) as counter:
        logits, _ = model(x)
        F.cross_entropy(logits.view(-1, 256), x.view(-1)).backward()
    return counter.get_total_flops() / (BATCH * SEQ)


def tool_run(width: int, steps: int, device: str) -> dict:
    out = Path(tempfile.mkdtemp(prefix="bench-")) / "run"
    run_cli("train", f"model.width={width}", f"model.depth={DEPTH}", "optimizer=adamw", "parametrization=sp",
            f"train.steps={steps}", f"train.batch_size={BATCH}", f"train.seq_len={SEQ}", "train.eval_every=0",
            "train.eval_batches=1", f"train.device={device}", "--out", str(out), hide_output=True, hide_errors=True)
    return json.loads((out / "result.json").read_text())


def plain_loop(width: int, steps: int, device: torch.device, data: torch.Tensor) -> float:
    """The same GPT, trained by the simplest loop: random windows, AdamW, no callbacks, no logging."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(width=width, depth=DEPTH), 256).to(device)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.02) if p.ndim > 1 else torch.nn.init.ones_(p)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.0)
    start = time.perf_counter()
    for _ in range(steps):
        i = torch.randint(0, len(data) - SEQ - 1, (BATCH,))
        w = data[i[:, None] + torch.arange(SEQ + 1)].long().to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits, _ = model(w[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, 256), w[:, 1:].reshape(-1))
        loss.backward()
        loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps * BATCH * SEQ / (time.perf_counter() - start)


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="64,128,256,512,1024")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    peak = matmul_peak(device)
    data = torch.randint(0, 256, (1_000_000,), dtype=torch.uint8)
    print(f"device {device}, {torch.get_num_threads()} threads, fp32 matmul peak {peak / 1e9:.0f} GFLOP/s; "
          f"SP+AdamW, depth {DEPTH}, batch {BATCH}×{SEQ}")
    print(f"{'width':>6} {'MFLOP/token':>12} {'tool tok/s':>11} {'of peak':>8} {'opt share':>9} {'peak MB':>8} "
          f"{'plain tok/s':>12} {'tool/plain':>10}")
    for width in (int(w) for w in args.widths.split(",")):
        steps = STEPS.get(width, 10)
        result = tool_run(width, steps, args.device)
        fpt = flops_per_token(width)
        plain = plain_loop(width, steps, device, data)
        achieved = fpt * result["tokens_per_s"]
        print(f"{width:>6} {fpt / 1e6:>12.2f} {result['tokens_per_s']:>11,.0f} {achieved / peak:>8.2f} "
              f"{result['optimizer_fraction']:>9.3f} {result['peak_memory_mb']:>8.0f} {plain:>12,.0f} "
              f"{result['tokens_per_s'] / plain:>10.2f}")


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
