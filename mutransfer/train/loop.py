"""Training: config in, loss curve + status out, for one run or K learning-rate trials stacked as one model.
Plain PyTorch (no Hydra, Optuna or rich)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch

from ..model.apply import build_optimizer
from ..model_kinds import build_model
from ..model.gpt import next_token_loss
from ..schema import Config
from ..table.plan import Plan
from .budget import tokens_per_step
from .compiled import TrainingForward, compile_wanted
from .data import Batches, Corpus, eval_batch_size, fixed_batches
from .device import peak_memory_mb, prepare_device, synchronize
from .noise import NOISE_FIELDS, NOISE_MICRO_BATCHES, measure_noise, noise_batches, noise_scale, run_noise_scale
from ..optim.schedule import cooldown_start, progress, schedule_factor
from ..dist.ranks import Ranks
from ..dist.wrap import spread
from ..words import TrialStatus
from .stacking import clip_grad_norm_per_trial_, keep_trials
from .result import TrainResult
from .trunk import Trunk

__all__ = ["TrainResult", "train_model", "train_trials", "loss_of", "logits_of", "evaluate", "EVAL_SEED"]

EVAL_SEED = 2_147_483_647
StepCallback = Callable[[int, float], None]
EvalCallback = Callable[[int, float], bool]
TrialsStepCallback = Callable[[int, dict[int, float]], None]
TrialEvalCallback = Callable[[int, int, float], bool]


def logits_of(out: Any) -> torch.Tensor:
    """The logits in a model's output: the tensor itself, the first of a tuple, or a ``transformers`` output's
    ``logits``."""
    if isinstance(out, torch.Tensor):
        return out
    return out.logits if hasattr(out, "logits") else out[0]


def loss_of(model: Callable[[torch.Tensor], Any], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy; the model returns logits (B, T, V), a tuple starting with them or a
    ``transformers`` output. For a stacked model (logits (K, B, T, V)) one loss per trial, shape (K,)."""
    return next_token_loss(logits_of(model(x)), y)


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


@dataclass
class _Record:
    """One trial's progress while it trains."""

    eta: float
    status: str = TrialStatus.OK
    message: str = ""
    initial_loss: float = math.nan
    steps: int = 0
    seconds: float = 0.0
    opt_seconds: float = 0.0
    curve: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    branched_at: int = 0
    offset: float = 0.0
    """Seconds the trunk had trained before ``branched_at``: where this run's curve picks up the time."""

    def add_step(self, step: int, loss: float, factor: float, tokens: int, seconds: float, opt_seconds: float,
                 diverge_factor: float) -> None:
        self.opt_seconds += opt_seconds
        self.seconds += seconds
        self.steps = step
        if step == 1:
            self.initial_loss = loss
        self.curve.append({"step": step, "train_loss": loss, "lr": self.eta * factor, "tokens": step * tokens,
                           "seconds": self.offset + self.seconds})
        if not math.isfinite(loss) or loss > diverge_factor * self.initial_loss:
            self.status = TrialStatus.DIVERGED
            self.message = f"training loss {loss:.4g} at step {step} (initial {self.initial_loss:.4g}): diverged"

    def add_noise(self, step: int, g2: float, trace: float) -> None:
        """Store one evaluation's noise measurement in its evaluation record and in the curve row of its step."""
        ratio = noise_scale([g2], [trace])
        values = dict(zip(NOISE_FIELDS, (g2, trace, math.nan if ratio is None else ratio)))
        self.evals[-1].update(values)
        if self.curve and self.curve[-1]["step"] == step:
            self.curve[-1].update(values)

    def result(self, tokens_per_step: int, peak_memory: float, steps: int, compiled: bool) -> TrainResult:
        finite = [row["train_loss"] for row in self.curve if math.isfinite(row["train_loss"])]
        return TrainResult(
            status=self.status,
            val_loss=self.evals[-1]["val_loss"] if self.evals and self.status != TrialStatus.DIVERGED else None,
            train_loss=finite[-1] if finite else None,
            initial_loss=self.initial_loss,
            steps=self.steps,
            seconds=self.seconds,
            tokens_per_s=(self.steps - self.branched_at) * tokens_per_step / self.seconds if self.seconds > 0 else 0.0,
            optimizer_fraction=self.opt_seconds / self.seconds if self.seconds > 0 else 0.0,
            peak_memory_mb=peak_memory,
            message=self.message,
            curve=self.curve,
            evals=self.evals,
            noise_scale=run_noise_scale(self.evals, steps),
            branched_at=self.branched_at,
            compiled=compiled,
        )


