"""Per-layer steepest descent: msign (Muon), row/RMS-normalized SGD and SignSGD; AdamW and SGD for stacked trials.

Weights are in torch layout ``(dout, din)``. Every pure function accepts a batch
``(..., m, n)`` and normalizes over the last dim(s) only, so K trials stacked along
a leading dimension are updated independently. A group's ``lr`` is a float, or a tensor of
K per-trial learning rates for parameters stacked along a leading trial dimension.
"""

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "StackedAdamW",
    "StackedSGD",
    "adamw_update_",
    "clip_grad_norm_per_trial_",
    "descend_",
    "keep_trials",
    "per_trial",
    "sgd_update_",
    "MUON_SCALES",
    "NS_COEFFS",
    "UPDATE_RULES",
    "SteepestDescent",
    "direction",
    "msign",
    "msign_exact",
    "muon_scale",
    "rms_normalize",
    "row_normalize",
    "sign_update",
]

NS_COEFFS: tuple[float, float, float] = (3.4445, -4.7750, 2.0315)
MUON_SCALES: tuple[str, ...] = ("naive", "keller", "mup", "moonlight", "scheduled")
UPDATE_RULES: tuple[str, ...] = ("spectral", "row_norm", "sign", "rms")


def _ns_dtype(G: Tensor, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    return torch.bfloat16 if G.is_cuda else torch.float32


def msign(
    G: Tensor,
    steps: int = 5,
    coeffs: tuple[float, float, float] = NS_COEFFS,
    eps: float = 1e-7,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """Approximate ``U Vᵀ`` of each matrix in ``G`` (..., m, n) by quintic Newton–Schulz.

    Runs in ``dtype`` (None: fp32 on CPU, bf16 on CUDA); returns ``G``'s dtype.
    """
    if G.ndim < 2:
        raise ValueError(f"msign needs a matrix (..., m, n), got shape {tuple(G.shape)}")
    a, b, c = coeffs
    tall = G.size(-2) > G.size(-1)
    X = G.to(_ns_dtype(G, dtype))
    if tall:
        X = X.mT
    X = X.reshape(-1, *X.shape[-2:])
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        A = X @ X.mT
        B = torch.baddbmm(A, A, A, beta=b, alpha=c)
        X = torch.baddbmm(X, B, X, beta=a)
    if tall:
        X = X.mT
    return X.reshape(G.shape).to(G.dtype)


def msign_exact(G: Tensor) -> Tensor:
    """Exact ``U Vᵀ`` of each matrix in ``G`` (..., m, n) via SVD (reference only)."""
    work = torch.promote_types(G.dtype, torch.float32)
    U, _, Vh = torch.linalg.svd(G.to(work), full_matrices=False)
    return (U @ Vh).to(G.dtype)


def row_normalize(G: Tensor, eps: float = 1e-8) -> Tensor:
    """Divide each row (last dim) by its RMS; all-zero rows stay exactly zero."""
    rms = G.norm(dim=-1, keepdim=True) / math.sqrt(G.size(-1))
    return G / (rms + eps)


def rms_normalize(g: Tensor, eps: float = 1e-8) -> Tensor:
    """Divide a vector by its RMS; for a batch (..., n) each slice along the last dim."""
    return row_normalize(g, eps)


def sign_update(g: Tensor) -> Tensor:
    """Elementwise sign (SignSGD direction)."""
    return torch.sign(g)


def muon_scale(rule: str, dout: int, din: int, tau: float = 1.0) -> float:
    """Muon shape factor α for a ``(dout, din)`` weight (seed 004)."""
    ratio = dout / din
    if rule == "naive":
        return 1.0
    if rule == "keller":
        return math.sqrt(max(1.0, ratio))
    if rule == "mup":
        return math.sqrt(ratio)
    if rule == "moonlight":
        return 0.2 * math.sqrt(max(dout, din))
    if rule == "scheduled":
        return math.sqrt(max(tau, ratio))
    raise ValueError(f"unknown Muon scale rule {rule!r}; choose one of {', '.join(MUON_SCALES)}")


def direction(
    rule: str,
    M: Tensor,
    *,
    ns_steps: int = 5,
    ns_coeffs: tuple[float, float, float] = NS_COEFFS,
    ns_dtype: torch.dtype | None = None,
    eps: float = 1e-8,
) -> Tensor:
    """Unit-scale steepest-descent direction of ``M`` under ``rule`` (one of UPDATE_RULES)."""
    if rule == "spectral":
        return msign(M, ns_steps, ns_coeffs, eps, ns_dtype)
    if rule == "row_norm":
        return row_normalize(M, eps)
    if rule == "sign":
        return sign_update(M)
    if rule == "rms":
        return rms_normalize(M, eps)
    raise ValueError(f"unknown update rule {rule!r}; choose one of {', '.join(UPDATE_RULES)}")


def _validate_group(group: dict[str, Any], index: int) -> None:
    name = f"param group {group.get('name', index)!r}"
    rule = group.get("update")
    if rule not in UPDATE_RULES:
        raise ValueError(
            f"{name} has update={rule!r}; set its 'update' key to one of {', '.join(UPDATE_RULES)}"
        )
    if len({id(p) for p in group["params"]}) != len(group["params"]):
        raise ValueError(f"{name} lists a parameter more than once")
    if rule != "spectral":
        return
    scale_rule = group["scale_rule"]
    if scale_rule not in MUON_SCALES:
        raise ValueError(
            f"{name} has scale_rule={scale_rule!r}; choose one of {', '.join(MUON_SCALES)}"
        )
    shape = group["scale_shape"]
    if shape is not None and len(shape) != 2:
        raise ValueError(f"{name} has scale_shape={shape!r}; give (dout, din)")
    for p in group["params"]:
        if p.ndim < 2:
            raise ValueError(
                f"{name} is spectral but holds a {p.ndim}-D parameter of shape {tuple(p.shape)}; "
                "spectral params must be matrices (..., dout, din): use 'rms' or 'sign' instead"
            )


class _PerParameter(torch.optim.Optimizer):
    """An optimizer whose step updates each parameter with a gradient on its own: ``_update(group, p, state)``."""

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """Perform one optimization step."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(group, p, self.state[p])
        return loss


class SteepestDescent(_PerParameter):
    """Momentum + per-group steepest descent; groups need ``update`` in UPDATE_RULES.

    Spectral groups take ``scale_rule`` (MUON_SCALES, default ``mup``) and ``scale_shape``
    ``(dout, din)`` for the shape factor (default: the param's last two dims).
    """

    def __init__(
        self,
        params: Iterable[dict[str, Any]],
        lr: float,
        momentum: float = 0.95,
        nesterov: bool = True,
        weight_decay: float = 0.0,
        ns_steps: int = 5,
        ns_coeffs: tuple[float, float, float] = NS_COEFFS,
        ns_dtype: torch.dtype | None = None,
        eps: float = 1e-8,
    ) -> None:
        if lr < 0.0 or weight_decay < 0.0 or not 0.0 <= momentum < 1.0:
            raise ValueError(
                f"need lr >= 0, weight_decay >= 0 and 0 <= momentum < 1; "
                f"got lr={lr}, weight_decay={weight_decay}, momentum={momentum}"
            )
        defaults: dict[str, Any] = {
            "lr": lr,
            "momentum": momentum,
            "nesterov": nesterov,
            "weight_decay": weight_decay,
            "ns_steps": ns_steps,
            "ns_coeffs": tuple(ns_coeffs),
            "ns_dtype": ns_dtype,
            "eps": eps,
            "scale_rule": "mup",
            "scale_shape": None,
            "tau": 1.0,
        }
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group after checking its update rule, scale rule and parameter shapes."""
        super().add_param_group(param_group)
        try:
            _validate_group(self.param_groups[-1], len(self.param_groups) - 1)
        except ValueError:
            self.param_groups.pop()
            raise

    def set_progress(self, frac: float) -> None:
        """Set training progress in [0, 1]; the ``scheduled`` scale uses tau = 1 - frac."""
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"progress must lie in [0, 1], got {frac}")
        for group in self.param_groups:
            group["tau"] = 1.0 - frac

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        grad, beta = p.grad, group["momentum"]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(grad)
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1.0 - beta)
        update = grad.lerp(buf, beta) if group["nesterov"] else buf
        d = direction(group["update"], update, ns_steps=group["ns_steps"], ns_coeffs=group["ns_coeffs"],
                      ns_dtype=group["ns_dtype"], eps=group["eps"])
        lr = per_trial(group["lr"], p)
        if group["weight_decay"]:
            p.mul_(1.0 - lr * group["weight_decay"])
        descend_(p, d, lr, self._alpha(group, p))

    @staticmethod
    def _alpha(group: dict[str, Any], p: Tensor) -> float:
        if group["update"] != "spectral":
            return 1.0
        dout, din = group["scale_shape"] or p.shape[-2:]
        return muon_scale(group["scale_rule"], int(dout), int(din), group["tau"])


def per_trial(lr: float | Tensor, p: Tensor) -> float | Tensor:
    """A float LR as it is; a tensor of K per-trial LRs shaped (K, 1, ...) to broadcast over ``p`` (K, ...)."""
    if isinstance(lr, Tensor):
        return lr.view(-1, *(1,) * (p.ndim - 1))
    return lr


def descend_(p: Tensor, d: Tensor, lr: float | Tensor, scale: float = 1.0) -> None:
    """p ← p − scale · lr · d in place, for a float LR or a per-trial one from ``per_trial``."""
    if isinstance(lr, Tensor):
        p.addcmul_(d, lr, value=-scale)
    else:
        p.add_(d, alpha=-lr * scale)


def adamw_update_(
    p: Tensor,
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    step: int,
    lr: float | Tensor,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
) -> None:
    """One AdamW step in place, as ``torch.optim.AdamW`` does it (decoupled decay, bias correction)."""
    beta1, beta2 = betas
    if weight_decay:
        p.mul_(1.0 - lr * weight_decay)
    exp_avg.lerp_(grad, 1.0 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    denom = (exp_avg_sq.sqrt() / math.sqrt(1.0 - beta2**step)).add_(eps)
    descend_(p, exp_avg / denom, lr, 1.0 / (1.0 - beta1**step))


def sgd_update_(
    p: Tensor,
    grad: Tensor,
    buf: Tensor | None,
    lr: float | Tensor,
    momentum: float,
    nesterov: bool,
    weight_decay: float,
) -> Tensor | None:
    """One SGD step in place, as ``torch.optim.SGD`` does it (coupled decay, no dampening); returns the buffer."""
    d_p = grad.add(p, alpha=weight_decay) if weight_decay else grad
    if momentum:
        buf = d_p.clone() if buf is None else buf.mul_(momentum).add_(d_p)
        d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
    descend_(p, d_p, lr)
    return buf


class StackedAdamW(_PerParameter):
    """AdamW whose groups may hold per-trial LR tensors (K,) for parameters stacked as (K, ...)."""

    def __init__(self, params: Iterable[dict[str, Any]], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        if not state:
            state.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
        state["step"] += 1
        adamw_update_(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"], per_trial(group["lr"], p),
                      group["betas"], group["eps"], group["weight_decay"])


class StackedSGD(_PerParameter):
    """SGD (momentum, Nesterov) whose groups may hold per-trial LR tensors (K,) for stacked parameters."""

    def __init__(self, params: Iterable[dict[str, Any]], lr: float, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "nesterov": nesterov, "weight_decay": weight_decay})

    def _update(self, group: dict[str, Any], p: Tensor, state: dict[str, Any]) -> None:
        state["momentum_buffer"] = sgd_update_(p, p.grad, state.get("momentum_buffer"), per_trial(group["lr"], p),
                                               group["momentum"], group["nesterov"], group["weight_decay"])


@torch.no_grad()
def clip_grad_norm_per_trial_(params: Iterable[Tensor], max_norm: float) -> Tensor:
    """``clip_grad_norm_`` for each trial of stacked parameters (K, ...) separately; returns the K norms."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.flatten(1).float().pow(2).sum(1) for g in grads]).sum(0).sqrt()
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(per_trial(coef, g).to(g.dtype))
    return norms


@torch.no_grad()
def keep_trials(model: torch.nn.Module, optimizer: torch.optim.Optimizer, keep: Tensor) -> None:
    """Keep only the trials ``keep`` (indices along the leading dimension) of every stacked parameter of
    ``model``, with its optimizer state and its group's per-trial LR; dropped trials cost nothing from now on.

    Parameters are replaced by new ones (autograd caches a leaf's shape, so resizing one in place is unsafe);
    the optimizer's groups and state follow them.
    """
    replaced: dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            new = replaced.setdefault(id(p), torch.nn.Parameter(p.detach()[keep], requires_grad=p.requires_grad))
            setattr(module, name, new)
    for group in optimizer.param_groups:
        if isinstance(group["lr"], Tensor):
            group["lr"] = group["lr"][keep]
        for i, p in enumerate(group["params"]):
            new = replaced[id(p)]
            state = optimizer.state.pop(p, {})
            optimizer.state[new] = {name: value[keep] if isinstance(value, Tensor) and value.ndim == p.ndim
                                    and value.shape[0] == p.shape[0] else value for name, value in state.items()}
            group["params"][i] = new
