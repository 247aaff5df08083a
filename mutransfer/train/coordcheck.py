"""The coordinate check's measurements: the stability metrics of Su, "Above MuP 3", per module across widths
(or across depths at one width).

For each width (depth) the model is built under the configured preset and optimizer, trained K steps on the
same batches at a constant LR, and measured on fixed probe inputs after every step:
forward (RMS of each module's output), update (RMS of its change since step 0), dependency (per block and
per branch: RMS(f(x₁) − f(x₂)) / RMS(x₁ − x₂) on two probe batches, x the block's input, f the block or its
attention or MLP branch — a dead or exploding branch hides behind the skip connection in the block's own) and,
per matrix (hidden, embedding and LM head), ‖ΔW‖₂ / ‖W₀‖₂. A mixture of experts adds its router's logits
(``router``) and its experts' outputs before gating (``experts``, one row per token and chosen expert) beside the
combined output (``mlp``). Across depth the
blocks are compared by position: ``first_block`` and ``last_block`` (whose ``resid`` output is the residual
stream after every block), so that each module name exists at every depth.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional, Sequence

import pandas as pd
import torch
from torch import Tensor, nn

from ..model.apply import build_optimizer
from ..model.gpt import GPT
from ..model.moe import MoE
from ..model_kinds import architecture_of, build_model
from ..schema import Config
from .data import Batches, Corpus, fixed_batches
from .loop import EVAL_SEED, loss_of

__all__ = ["coord_check", "probe_modules", "parameter_label", "columns", "AXES", "PROBE_BATCH"]

AXES = ("width", "depth")
PROBE_BATCH = 8


def columns(axis: str = "width") -> list[str]:
    """The tidy table's columns: the axis measured along, then step, module, quantity, value, seed."""
    return [axis, "step", "module", "quantity", "value", "seed"]


def _by_position(name: str, depth: int) -> list[str]:
    """A module or parameter name with its block index replaced by the block's position (first, last), so
    names match across depths; [] for the blocks in between."""
    for prefix in ("blocks.", "block"):
        if name.startswith(prefix):
            index, _, rest = name[len(prefix):].partition(".")
            if not index.isdigit():
                return [name]
            ends = [label for label, i in (("first_block", 0), ("last_block", depth - 1)) if int(index) == i]
            return [f"{label}.{rest}" for label in ends]
    return [name]


def _block_of(module: str) -> str:
    """The probe name whose input is the block input of ``module`` (a block, or its attn / mlp branch)."""
    head, _, part = module.rpartition(".")
    return f"{head}.resid" if part in ("attn", "mlp", "resid") else ""


def _rms(x: Tensor) -> float:
    return float(x.float().pow(2).mean().sqrt())


def probe_modules(model: nn.Module) -> dict[str, nn.Module]:
    """The modules whose outputs are measured, by display name, in forward order: the built-in GPT's, or a
    shipped Hugging Face architecture's under the same names."""
    if isinstance(model, GPT):
        modules: dict[str, nn.Module] = {"embed": model.embed}
        for i, block in enumerate(model.blocks):
            modules[f"block{i}.attn"] = block.attn
            if isinstance(block.mlp, MoE):
                modules[f"block{i}.router"] = block.mlp.router
                modules[f"block{i}.experts"] = block.mlp.experts
            modules[f"block{i}.mlp"] = block.mlp
            modules[f"block{i}.resid"] = block
        modules["final_norm"] = model.final_norm
        if model.lm_head is not None:
            modules["logits"] = model.lm_head
        return modules
    arch = architecture_of(model)
    modules = {"embed": model.get_submodule(arch.embedding)}
    for i, layer in enumerate(model.get_submodule(arch.layers)):
        modules[f"block{i}.attn"] = layer.get_submodule(arch.attention)
        modules[f"block{i}.mlp"] = layer.get_submodule(arch.mlp)
        modules[f"block{i}.resid"] = layer
    modules["final_norm"] = model.get_submodule(arch.final_norm)
    modules["logits"] = model.get_submodule(arch.readout)
    return modules


def parameter_label(model: nn.Module, name: str) -> str:
    """A parameter's name in the coordinate-check table: a Hugging Face model's embeddings and layers are named
    as the built-in GPT's (``embed.weight``, ``blocks.<i>.…``), so bands and depth positions apply."""
    if isinstance(model, GPT):
        return name
    for prefix, label in architecture_of(model).labels.items():
        if name.startswith(prefix):
            return label + name[len(prefix):]
    return name


