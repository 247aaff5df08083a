"""A width-parametrized decoder-only GPT and its role registry. The model only: no optimizer, no scaling rules.

Every weight is a plain parameter applied through ``dense``; each module declares the role of each of its
parameters, and ``GPT.roles`` collects them by parameter name; ``GPT.in_block`` names those inside the
residual blocks, whose outputs are scaled by ``set_branch_multiplier``. Forward multipliers (the abc table's m^-a)
are plain floats in each module's ``multipliers`` dict, set by ``GPT.set_multipliers``.

``GPT(..., trials=K)`` stacks K independent copies of every parameter along a leading trial dimension
(K learning-rate trials trained as one model): activations then carry that leading dimension, matmuls are
batched, embeddings gather per trial and attention folds the trials into its batch. ``trials=None`` is the
ordinary model with ordinary parameter shapes.

With ``model.moe`` set, the MLP of every ``every``-th block is a mixture of experts (``model.moe``); such a GPT is
not stacked.
"""

from __future__ import annotations

from typing import Mapping, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..schema import ModelConfig
from .moe import Experts, MoE, expert_hidden, moe_blocks

__all__ = ["GPT", "dense", "check_roles", "next_token_loss"]


def _stacked(trials: Optional[int], *shape: int) -> tuple[int, ...]:
    return shape if trials is None else (trials, *shape)


def dense(x: Tensor, weight: Tensor, bias: Optional[Tensor], mult: float = 1.0, bias_mult: float = 1.0) -> Tensor:
    """y = mult · x Wᵀ + bias_mult · b, with W in torch layout (dout, din).

    A stacked weight (K, dout, din) takes x of shape (K, ..., din) and a bias of shape (K, dout).
    """
    if weight.ndim == 3:
        K, dout, din = weight.shape
        x2 = x.reshape(K, -1, din)
        if bias is None:
            y = torch.bmm(x2, weight.mT)
            y = y * mult if mult != 1.0 else y
        else:
            y = torch.baddbmm(bias.unsqueeze(1), x2, weight.mT, beta=bias_mult, alpha=mult)
        return y.reshape(*x.shape[:-1], dout)
    y = F.linear(x, weight)
    if mult != 1.0:
        y = y * mult
    if bias is not None:
        y = y + (bias * bias_mult if bias_mult != 1.0 else bias)
    return y


class Dense(nn.Module):
    def __init__(self, din: int, dout: int, bias: bool, role: str, device: Optional[torch.device],
                 trials: Optional[int]) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(_stacked(trials, dout, din), device=device))
        self.bias = nn.Parameter(torch.zeros(_stacked(trials, dout), device=device)) if bias else None
        self.param_roles = {"weight": role, "bias": "bias"} if bias else {"weight": role}
        self.multipliers = {name: 1.0 for name in self.param_roles}

    def forward(self, x: Tensor) -> Tensor:
        return dense(x, self.weight, self.bias, self.multipliers["weight"], self.multipliers.get("bias", 1.0))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, device: Optional[torch.device], trials: Optional[int]) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(_stacked(trials, dim), device=device))
        self.eps = eps
        self.param_roles = {"weight": "gain"}
        self.multipliers = {"weight": 1.0}

    def forward(self, x: Tensor) -> Tensor:
        gain = self.weight * self.multipliers["weight"] if self.multipliers["weight"] != 1.0 else self.weight
        if gain.ndim == 1:
            return F.rms_norm(x, (x.shape[-1],), gain, self.eps)
        K, C = gain.shape
        return F.rms_norm(x, (C,), None, self.eps) * gain.view(K, *(1,) * (x.ndim - 2), C)


