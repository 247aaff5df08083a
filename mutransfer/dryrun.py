"""``mutransfer sweep --dry-run``: studies, trials, tokens and FLOPs per trial, and a measured time estimate."""

from __future__ import annotations

import time

import torch
from rich.table import Table

from .build import build_model
from .data import vocab_size
from .parametrization import build_optimizer
from .spec import SweepSpec
from .studies import study_keys
from .sweep import _budget, trial_config, trials_per_batch
from .train import loss_of, resolve_device

__all__ = ["dry_run_table", "measure_step"]


def measure_step(cfg, steps: int = 3, trials: int = 1) -> float:  # noqa: ANN001 - a Config
    """Seconds per training step (of ``trials`` stacked trials when > 1), timed after one warm-up step on
    random tokens on the configured device."""
    device = resolve_device(cfg.train.device)
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    vocab = vocab_size(cfg.data)
    stacked = trials if trials > 1 else None
    model, plan = build_model(cfg, vocab, device, trials=stacked)
    optimizer = build_optimizer(model.named_parameters(), plan, cfg.optimizer,
                                trial_lrs=[cfg.optimizer.lr] * trials if stacked else None)
    x = torch.randint(0, vocab, (cfg.train.batch_size, cfg.train.seq_len), device=device)
    elapsed = 0.0
    for i in range(steps + 1):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = loss_of(model, x, x).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i:
            elapsed += time.perf_counter() - start
    return elapsed / steps


def dry_run_table(spec: SweepSpec, workers: int, threads: int) -> Table:
    table = Table(title=f"sweep {spec.name}: plan ({workers} worker(s) × {threads} thread(s))")
    for column in ("setup", "width", "studies", "trials", "tokens/trial", "GFLOP/trial", "batch", "s/step",
                   "est. s/trial"):
        table.add_column(column, justify="left" if column == "setup" else "right")
    total_trials, total_seconds = 0, 0.0
    seen: set[tuple[str, int]] = set()
    keys = study_keys(spec)
    for key in keys:
        if (key.setup, key.width) in seen:
            continue
        seen.add((key.setup, key.width))
        group = [k for k in keys if (k.setup, k.width) == (key.setup, key.width)]
        trials = sum(_budget(k) for k in group)
        cfg = trial_config(spec, key, key.search.grid()[len(key.search.grid()) // 2],
                           (f"train.threads={threads}",))
        _, plan = build_model(cfg, vocab_size(cfg.data), "meta")
        tokens = cfg.train.steps * cfg.train.batch_size * cfg.train.seq_len
        matmul = sum(p.shape[0] * p.shape[1] for p in plan.params if p.role in ("hidden", "readout"))
        flops = 6 * matmul * tokens + 12 * cfg.model.depth * cfg.train.seq_len * cfg.model.width * tokens
        batch = trials_per_batch(spec.batch_trials, key, cfg)
        per_step = measure_step(cfg, trials=batch)
        per_trial = per_step / batch * cfg.train.steps * (1 + cfg.train.eval_batches / max(1, cfg.train.eval_every or
                                                                                    cfg.train.steps) / 3)
        total_trials += trials
        total_seconds += trials * per_trial
        table.add_row(key.setup, str(key.width), str(len(group)), str(trials), f"{tokens:,}", f"{flops / 1e9:,.1f}",
                      str(batch), f"{per_step:.3f}", f"{per_trial:,.1f}")
    table.caption = (f"{total_trials} trials, estimated wall time {total_seconds / workers / 60:,.1f} min "
                     f"with {workers} worker(s) (from a 3-step warm-up on this machine; s/step is one step of "
                     "'batch' stacked trials)")
    return table
