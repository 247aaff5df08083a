"""Bring your own model: sweep a small custom PyTorch model at three widths with the tool's sweep machinery,
transfer the learning rate to a 4× wider model, train it in your own loop through the Python API, verify.

    python scripts/own_model_example.py [--tiny] [--out DIR]

The model below is plain PyTorch: nothing about it knows mutransfer. The tool only needs a factory
``make_model(width)`` and a mapping from parameter-name patterns to roles.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml
from torch import nn

import mutransfer
from mutransfer.train.data import Batches, load_corpus
from mutransfer.schema import DataConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli  # noqa: E402

ROLES = {"embed.weight": "embedding", "head.weight": "readout", "norm.weight": "gain", "*": "hidden"}


class BytePairMLP(nn.Module):
    """A tiny causal byte model: embeddings of the current and previous byte → MLP → RMSNorm → LM head."""

    def __init__(self, width: int, vocab: int = 256) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.up = nn.Linear(2 * width, 4 * width, bias=False)
        self.down = nn.Linear(4 * width, width, bias=False)
        self.norm = nn.RMSNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        e = self.embed(idx)  # (B, T, C)
        prev = F.pad(e[:, :-1], (0, 0, 1, 0))  # the previous byte's embedding, zeros at t = 0
        h = e + self.down(F.gelu(self.up(torch.cat([e, prev], dim=-1))))
        return self.head(self.norm(h))  # (B, T, V)


def make_model(width: int) -> nn.Module:
    return BytePairMLP(width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a few seconds, for the test suite")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="own-model-"))
    out.mkdir(parents=True, exist_ok=True)
    widths = [32, 64] if args.tiny else [32, 64, 128]
    steps = 8 if args.tiny else 150
    spec = {
        "name": "own_model",
        "setups": {"mup_muon": {"overrides": ["parametrization=mup", "optimizer=muon"],
                                "search": {"log2_min": -8, "log2_max": 0}}},
        "widths": widths,
        "search": {"step": 2 if args.tiny else 1},
        "model": {"factory": "own_model_example:make_model", "roles": ROLES,
                  "factory_path": str(Path(__file__).resolve().parent)},
        "overrides": ["parametrization.base_width=32", f"train.steps={steps}", "train.batch_size=16",
                      "train.seq_len=64", "train.eval_every=0", "train.eval_batches=4"],
    }
    spec_path = out / "own_model.yaml"
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    run_dir = out / "sweep"
    target = 4 * widths[-1]

    # 1. the tool's sweep, on the user's model
    run_cli("sweep", str(spec_path), "--out", str(run_dir))
    # 2. the transferred config for a 4× wider model
    transfer = out / f"transfer_w{target}.yaml"
    run_cli("transfer", "--width", str(target), "--from", str(run_dir), "--out", str(transfer))

    # 3. your own training loop, driven by the transferred file through the Python API
    plan = mutransfer.Plan.load(transfer)
    model = make_model(target)
    mutransfer.initialize(model, plan, seed=0)
    mutransfer.attach_multipliers(model, plan)
    optimizer = mutransfer.build_optimizer(model, plan)
    same = mutransfer.parametrize(make_model(target), ROLES, preset="mup", optimizer="muon", width=target,
                                  base_width=32, factory=make_model, lr=plan.lr)
    assert [p.lr_factor for p in same.params] == [p.lr_factor for p in plan.params]
    corpus = load_corpus(DataConfig(kind="stdlib"), 64)
    batches = Batches(corpus.train, 16, 64, seed=0, device=torch.device("cpu"))
    for step in range(steps):
        x, y = batches.next()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step in (0, steps - 1):
            print(f"own loop, width {target}, η* = {plan.lr:.4g}: step {step + 1} loss {loss.item():.4f}")

    # 4. the tool's verification at the target width
    run_cli("verify", "--width", str(target), "--from", str(run_dir), "--factors", "0.5,1,2")
    print(f"outputs in {out}")


if __name__ == "__main__":
    main()