class Embedding(nn.Module):
    def __init__(self, vocab: int, dim: int, device: Optional[torch.device], trials: Optional[int]) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(_stacked(trials, vocab, dim), device=device))
        self.param_roles = {"weight": "embedding"}
        self.multipliers = {"weight": 1.0}

    def forward(self, idx: Tensor) -> Tensor:
        """Token ids (B, T) → (B, T, C), or (K, B, T, C) for a stacked table (K, V, C)."""
        if self.weight.ndim == 3:
            K, V, C = self.weight.shape
            offsets = torch.arange(K, device=idx.device).view(K, *(1,) * idx.ndim) * V
            out = F.embedding(idx.unsqueeze(0) + offsets, self.weight.reshape(K * V, C))
        else:
            out = F.embedding(idx, self.weight)
        return out * self.multipliers["weight"] if self.multipliers["weight"] != 1.0 else out


def rope(x: Tensor, base: float) -> Tensor:
    """Rotary position embedding on (B, nh, T, hs) with the rotate-half convention."""
    T, hs = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, hs, 2, device=x.device, dtype=torch.float32) / hs)
    angles = torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), inv_freq)  # (T, hs/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, device: Optional[torch.device], trials: Optional[int]) -> None:
        super().__init__()
        d = cfg.width
        self.n_head, self.head_dim, self.rope_base = d // cfg.head_dim, cfg.head_dim, cfg.rope_base
        self.q = Dense(d, d, cfg.bias, "hidden", device, trials)
        self.k = Dense(d, d, cfg.bias, "hidden", device, trials)
        self.v = Dense(d, d, cfg.bias, "hidden", device, trials)
        self.o = Dense(d, d, cfg.bias, "hidden", device, trials)

    def forward(self, x: Tensor) -> Tensor:
        """(..., T, C) → (..., T, C); leading dims (batch, or trials × batch) are folded into SDPA's batch."""
        *lead, T, C = x.shape
        q, k, v = (lin(x).reshape(-1, T, self.n_head, self.head_dim).transpose(1, 2)
                   for lin in (self.q, self.k, self.v))
        q, k = rope(q, self.rope_base), rope(k, self.rope_base)  # (N, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (N, nh, T, hs)
        return self.o(y.transpose(1, 2).reshape(*lead, T, C))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig, device: Optional[torch.device], trials: Optional[int],
                 hidden: Optional[int] = None) -> None:
        super().__init__()
        hidden = cfg.mlp_ratio * cfg.width if hidden is None else hidden
        self.up = Dense(cfg.width, hidden, cfg.bias, "hidden", device, trials)
        self.down = Dense(hidden, cfg.width, cfg.bias, "hidden", device, trials)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.gelu(self.up(x)))


def mixture(cfg: ModelConfig, device: Optional[torch.device]) -> MoE:
    """The block's mixture of experts (``model.moe``): a router Dense, the stacked experts and the shared experts'
    MLP (``shared_experts`` × the expert hidden size)."""
    assert cfg.moe is not None
    moe, hidden = cfg.moe, round(expert_hidden(cfg, cfg.width))
    shared = MLP(cfg, device, None, hidden * moe.shared_experts) if moe.shared_experts else None
    return MoE(Dense(cfg.width, moe.experts, False, "router", device, None),
               Experts(moe.experts, cfg.width, hidden, cfg.bias, device), shared, moe.top_k, moe.balance_rate)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, device: Optional[torch.device], trials: Optional[int],
                 experts: bool = False) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.width, cfg.norm_eps, device, trials)
        self.attn = Attention(cfg, device, trials)
        self.mlp_norm = RMSNorm(cfg.width, cfg.norm_eps, device, trials)
        self.mlp: MLP | MoE = mixture(cfg, device) if experts else MLP(cfg, device, trials)
        self.branch_multiplier = 1.0

    def forward(self, x: Tensor) -> Tensor:
        if self.branch_multiplier == 1.0:
            x = x + self.attn(self.attn_norm(x))
            return x + self.mlp(self.mlp_norm(x))
        x = x + self.attn(self.attn_norm(x)) * self.branch_multiplier
        return x + self.mlp(self.mlp_norm(x)) * self.branch_multiplier


