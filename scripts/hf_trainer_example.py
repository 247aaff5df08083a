"""Train a transferred Hugging Face model with ``transformers.Trainer``: the model at the target width built
from its config class and initialised by the plan, the plan's optimizer (every parameter's LR, eps and update
rule) and schedule handed to the Trainer, a few steps on the embedded corpus.

    mutransfer sweep llama && mutransfer transfer --width 256 --from runs/llama
    python scripts/hf_trainer_example.py runs/llama/transfer_w256.yaml --steps 50

Prints one JSON line: the validation loss before and after, the steps taken and the optimizer's class.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import torch
from transformers import Trainer, TrainingArguments

from mutransfer.config import load_config_file
from mutransfer.hf import trainer_optimizer
from mutransfer.model_kinds import build_model
from mutransfer.train.data import Batches, fixed_batches, load_corpus
from mutransfer.train.loop import EVAL_SEED, evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("transfer", type=Path, help="a transfer file of a model=hf sweep (mutransfer transfer)")
    parser.add_argument("--steps", type=int, default=50, help="optimizer steps (default 50)")
    args = parser.parse_args()

    cfg = load_config_file(args.transfer)
    if cfg.model.hf is None:
        parser.error(f"{args.transfer} is not a model=hf transfer file")
    t = cfg.train
    corpus = load_corpus(cfg.data, t.seq_len)
    model, plan = build_model(cfg, corpus.vocab_size)  # initialised by the plan, forward multipliers attached
    optimizers = trainer_optimizer(model, plan, args.steps, warmup_frac=t.warmup_frac, schedule=t.schedule,
                                   min_lr_frac=t.min_lr_frac)

    batches = Batches(corpus.train, 1, t.seq_len, t.seed, torch.device("cpu"))
    windows = [batches.next()[0][0] for _ in range(args.steps * t.batch_size)]
    dataset = [{"input_ids": x, "labels": x} for x in windows]  # the model shifts the labels itself
    val = fixed_batches(corpus.val, t.batch_size, t.seq_len, t.eval_batches, EVAL_SEED, torch.device("cpu"))
    before = evaluate(model, val, autocast=False)[0]
    with tempfile.TemporaryDirectory() as out:
        trainer_args = TrainingArguments(output_dir=out, max_steps=args.steps, per_device_train_batch_size=t.batch_size,
                                         max_grad_norm=t.grad_clip, save_strategy="no", report_to="none",
                                         logging_steps=max(1, args.steps // 5), disable_tqdm=True,
                                         use_cpu=not torch.cuda.is_available(), seed=t.seed)
        Trainer(model=model, args=trainer_args, train_dataset=dataset, optimizers=optimizers).train()
    after = evaluate(model.cpu(), val, autocast=False)[0]
    print(json.dumps({"val_loss_before": before, "val_loss_after": after, "steps": args.steps,
                      "optimizer": type(optimizers[0]).__name__, "width": plan.width, "log2_lr": math.log2(plan.lr)}))


if __name__ == "__main__":
    main()
