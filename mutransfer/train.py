"""One training run: config in, loss curve + status out. Plain PyTorch (no Hydra, Optuna or rich)."""

from __future__ import annotations

import math
import platform
import resource
import time
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Optional

import torch
import torch.nn.functional as F

from .build import build_model
from .data import Batches, Corpus, fixed_batches
from .parametrization import Plan, build_optimizer
from .schema import Config, TrainConfig

__all__ = ["TrainResult", "resolve_device", "lr_factor", "train_model", "environment", "loss_of", "EVAL_SEED"]

EVAL_SEED = 2_147_483_647
StepCallback = Callable[[int, float], None]
EvalCallback = Callable[[int, float], bool]


@dataclass
class TrainResult:
    status: str  # "ok" | "diverged" | "stopped"
    val_loss: Optional[float]
    train_loss: Optional[float]
    initial_loss: float
    steps: int
    seconds: float
    tokens_per_s: float
    optimizer_fraction: float
    peak_memory_mb: float
    message: str = ""
    curve: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        keys = ("status", "val_loss", "train_loss", "initial_loss", "steps", "seconds", "tokens_per_s",
                "optimizer_fraction", "peak_memory_mb", "message")
        return {k: getattr(self, k) for k in keys}


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        from .errors import UserError

        raise UserError("train.device=cuda but no CUDA device is available", "use train.device=cpu or auto")
    return torch.device(name)


def lr_factor(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup_frac`` of the steps, then linear/cosine/constant decay to ``min_lr_frac``."""
    warmup = int(round(cfg.warmup_frac * cfg.steps))
    if step < warmup:
        return (step + 1) / warmup
    if cfg.schedule == "constant" or cfg.steps <= warmup:
        return 1.0
    progress = (step - warmup) / max(1, cfg.steps - warmup)
    shape = 1.0 - progress if cfg.schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
    return cfg.min_lr_frac + (1.0 - cfg.min_lr_frac) * shape


def loss_of(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy; the model returns logits (B, T, V) or a tuple starting with them."""
    out = model(x)
    logits = out[0] if isinstance(out, tuple) else out
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], autocast: bool) -> float:
    model.eval()
    total = 0.0
    for x, y in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_of(model, x, y)
        total += float(loss)
    model.train()
    return total / len(batches)


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def environment(device: torch.device) -> dict[str, Any]:
    """Versions and hardware a result depends on."""
    versions = {}
    for package in ("torch", "optuna", "hydra-core", "numpy", "pandas", "mutransfer"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "threads": torch.get_num_threads(),
    }


def train_model(
    cfg: Config,
    corpus: Corpus,
    on_step: Optional[StepCallback] = None,
    on_eval: Optional[EvalCallback] = None,
) -> tuple[TrainResult, Plan]:
    """Train the configured GPT. ``on_eval(step, val_loss)`` returning True stops the run (status 'stopped')."""
    t = cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    device = resolve_device(t.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats(device)
    model, plan = build_model(cfg, corpus.vocab_size, device)
    optimizer = build_optimizer(model.named_parameters(), plan, cfg.optimizer)
    base_lrs = [group["lr"] for group in optimizer.param_groups]
    batches = Batches(corpus.train, t.batch_size, t.seq_len, t.seed, device)
    val_batches = fixed_batches(corpus.val, t.batch_size, t.seq_len, t.eval_batches, EVAL_SEED, device)
    tokens_per_step = t.batch_size * t.seq_len
    curve: list[dict[str, float]] = []
    evals: list[dict[str, float]] = []
    status, message = "ok", ""
    initial_loss = math.nan
    train_seconds = opt_seconds = 0.0
    steps_done = 0
    for step in range(t.steps):
        start = time.perf_counter()
        factor = lr_factor(step, t)
        for group, base in zip(optimizer.param_groups, base_lrs):
            group["lr"] = base * factor
        if hasattr(optimizer, "set_progress"):
            optimizer.set_progress(step / t.steps)
        x, y = batches.next()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
            loss = loss_of(model, x, y)
        loss.backward()
        if t.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        loss_value = loss.item()
        if cuda:
            torch.cuda.synchronize(device)
        opt_start = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize(device)
        now = time.perf_counter()
        opt_seconds += now - opt_start
        train_seconds += now - start
        steps_done = step + 1
        if step == 0:
            initial_loss = loss_value
        curve.append({"step": step + 1, "train_loss": loss_value, "lr": plan.lr * factor,
                      "tokens": (step + 1) * tokens_per_step, "seconds": train_seconds})
        if on_step is not None:
            on_step(step + 1, loss_value)
        if not math.isfinite(loss_value) or loss_value > t.diverge_factor * initial_loss:
            status = "diverged"
            message = f"training loss {loss_value:.4g} at step {step + 1} (initial {initial_loss:.4g}): diverged"
            break
        last = step + 1 == t.steps
        if last or (t.eval_every and (step + 1) % t.eval_every == 0):
            val = evaluate(model, val_batches, cuda)
            evals.append({"step": step + 1, "val_loss": val})
            if not math.isfinite(val):
                status, message = "diverged", f"validation loss {val} at step {step + 1}: diverged"
                break
            if on_eval is not None and on_eval(step + 1, val) and not last:
                status, message = "stopped", f"stopped by the caller at step {step + 1}"
                break
    finite = [row["train_loss"] for row in curve if math.isfinite(row["train_loss"])]
    result = TrainResult(
        status=status,
        val_loss=evals[-1]["val_loss"] if evals and status != "diverged" else None,
        train_loss=finite[-1] if finite else None,
        initial_loss=initial_loss,
        steps=steps_done,
        seconds=train_seconds,
        tokens_per_s=steps_done * tokens_per_step / train_seconds if train_seconds > 0 else 0.0,
        optimizer_fraction=opt_seconds / train_seconds if train_seconds > 0 else 0.0,
        peak_memory_mb=_peak_memory_mb(device),
        message=message,
        curve=curve,
        evals=evals,
    )
    return result, plan