def _tensor(out: object) -> Tensor:
    """A module's output tensor (attention modules of ``transformers`` return a tuple)."""
    return out if isinstance(out, Tensor) else out[0]  # type: ignore[index]


@torch.no_grad()
def _capture(model: nn.Module, idx: Tensor) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Outputs of every probed module, and each block's input, for one probe batch."""
    outputs: dict[str, Tensor] = {}
    inputs: dict[str, Tensor] = {}
    handles = []
    for name, module in probe_modules(model).items():
        handles.append(module.register_forward_hook(
            lambda _m, _i, out, name=name: outputs.__setitem__(name, _tensor(out).detach().float().clone())))
        if name.endswith(".resid"):
            handles.append(module.register_forward_pre_hook(
                lambda _m, args, kwargs, name=name: inputs.__setitem__(
                    name, (args[0] if args else kwargs["hidden_states"]).detach().float().clone()),
                with_kwargs=True))
    try:
        model(idx)
    finally:
        for handle in handles:
            handle.remove()
    return outputs, inputs


def _measure(model: nn.Module, probes: Sequence[Tensor], reference: Optional[dict[str, Tensor]], weights0: dict[str, Tensor],
             point: tuple[str, int], step: int, seed: int) -> tuple[list[dict], dict[str, Tensor]]:
    (out_a, in_a), (out_b, in_b) = (_capture(model, p) for p in probes)
    rows = []
    axis, value_on_axis = point
    depth = sum(name.endswith(".resid") for name in out_a)

    def add(module: str, quantity: str, value: float) -> None:
        names = _by_position(module, depth) if axis == "depth" else [module]
        rows.extend({axis: value_on_axis, "step": step, "module": name, "quantity": quantity, "value": value,
                     "seed": seed} for name in names)

    for name, out in out_a.items():
        add(name, "forward", _rms(out))
        if reference is not None:
            add(name, "update", _rms(out - reference[name]))
        block_input = _block_of(name)
        if block_input in in_a:
            add(name, "dependency", _rms(out - out_b[name]) / _rms(in_a[block_input] - in_b[block_input]))
    if reference is not None:
        params = dict(model.named_parameters())
        for name, w0 in weights0.items():
            delta = torch.linalg.matrix_norm(params[name].detach().float() - w0, ord=2)
            add(parameter_label(model, name), "weight_update", float(delta / torch.linalg.matrix_norm(w0, ord=2)))
    return rows, out_a


def coord_check(cfg: Config, corpus: Corpus, sizes: Sequence[int], steps: int, lr: float, seeds: Sequence[int],
                on_width: Optional[Callable[[int, int], None]] = None, axis: str = "width") -> pd.DataFrame:
    """The tidy table (``axis``, step, module, quantity, value, seed) over sizes × seeds × steps 0..K, where the
    sizes are widths (``axis="width"``) or depths at the configured width (``axis="depth"``)."""
    if axis not in AXES:
        raise ValueError(f"axis {axis!r} is not one of {AXES}")
    rows: list[dict] = []
    device = torch.device("cpu")
    for seed in seeds:
        for size in sizes:
            if on_width:
                on_width(size, seed)
            model_cfg = replace(cfg.model, **{axis: size})
            run = replace(cfg, model=model_cfg, optimizer=replace(cfg.optimizer, lr=lr),
                          train=replace(cfg.train, seed=seed, warmup_frac=0.0, schedule="constant"))
            model, plan = build_model(run, corpus.vocab_size, device)
            optimizer = build_optimizer(model, plan)
            batches = Batches(corpus.train, run.train.batch_size, run.train.seq_len, seed, device)
            probes = [x for x, _ in fixed_batches(corpus.val, PROBE_BATCH, run.train.seq_len, 2, EVAL_SEED + seed,
                                                  device)]
            weights0 = {p.name: dict(model.named_parameters())[p.name].detach().float().clone()
                        for p in plan.params if len(p.shape) == 2}
            new, reference = _measure(model, probes, None, weights0, (axis, size), 0, seed)
            rows += new
            for step in range(1, steps + 1):
                x, y = batches.next()
                loss_of(model, x, y).backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                rows += _measure(model, probes, reference, weights0, (axis, size), step, seed)[0]
    return pd.DataFrame(rows, columns=columns(axis))
