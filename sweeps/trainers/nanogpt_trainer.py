"""A standalone nanoGPT-style trainer that a mutransfer sweep runs as each trial's command (sweeps/own_trainer.yaml).

Its own model class, its own loop, its own token-file loader; mutransfer only hands it the trial's values
(``mutransfer.trial()``: the learning rate, width, steps, batch, seed, and ``plan.yaml``, every parameter's init,
multiplier and LR at this width) and takes its evaluations (``mutransfer.report``). Copy it and replace the model,
the data and the loop with your own. Without a sweep it trains once from its arguments:

    python sweeps/trainers/nanogpt_trainer.py --lr 0.01 --width 64 --steps 50
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

import mutransfer
from mutransfer.trainer_api import trial_dir

ROLES = {"wte.weight": "embedding", "lm_head.weight": "readout", "*norm*.weight": "gain", "*": "hidden"}
"""Parameter-name patterns → roles: what the spec's ``model.roles`` says, so the plan covers every parameter."""
HEAD_DIM = 16
VOCAB = 256
SEQ_LEN = 64
DEPTH = 2


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(width), nn.RMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.up = nn.Linear(width, 4 * width, bias=False)
        self.down = nn.Linear(4 * width, width, bias=False)
        self.heads = width // HEAD_DIM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, HEAD_DIM).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / HEAD_DIM)  # μP: 1/d attention
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyGPT(nn.Module):
    def __init__(self, width: int, depth: int = DEPTH, vocab: int = VOCAB) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.norm_f = nn.RMSNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm_f(x))


def make_model(width: int) -> nn.Module:
    """The factory the spec names (``model.factory``): the tool builds it to compute each trial's plan."""
    return TinyGPT(width)


def load_tokens(path: Optional[str]) -> torch.Tensor:
    """Bytes of a file as tokens (vocabulary 256); without a path, Python's own standard-library sources."""
    if path:
        data = Path(path).read_bytes()
    else:
        lib = Path(argparse.__file__).parent
        data = b"".join(p.read_bytes() for p in sorted(lib.glob("*.py"))[:40])
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


def batch(tokens: torch.Tensor, size: int, generator: torch.Generator, device: torch.device
          ) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.randint(0, len(tokens) - SEQ_LEN - 1, (size,), generator=generator)
    x = torch.stack([tokens[s:s + SEQ_LEN] for s in starts.tolist()])
    y = torch.stack([tokens[s + 1:s + SEQ_LEN + 1] for s in starts.tolist()])
    return x.to(device), y.to(device)


@torch.no_grad()
def evaluate(model: nn.Module, tokens: torch.Tensor, device: torch.device, batches: int = 4) -> float:
    generator = torch.Generator().manual_seed(1234)
    losses = []
    for _ in range(batches):
        x, y = batch(tokens, 16, generator, device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x)
        losses.append(F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1)).item())
    return sum(losses) / len(losses)


def arguments() -> argparse.Namespace:
    """The trial's values inside a sweep (``mutransfer.trial()``), else this script's arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--plan", default=None, help="a plan.yaml (mutransfer transfer or a sweep writes one)")
    parser.add_argument("--data", default=None, help="a file read as bytes")
    args = parser.parse_args()
    if trial_dir() is not None:
        trial = mutransfer.trial()
        args.lr, args.width, args.steps = trial.lr, trial.width, trial.steps
        args.batch_size, args.seed, args.plan = trial.batch_size, trial.seed, trial.plan
        args.eval_every = int(trial["train.eval_every"]) or args.steps
    return args


def main() -> int:
    args = arguments()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = True
    tokens = load_tokens(args.data)
    split = int(0.9 * len(tokens))
    train_tokens, val_tokens = tokens[:split], tokens[split:]
    torch.manual_seed(args.seed)
    model = make_model(args.width)
    if args.plan:  # μP (or any preset) from the plan: init, forward multipliers, per-parameter LRs and updates
        plan = mutransfer.Plan.load(args.plan)
        mutransfer.initialize(model, plan, seed=args.seed)
        mutransfer.attach_multipliers(model, plan)
        model.to(device)
        optimizer = mutransfer.build_optimizer(model, plan, lr=args.lr, steps=args.steps)
    else:
        model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    base_lrs = [group["lr"] for group in optimizer.param_groups]
    generator = torch.Generator().manual_seed(args.seed)
    started = time.perf_counter()
    for step in range(1, args.steps + 1):
        decay = min(1.0, 2.0 * (1.0 - (step - 1) / args.steps))  # constant, then linear decay over the last half
        for group, base in zip(optimizer.param_groups, base_lrs):
            group["lr"] = base * decay
        x, y = batch(train_tokens, args.batch_size, generator, device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
        if not math.isfinite(loss.item()):
            mutransfer.report(step=step, val_loss=math.nan)
            print(f"diverged at step {step}")
            return 0
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % args.eval_every == 0 or step == args.steps:
            val = evaluate(model, val_tokens, device)
            mutransfer.report(step=step, val_loss=val, train_loss=loss.item(),
                              seconds=time.perf_counter() - started)
            print(f"step {step}: train {loss.item():.4f} val {val:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
