"""Training: config in, loss curve + status out, for one run or K learning-rate trials stacked as one model.
Plain PyTorch (no Hydra, Optuna or rich)."""

from __future__ import annotations

import math
import platform
import resource
import time
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Optional, Sequence

import torch

from .build import build_model
from .data import Batches, Corpus, fixed_batches
from .model import next_token_loss
from .optim import clip_grad_norm_per_trial_, keep_trials
from .parametrization import Plan, build_optimizer
from .schema import Config, TrainConfig

__all__ = ["TrainResult", "resolve_device", "lr_factor", "train_model", "train_trials", "environment", "loss_of",
           "EVAL_SEED"]

EVAL_SEED = 2_147_483_647
StepCallback = Callable[[int, float], None]
EvalCallback = Callable[[int, float], bool]
TrialsStepCallback = Callable[[int, dict[int, float]], None]
TrialEvalCallback = Callable[[int, int, float], bool]


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
    """Mean next-token cross-entropy; the model returns logits (B, T, V) or a tuple starting with them.
    For a stacked model (logits (K, B, T, V)) one loss per trial, shape (K,)."""
    out = model(x)
    return next_token_loss(out[0] if isinstance(out, tuple) else out, y)


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], autocast: bool) -> list[float]:
    """Mean validation loss of each trial (one value for an ordinary model)."""
    model.eval()
    total = torch.zeros(())
    for x, y in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            total = total + loss_of(model, x, y).cpu().reshape(-1)
    model.train()
    return (total / len(batches)).tolist()


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


@dataclass
class _Record:
    """One trial's progress while it trains."""

    eta: float
    status: str = "ok"
    message: str = ""
    initial_loss: float = math.nan
    steps: int = 0
    seconds: float = 0.0
    opt_seconds: float = 0.0
    curve: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)

    def result(self, tokens_per_step: int, peak_memory_mb: float) -> TrainResult:
        finite = [row["train_loss"] for row in self.curve if math.isfinite(row["train_loss"])]
        return TrainResult(
            status=self.status,
            val_loss=self.evals[-1]["val_loss"] if self.evals and self.status != "diverged" else None,
            train_loss=finite[-1] if finite else None,
            initial_loss=self.initial_loss,
            steps=self.steps,
            seconds=self.seconds,
            tokens_per_s=self.steps * tokens_per_step / self.seconds if self.seconds > 0 else 0.0,
            optimizer_fraction=self.opt_seconds / self.seconds if self.seconds > 0 else 0.0,
            peak_memory_mb=peak_memory_mb,
            message=self.message,
            curve=self.curve,
            evals=self.evals,
        )


def train_model(
    cfg: Config,
    corpus: Corpus,
    on_step: Optional[StepCallback] = None,
    on_eval: Optional[EvalCallback] = None,
) -> tuple[TrainResult, Plan]:
    """Train the configured model. ``on_eval(step, val_loss)`` returning True stops the run (status 'stopped')."""
    results, plan = _train(cfg, corpus, None,
                           (lambda step, losses: on_step(step, losses[0])) if on_step else None,
                           (lambda _, step, val: on_eval(step, val)) if on_eval else None)
    return results[0], plan


def train_trials(
    cfg: Config,
    corpus: Corpus,
    lrs: Sequence[float],
    on_step: Optional[TrialsStepCallback] = None,
    on_eval: Optional[TrialEvalCallback] = None,
) -> tuple[list[TrainResult], Plan]:
    """Train one trial per η in ``lrs`` (same config, seed and data otherwise) as one stacked GPT.

    Each trial has its own LR and optimizer state; a trial that diverges, or that ``on_eval(trial, step,
    val_loss)`` stops, leaves the batch and the others go on. Results come back in the order of ``lrs``.
    """
    if not lrs:
        raise ValueError("train_trials needs at least one learning rate")
    return _train(cfg, corpus, [float(lr) for lr in lrs], on_step, on_eval)


def _train(
    cfg: Config,
    corpus: Corpus,
    lrs: Optional[list[float]],
    on_step: Optional[TrialsStepCallback],
    on_eval: Optional[TrialEvalCallback],
) -> tuple[list[TrainResult], Plan]:
    """The one training loop: the ordinary model (``lrs`` None) or one stacked trial per η in ``lrs``."""
    t = cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    device = resolve_device(t.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats(device)
    model, plan = build_model(cfg, corpus.vocab_size, device, trials=None if lrs is None else len(lrs))
    optimizer = build_optimizer(model.named_parameters(), plan, cfg.optimizer, trial_lrs=lrs)
    base_lrs = [group["lr"] for group in optimizer.param_groups]
    batches = Batches(corpus.train, t.batch_size, t.seq_len, t.seed, device)
    val_batches = fixed_batches(corpus.val, t.batch_size, t.seq_len, t.eval_batches, EVAL_SEED, device)
    tokens_per_step = t.batch_size * t.seq_len
    records = [_Record(eta) for eta in (lrs if lrs is not None else [plan.lr])]
    active = list(range(len(records)))

    def drop_finished() -> None:
        nonlocal active, base_lrs
        keep = [pos for pos, i in enumerate(active) if records[i].status == "ok"]
        if len(keep) == len(active) or not keep:
            active = [active[pos] for pos in keep]
            return
        index = torch.tensor(keep, device=device)
        keep_trials(model, optimizer, index)
        base_lrs = [base[index] if isinstance(base, torch.Tensor) else base for base in base_lrs]
        active = [active[pos] for pos in keep]

    for step in range(t.steps):
        start = time.perf_counter()
        factor = lr_factor(step, t)
        for group, base in zip(optimizer.param_groups, base_lrs):
            group["lr"] = base * factor
        if hasattr(optimizer, "set_progress"):
            optimizer.set_progress(step / t.steps)
        x, y = batches.next()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
            losses = loss_of(model, x, y).reshape(-1)
        losses.sum().backward()
        if t.grad_clip > 0:
            if lrs is None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
            else:
                clip_grad_norm_per_trial_(model.parameters(), t.grad_clip)
        values = losses.tolist()
        if cuda:
            torch.cuda.synchronize(device)
        opt_start = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize(device)
        now = time.perf_counter()
        for i, value in zip(active, values):
            rec = records[i]
            rec.opt_seconds += now - opt_start
            rec.seconds += now - start
            rec.steps = step + 1
            if step == 0:
                rec.initial_loss = value
            rec.curve.append({"step": step + 1, "train_loss": value, "lr": rec.eta * factor,
                              "tokens": (step + 1) * tokens_per_step, "seconds": rec.seconds})
            if not math.isfinite(value) or value > t.diverge_factor * rec.initial_loss:
                rec.status = "diverged"
                rec.message = f"training loss {value:.4g} at step {step + 1} (initial {rec.initial_loss:.4g}): diverged"
        if on_step is not None:
            on_step(step + 1, dict(zip(active, values)))
        drop_finished()
        last = step + 1 == t.steps
        if active and (last or (t.eval_every and (step + 1) % t.eval_every == 0)):
            for i, val in zip(active, evaluate(model, val_batches, cuda)):
                rec = records[i]
                rec.evals.append({"step": step + 1, "val_loss": val})
                if not math.isfinite(val):
                    rec.status, rec.message = "diverged", f"validation loss {val} at step {step + 1}: diverged"
                elif on_eval is not None and on_eval(i, step + 1, val) and not last:
                    rec.status, rec.message = "stopped", f"stopped by the caller at step {step + 1}"
            drop_finished()
        if not active:
            break
    peak = _peak_memory_mb(device)
    return [rec.result(tokens_per_step, peak) for rec in records], plan