def train_model(
    cfg: Config,
    corpus: Corpus,
    on_step: Optional[StepCallback] = None,
    on_eval: Optional[EvalCallback] = None,
    trunk: Optional[Trunk] = None,
    ranks: Optional[Ranks] = None,
) -> tuple[TrainResult, Plan]:
    """Train the configured model. ``on_eval(step, val_loss)`` returning True stops the run (status 'stopped').
    With a ``trunk`` (``schedule: wsd``) the run starts from the trunk's last checkpoint before its decay and
    checkpoints the trunk's branch points it passes (``train.trunk``). With ``ranks`` this process is one rank of
    a distributed run (``train.parallel``): it trains its rows of each batch, every loss is the mean over ranks, and
    rank 0's ``on_eval`` decides for all."""
    results, plan = _Run(cfg, corpus, None, trunk, ranks).train(
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
    return _Run(cfg, corpus, [float(lr) for lr in lrs]).train(on_step, on_eval)


class _Run:
    """The one training loop: the ordinary model (``lrs`` None) or one stacked trial per η in ``lrs``."""

    def __init__(self, cfg: Config, corpus: Corpus, lrs: Optional[list[float]], trunk: Optional[Trunk] = None,
                 ranks: Optional[Ranks] = None) -> None:
        t = self.t = cfg.train
        self.stacked = lrs is not None
        self.trunk = trunk
        self.ranks = ranks
        self.branch = cooldown_start(t)
        self.device = prepare_device(t.device if ranks is None else str(ranks.device), t.threads)
        self.model, self.plan = build_model(cfg, corpus.vocab_size, self.device, trials=None if lrs is None else len(lrs))
        trained = self.model if ranks is None else spread(self.model, ranks)
        self.optimizer = build_optimizer(self.model, self.plan, trial_lrs=lrs)
        if ranks is not None and ranks.parallel == "ddp" and hasattr(self.optimizer, "replicated_over"):
            self.optimizer.replicated_over(ranks.group)
        self.forward = TrainingForward(trained, ranks is None and compile_wanted(t, cfg.model.width, self.device),
                                       self.device)
        self.base_lrs = [group["lr"] for group in self.optimizer.param_groups]
        self.batches = Batches(corpus.train, t.batch_size, t.seq_len, t.seed, self.device)
        self.val_batches = [self._rows(batch) for batch in fixed_batches(
            corpus.val, eval_batch_size(t), t.seq_len, t.eval_batches, EVAL_SEED, self.device)]
        self.noise_batches = noise_batches(corpus.train, t, self.device) if t.noise_scale else None
        self.tokens_per_step = tokens_per_step(t.batch_size, t.seq_len)
        self.records = [_Record(eta) for eta in (lrs if lrs is not None else [self.plan.lr])]
        self.active = list(range(len(self.records)))

    def train(self, on_step: Optional[TrialsStepCallback],
              on_eval: Optional[TrialEvalCallback]) -> tuple[list[TrainResult], Plan]:
        start = self._resume(on_eval) if self.trunk is not None else 0
        for step in range(start + 1, self.t.steps + 1):
            if not self.active:
                break
            losses = self._step(step)
            if on_step is not None:
                on_step(step, dict(zip(self.active, losses)))
            self._drop_finished()
            if self.active and (step == self.t.steps or (self.t.eval_every and step % self.t.eval_every == 0)):
                self._evaluate(step, on_eval)
                self._drop_finished()
            if self.trunk is not None and self.active and step in self.trunk.branches and step <= self.branch:
                self._checkpoint(step)
        peak = peak_memory_mb(self.device)
        return [rec.result(self.tokens_per_step, peak, self.t.steps, self.forward.compiled)
                for rec in self.records], self.plan

    def _resume(self, on_eval: Optional[TrialEvalCallback]) -> int:
        """Load the trunk's last checkpoint at or before this run's decay and replay its evaluations to
        ``on_eval``; the step it holds (0: none written yet, train from scratch)."""
        assert self.trunk is not None and not self.stacked
        found = self.trunk.latest(self.branch)
        if found is None:
            return 0
        step, path = found
        state = self.trunk.load(path)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.batches.generator.set_state(state["batches"])
        torch.set_rng_state(state["rng"])
        rec = self.records[0]
        rec.initial_loss, rec.curve, rec.evals = state["initial_loss"], state["curve"], state["evals"]
        rec.steps = rec.branched_at = step
        rec.offset = rec.curve[-1]["seconds"] if rec.curve else 0.0
        for e in rec.evals:
            if on_eval is not None and on_eval(0, int(e["step"]), e["val_loss"]):
                rec.status, rec.message = "stopped", f"stopped by the caller at step {int(e['step'])}"
                self.active = []
                break
        return step

    def _checkpoint(self, step: int) -> None:
        """Write the trunk's state after ``step``: what the next step reads, and the record so far."""
        assert self.trunk is not None
        rec = self.records[0]
        self.trunk.save(step, {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                               "batches": self.batches.generator.get_state(), "rng": torch.get_rng_state(),
                               "initial_loss": rec.initial_loss, "curve": rec.curve, "evals": rec.evals})

    def _step(self, step: int) -> list[float]:
        """One optimizer step (``step`` counts from 1): schedule, forward, backward, clip, update, record."""
        start = time.perf_counter()
        factor = schedule_factor(step - 1, self.t)
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * factor
        if hasattr(self.optimizer, "set_progress"):
            self.optimizer.set_progress(progress(step - 1, self.t))
        x, y = self._rows(self.batches.next())
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            losses = loss_of(self.forward, x, y).reshape(-1)
        losses.sum().backward()
        if self.t.grad_clip > 0:
            clip = clip_grad_norm_per_trial_ if self.stacked else torch.nn.utils.clip_grad_norm_
            clip(self.model.parameters(), self.t.grad_clip)
        values = (losses if self.ranks is None else self.ranks.mean(losses)).tolist()
        synchronize(self.device)
        opt_start = time.perf_counter()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        synchronize(self.device)
        now = time.perf_counter()
        for i, value in zip(self.active, values):
            self.records[i].add_step(step, value, factor, self.tokens_per_step, now - start, now - opt_start,
                                     self.t.diverge_factor)
        return values

    def _evaluate(self, step: int, on_eval: Optional[TrialEvalCallback]) -> None:
        last = step == self.t.steps
        noise = self._measure_noise()
        vals = evaluate(self.model, self.val_batches, self.device.type == "cuda")
        if self.ranks is not None:
            vals = self.ranks.mean(torch.tensor(vals, device=self.device)).tolist()
        for pos, (i, val) in enumerate(zip(self.active, vals)):
            rec = self.records[i]
            rec.evals.append({"step": step, "val_loss": val})
            if noise is not None:
                rec.add_noise(step, *noise[pos])
            if not math.isfinite(val):
                rec.status, rec.message = TrialStatus.DIVERGED, f"validation loss {val} at step {step}: diverged"
            elif self._stop(on_eval is not None and on_eval(i, step, val)) and not last:
                rec.status, rec.message = "stopped", f"stopped by the caller at step {step}"

    def _stop(self, wanted: bool) -> bool:
        """Whether the caller stops a run: its own answer in one process, rank 0's on every rank."""
        return wanted if self.ranks is None else self.ranks.agree(wanted)

    def _rows(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's rows of a global batch (all of it in one process)."""
        if self.ranks is None:
            return batch
        return self.ranks.rows(batch[0]), self.ranks.rows(batch[1])

    def _measure_noise(self) -> Optional[list[tuple[float, float]]]:
        """Each active trial's (|G|², tr(Σ)) from ``NOISE_MICRO_BATCHES`` batches of the measurement's own sampler;
        None when ``train.noise_scale`` is off."""
        if self.noise_batches is None:
            return None
        batches = [self.noise_batches.next() for _ in range(NOISE_MICRO_BATCHES)]
        return measure_noise(self.model, batches, loss_of, self.stacked, self.device.type == "cuda")

    def _drop_finished(self) -> None:
        """Trials that diverged or were stopped leave the stacked model and its optimizer."""
        keep = [pos for pos, i in enumerate(self.active) if self.records[i].status == TrialStatus.OK]
        if len(keep) < len(self.active) and keep:
            index = torch.tensor(keep, device=self.device)
            keep_trials(self.model, self.optimizer, index)
            self.base_lrs = [base[index] if isinstance(base, torch.Tensor) else base for base in self.base_lrs]
        self.active = [self.active[pos] for pos in keep]
