"""The coordinate check's measurements: the stability metrics of Su, "Above MuP 3", per module across widths.

For each width the model is built under the configured preset and optimizer, trained K steps on the same
batches at a constant LR, and measured on fixed probe inputs after every step:
forward (RMS of each module's output), update (RMS of its change since step 0), dependency (per block,
RMS(f(x₁) − f(x₂)) / RMS(x₁ − x₂) on two probe batches) and, per hidden matrix, ‖ΔW‖₂ / ‖W₀‖₂.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional, Sequence

import pandas as pd
import torch
from torch import Tensor, nn

from ..model.apply import build_optimizer
from ..model.build import build_model
from ..model.gpt import GPT
from ..schema import Config
from .data import Batches, Corpus, fixed_batches
from .loop import EVAL_SEED

__all__ = ["coord_check", "probe_modules", "COLUMNS", "PROBE_BATCH"]

COLUMNS = ["width", "step", "module", "quantity", "value", "seed"]
PROBE_BATCH = 8


def _rms(x: Tensor) -> float:
    return float(x.float().pow(2).mean().sqrt())


def probe_modules(model: GPT) -> dict[str, nn.Module]:
    """The modules whose outputs are measured, by display name, in forward order."""
    modules: dict[str, nn.Module] = {"embed": model.embed}
    for i, block in enumerate(model.blocks):
        modules[f"block{i}.attn"] = block.attn
        modules[f"block{i}.mlp"] = block.mlp
        modules[f"block{i}.resid"] = block
    modules["final_norm"] = model.final_norm
    if model.lm_head is not None:
        modules["logits"] = model.lm_head
    return modules


@torch.no_grad()
def _capture(model: GPT, idx: Tensor) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Outputs of every probed module, and each block's input, for one probe batch."""
    outputs: dict[str, Tensor] = {}
    inputs: dict[str, Tensor] = {}
    handles = []
    for name, module in probe_modules(model).items():
        handles.append(module.register_forward_hook(
            lambda _m, _i, out, name=name: outputs.__setitem__(name, out.detach().float().clone())))
        if name.endswith(".resid"):
            handles.append(module.register_forward_pre_hook(
                lambda _m, args, name=name: inputs.__setitem__(name, args[0].detach().float().clone())))
    try:
        model(idx)
    finally:
        for handle in handles:
            handle.remove()
    return outputs, inputs


def _measure(model: GPT, probes: Sequence[Tensor], reference: Optional[dict[str, Tensor]], weights0: dict[str, Tensor],
             width: int, step: int, seed: int) -> tuple[list[dict], dict[str, Tensor]]:
    (out_a, in_a), (out_b, in_b) = (_capture(model, p) for p in probes)
    rows = []

    def add(module: str, quantity: str, value: float) -> None:
        rows.append({"width": width, "step": step, "module": module, "quantity": quantity, "value": value,
                     "seed": seed})

    for name, out in out_a.items():
        add(name, "forward", _rms(out))
        if reference is not None:
            add(name, "update", _rms(out - reference[name]))
        if name in in_a:
            add(name, "dependency", _rms(out - out_b[name]) / _rms(in_a[name] - in_b[name]))
    if reference is not None:
        params = dict(model.named_parameters())
        for name, w0 in weights0.items():
            delta = torch.linalg.matrix_norm(params[name].detach().float() - w0, ord=2)
            add(name, "weight_update", float(delta / torch.linalg.matrix_norm(w0, ord=2)))
    return rows, out_a


def coord_check(cfg: Config, corpus: Corpus, widths: Sequence[int], steps: int, lr: float, seeds: Sequence[int],
                on_width: Optional[Callable[[int, int], None]] = None) -> pd.DataFrame:
    """The tidy table (width, step, module, quantity, value, seed) over widths × seeds × steps 0..K."""
    rows: list[dict] = []
    device = torch.device("cpu")
    for seed in seeds:
        for width in widths:
            if on_width:
                on_width(width, seed)
            run = replace(cfg, model=replace(cfg.model, width=width), optimizer=replace(cfg.optimizer, lr=lr),
                          train=replace(cfg.train, seed=seed, warmup_frac=0.0, schedule="constant"))
            model, plan = build_model(run, corpus.vocab_size, device)
            optimizer = build_optimizer(model, plan)
            batches = Batches(corpus.train, run.train.batch_size, run.train.seq_len, seed, device)
            probes = [x for x, _ in fixed_batches(corpus.val, PROBE_BATCH, run.train.seq_len, 2, EVAL_SEED + seed,
                                                  device)]
            weights0 = {p.name: dict(model.named_parameters())[p.name].detach().float().clone()
                        for p in plan.params if p.role == "hidden"}
            new, reference = _measure(model, probes, None, weights0, width, 0, seed)
            rows += new
            for step in range(1, steps + 1):
                x, y = batches.next()
                _, loss = model(x, y)
                assert loss is not None
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                rows += _measure(model, probes, reference, weights0, width, step, seed)[0]
    return pd.DataFrame(rows, columns=COLUMNS)
