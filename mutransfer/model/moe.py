"""A mixture-of-experts feed-forward layer for the built-in GPT: a softmax router picks ``top_k`` of ``experts``
expert MLPs per token, dropless, plus optional shared experts every token passes through.

Dispatch sorts the (token, expert) assignments by expert, pads each expert's group to the largest load and runs
one batched matmul over the experts (no Python loop per expert); ``padding`` records the computed rows over the
real ones, the cost over the active FLOPs of the routed experts. Load is balanced without an auxiliary loss (Wang et al., "Auxiliary-Loss-Free Load Balancing Strategy
for Mixture-of-Experts"; DeepSeek-V3): a per-expert bias, added to the router's scores only to choose the experts,
moves by ``balance_rate`` towards the mean load after every training forward, so the language-model loss is the
only loss and its gradient is never traded against a balancing term.

Roles (``registry.roles``): the router's weight is ``router`` (width → a fixed number of experts, like the LM head),
the experts' stacked (experts, out, in) matrices are ``expert`` (each expert a hidden matrix of its own).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..schema import ModelConfig, MoEConfig

__all__ = ["MoE", "Experts", "expert_hidden", "moe_blocks"]


def expert_hidden(cfg: ModelConfig, width: int) -> float:
    """One expert's hidden size at ``width``: ``expert_ratio`` × ``mlp_ratio`` × width (a whole number when valid)."""
    assert cfg.moe is not None
    return cfg.moe.expert_ratio * cfg.mlp_ratio * width


def moe_blocks(moe: MoEConfig, depth: int) -> tuple[int, ...]:
    """The indices of the blocks that hold a mixture of experts: every ``every``-th block, the last of each run."""
    return tuple(i for i in range(depth) if (i + 1) % moe.every == 0)


class Experts(nn.Module):
    """E expert MLPs (d → f → d, GELU) as two stacked weights, (E, f, d) and (E, d, f), in torch layout."""

    def __init__(self, experts: int, width: int, hidden: int, bias: bool, device: Optional[torch.device]) -> None:
        super().__init__()
        self.up = nn.Parameter(torch.empty(experts, hidden, width, device=device))
        self.down = nn.Parameter(torch.empty(experts, width, hidden, device=device))
        self.up_bias = nn.Parameter(torch.zeros(experts, hidden, device=device)) if bias else None
        self.down_bias = nn.Parameter(torch.zeros(experts, width, device=device)) if bias else None
        self.param_roles = {"up": "expert", "down": "expert"}
        if bias:
            self.param_roles.update(up_bias="bias", down_bias="bias")
        self.multipliers = {name: 1.0 for name in self.param_roles}

    def _linear(self, x: Tensor, name: str) -> Tensor:
        """x (E, C, din) through every expert's ``name`` matrix at once → (E, C, dout)."""
        weight, bias = getattr(self, name), getattr(self, f"{name}_bias")
        y = torch.bmm(x, weight.mT)  # (E, C, dout)
        y = y * self.multipliers[name] if self.multipliers[name] != 1.0 else y
        if bias is not None:
            y = y + bias.unsqueeze(1) * self.multipliers[f"{name}_bias"]  # (E, 1, dout)
        return y

    def forward(self, grouped: Tensor, expert: Tensor, slot: Tensor) -> Tensor:
        """Tokens grouped by expert, (E, C, d) padded to the largest load C → the output of each assignment
        ``(expert[a], slot[a])``, (A, d), in the order of the assignments given."""
        out = self._linear(F.gelu(self._linear(grouped, "up")), "down")  # (E, C, d)
        return out[expert, slot]  # (A, d)


class MoE(nn.Module):
    """``router`` (width → E logits) → top-k of ``experts`` (dropless) + ``shared`` (an MLP every token passes, or
    None); a (..., T, C) input gives a (..., T, C) output."""

    def __init__(self, router: nn.Module, experts: Experts, shared: Optional[nn.Module], top_k: int,
                 balance_rate: float) -> None:
        super().__init__()
        self.router, self.experts, self.shared = router, experts, shared
        self.top_k, self.balance_rate = top_k, balance_rate
        self.register_buffer("balance_bias", torch.zeros(experts.up.size(0), device=experts.up.device))
        self.load: Optional[Tensor] = None
        """Assignments per expert in the last forward, (E,)."""
        self.padding = 1.0
        """Rows the last forward's batched matmul computed over the real assignments: E · max load / (tokens · k)."""

    def route(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """(N, C) → the chosen experts (N, k) and their gates (N, k): softmax probabilities renormalised over the
        chosen k, which are chosen by logits + balance bias (the bias steers the choice, never the gates)."""
        logits = self.router(tokens)  # (N, E)
        probs = logits.float().softmax(dim=-1)  # (N, E)
        chosen = torch.topk(logits.detach().float() + self.balance_bias, self.top_k, dim=-1).indices  # (N, k)
        gates = probs.gather(1, chosen)  # (N, k)
        return chosen, (gates / gates.sum(dim=-1, keepdim=True)).to(tokens.dtype)

    def forward(self, x: Tensor) -> Tensor:
        *lead, C = x.shape
        tokens = x.reshape(-1, C)  # (N, C)
        N, k, E = tokens.size(0), self.top_k, self.balance_bias.numel()
        chosen, gates = self.route(tokens)  # (N, k), (N, k)
        expert = chosen.reshape(-1)  # (N·k,) assignment a = token · k + choice
        order = torch.argsort(expert, stable=True)  # (N·k,) the assignments sorted by expert
        load = torch.bincount(expert, minlength=E)  # (E,)
        slot = torch.empty_like(expert)  # (N·k,) each assignment's row in its expert's group
        slot[order] = torch.arange(N * k, device=x.device) - (torch.cumsum(load, 0) - load)[expert[order]]
        capacity = int(load.max())
        grouped = tokens.new_zeros(E, capacity, C)  # (E, C_max, C)
        grouped[expert, slot] = tokens.repeat_interleave(k, dim=0)
        out = self.experts(grouped, expert, slot).view(N, k, C)  # (N, k, C)
        y = (out * gates.unsqueeze(-1)).sum(dim=1)  # (N, C)
        if self.shared is not None:
            y = y + self.shared(tokens)
        self.load, self.padding = load.detach(), E * capacity / (N * k)
        if self.training and torch.is_grad_enabled() and self.balance_rate:
            with torch.no_grad():
                self.balance_bias += self.balance_rate * torch.sign(load.float().mean() - load.float())
        return y.reshape(*lead, C)