class GPT(nn.Module):
    """Token embedding → depth × pre-norm blocks (RoPE attention, 4× GELU MLP or a mixture of experts) → RMSNorm →
    untied LM head.

    ``trials=K`` stacks K independent models along a leading dimension: token ids (B, T) in, logits
    (K, B, T, V) out.
    """

    def __init__(self, cfg: ModelConfig, vocab_size: int, device: Optional[torch.device | str] = None,
                 trials: Optional[int] = None) -> None:
        super().__init__()
        if trials is not None and trials < 1:
            raise ValueError(f"trials must be a positive number of stacked models or None, got {trials}")
        if trials is not None and cfg.moe is not None:
            raise ValueError("stacked trials of a mixture of experts are not supported; build it with trials=None")
        device = torch.device(device) if device is not None else None
        self.config, self.vocab_size = cfg, vocab_size
        self.embed = Embedding(vocab_size, cfg.width, device, trials)
        sparse = moe_blocks(cfg.moe, cfg.depth) if cfg.moe is not None else ()
        self.blocks = nn.ModuleList(Block(cfg, device, trials, i in sparse) for i in range(cfg.depth))
        self.final_norm = RMSNorm(cfg.width, cfg.norm_eps, device, trials)
        self.lm_head = None if cfg.tie_embeddings else Dense(cfg.width, vocab_size, False, "readout", device, trials)
        self.roles: dict[str, str] = {
            f"{mod_name}.{p_name}" if mod_name else p_name: role
            for mod_name, mod in self.named_modules()
            for p_name, role in getattr(mod, "param_roles", {}).items()
        }
        check_roles(self, self.roles)
        self.in_block = frozenset(name for name in self.roles if name.startswith("blocks."))
        """The parameters inside residual blocks (the depth rules apply to them)."""

    def set_branch_multiplier(self, value: float) -> None:
        """Multiply every residual branch's output (attention and MLP) by ``value`` (the plan's m_L^-α)."""
        for block in self.blocks:
            block.branch_multiplier = float(value)

    def set_multipliers(self, multipliers: Mapping[str, float]) -> None:
        """Set each parameter's forward multiplier, keyed by parameter name."""
        modules = dict(self.named_modules())
        for name, value in multipliers.items():
            mod_name, _, p_name = name.rpartition(".")
            modules[mod_name].multipliers[p_name] = float(value)

    def hidden_states(self, idx: Tensor) -> Tensor:
        x = self.embed(idx)  # (B, T, C) or (K, B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)

    def forward(self, idx: Tensor, targets: Optional[Tensor] = None) -> tuple[Tensor, Optional[Tensor]]:
        h = self.hidden_states(idx)
        if self.lm_head is not None:
            logits = self.lm_head(h)  # (B, T, V) or (K, B, T, V)
        else:
            logits = dense(h, self.embed.weight, None, self.embed.multipliers["weight"])
        if targets is None:
            return logits, None
        return logits, next_token_loss(logits, targets)


def next_token_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy in fp32 (float64 for float64 logits): a scalar for logits (..., V) matching ``targets`` (...), or one loss per
    trial, shape (K,), for stacked logits (K, ..., V)."""
    flat = logits.to(torch.promote_types(logits.dtype, torch.float32)).reshape(-1, logits.size(-1))
    if logits.ndim == targets.ndim + 1:
        return F.cross_entropy(flat, targets.reshape(-1))
    K = logits.size(0)
    per_token = F.cross_entropy(flat, targets.reshape(1, -1).expand(K, -1).reshape(-1), reduction="none")
    return per_token.view(K, -1).mean(1)


def check_roles(model: nn.Module, roles: Mapping[str, str]) -> None:
    """Every parameter has exactly one role and every role entry names a parameter."""
    names = [name for name, _ in model.named_parameters()]
    missing = sorted(set(names) - set(roles))
    extra = sorted(set(roles) - set(names))
    if missing or extra or len(names) != len(set(names)):
        raise ValueError(f"role registry mismatch: without a role {missing}, roles for no parameter {extra}")
