"""Typed dataclasses for every config group. Plain data: no Hydra, no torch.

Numeric fields carry their valid range in ``metadata["range"]`` as ``(low, high, low_open, high_open)``;
``config.validate`` checks every one of them, so a new numeric setting cannot forget its range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .registry import FAMILIES, ROLES, TRANSFER_AXES, Axis, axis_named, axis_of_column, generic_axis

__all__ = [
    "ROLES",
    "FAMILIES",
    "LR_KEY",
    "searched_column",
    "DEPTH_COLUMN",
    "Axis",
    "TRANSFER_AXES",
    "generic_axis",
    "axis_named",
    "axis_of_column",
    "LR_COLUMN",
    "NS_COEFFS",
    "ROLE_KEYED",
    "EXPONENT_KEYED",
    "RoleExponents",
    "HFConfig",
    "MoEConfig",
    "ModelConfig",
    "ParametrizationConfig",
    "OptimizerConfig",
    "DataConfig",
    "TrainConfig",
    "Config",
    "config_value",
]

LR_KEY = "optimizer.lr"
"""The config key of the base learning rate η, the key a sweep searches by default."""
LR_COLUMN = "log2_lr"
"""The column that holds log2(η) in every table (trials.csv, summary, verify)."""


def searched_column(key: str) -> str:
    """The trials.csv column that holds a searched key's value (log2 η for the learning rate)."""
    return LR_COLUMN if key == LR_KEY else key


DEPTH_COLUMN = axis_named("depth").column
NS_COEFFS: tuple[float, float, float] = (3.4445, -4.7750, 2.0315)
"""Quintic Newton–Schulz coefficients (Jordan, "Muon"): singular values land roughly in [0.7, 1.2]."""
INF = float("inf")


def rng(low: float, high: float = INF, low_open: bool = False, high_open: bool = False) -> Any:
    """Field metadata: the closed/open interval a numeric setting must lie in."""
    return {"range": (low, high, low_open, high_open)}


ROLE_KEYED = {"keyed": "role"}
"""Field metadata of a mapping keyed by role (``registry.roles.ROLES``): its keys are checked against the registry,
and ``config.with_role_defaults`` fills a role it leaves out from the role it is ``like`` (or the role's default)."""
EXPONENT_KEYED = {"keyed": "exponents"}
"""Field metadata of a mapping keyed by an optimizer family's exponents column (``OptimizerFamily.exponents``)."""


@dataclass
class RoleExponents:
    """One row of the abc table: multiplier m^-a, init std σ·m^-b, LR η·m^-c (c per optimizer family's
    exponents column, None or absent: the preset has no rule), Adam eps·m^-eps, weight decay λ·m^-wd (for the
    roles ``optimizer.decayed`` turns on)."""

    a: float = field(default=0.0, metadata=rng(-INF))
    b: float = field(default=0.0, metadata=rng(-INF))
    c: Dict[str, Optional[float]] = field(default_factory=dict, metadata=EXPONENT_KEYED)
    eps: float = field(default=0.0, metadata=rng(-INF))
    wd: float = field(default=0.0, metadata=rng(-INF))


@dataclass
class HFConfig:
    """A Hugging Face ``transformers`` model built from its config class at the swept width (``model=hf``):
    ``hidden_size`` = width, heads = width / ``model.head_dim``, ``heads_per_kv`` query heads per key-value
    head, ``intermediate_size`` = ``mlp_ratio`` × width (None: the architecture's default), the layers
    ``model.depth``; ``config`` holds any other keyword of the config class."""

    architecture: str = "llama"
    mlp_ratio: Optional[float] = field(default=None, metadata=rng(0.0, low_open=True))
    heads_per_kv: int = field(default=1, metadata=rng(1))
    config: Dict[str, Any] = field(default_factory=dict)


@dataclass
class MoEConfig:
    """A mixture of experts in place of the dense MLP (``model=moe``): ``experts`` routed experts, each token sent to
    ``top_k`` of them by a softmax router, each expert an MLP of hidden size ``expert_ratio`` × ``mlp_ratio`` ×
    width, plus ``shared_experts`` experts every token passes through, in every ``every``-th block (blocks
    every−1, 2·every−1, …). Load is balanced without an auxiliary loss: a per-expert bias added to the router's
    scores for the choice alone moves by ``balance_rate`` after each training step (``model.moe``)."""

    experts: int = field(default=8, metadata=rng(1))
    top_k: int = field(default=2, metadata=rng(1))
    expert_ratio: float = field(default=1.0, metadata=rng(0.0, low_open=True))
    shared_experts: int = field(default=0, metadata=rng(0))
    every: int = field(default=1, metadata=rng(1))
    balance_rate: float = field(default=0.03, metadata=rng(0.0))


@dataclass
class ModelConfig:
    width: int = field(default=128, metadata=rng(1))
    depth: int = field(default=2, metadata=rng(1))
    head_dim: int = field(default=32, metadata=rng(1))
    mlp_ratio: int = field(default=4, metadata=rng(1))
    bias: bool = False
    tie_embeddings: bool = False
    rope_base: float = field(default=10000.0, metadata=rng(1.0, low_open=True))
    norm_eps: float = field(default=1e-6, metadata=rng(0.0, 1.0, low_open=True))
    factory: Optional[str] = None
    """A user's model, "package.module:function" called with the width (``model.build``)."""
    factory_path: Optional[str] = None
    """The folder searched first for ``factory``'s module (besides PYTHONPATH); made absolute when read."""
    roles: Dict[str, str] = field(default_factory=dict)
    in_block: List[str] = field(default_factory=list)
    """``model.factory`` models: glob patterns of the parameters inside residual blocks (the depth rules')."""
    blocks: Dict[str, int] = field(default_factory=dict)
    """``model.factory`` models: fused weights, a glob pattern → the number of equal logical blocks stacked along
    dout (a fused q|k|v: 3), each initialised and orthogonalised on its own (``parametrize``'s ``blocks``)."""
    hf: Optional[HFConfig] = None
    """Set by ``model=hf``: a ``transformers`` model instead of the built-in GPT."""
    moe: Optional[MoEConfig] = None
    """Set by ``model=moe``: the built-in GPT with mixture-of-experts blocks."""


@dataclass
class ParametrizationConfig:
    """A preset: how each role scales with m = width / base_width (and, inside residual blocks, with
    m_L = depth / base_depth). Base values live in the optimizer."""

    name: str = "mup"
    base_width: int = field(default=128, metadata=rng(1))
    muon_scale_shapes: str = "base"
    roles: Dict[str, RoleExponents] = field(default_factory=dict, metadata=ROLE_KEYED)
    base_depth: int = field(default=2, metadata=rng(1))
    depth_alpha: float = field(default=0.0, metadata=rng(0.0, 1.0))
    """Residual branches × (depth / base_depth)^-α: 0 = off, 0.5 = depth-μP, 1 = CompleteP (``table.rules``)."""


@dataclass
class OptimizerConfig:
    name: str = "muon"
    lr: float = field(default=2.0**-5, metadata=rng(0.0, low_open=True))
    weight_decay: float = field(default=0.0, metadata=rng(0.0))
    """λ; how it acts is ``weight_decay_rule`` (``table.decay``)."""
    weight_decay_rule: Optional[str] = None
    """``lr_scaled`` | ``independent`` (AdamW, Muon) | ``l2`` (SGD); None: the optimizer's own (``table.decay``)."""
    weight_decay_timescale: Optional[float] = field(default=None, metadata=rng(0.0, low_open=True))
    """τ instead of λ: the decay's averaging window as a fraction of the run, per-step decay 1/(τ·T)."""
    decayed: Dict[str, bool] = field(default_factory=dict, metadata=ROLE_KEYED)
    """Which roles weight decay reaches; a role left out: ``Role.decayed`` (``registry.roles``)."""
    momentum: float = field(default=0.95, metadata=rng(0.0, 1.0, high_open=True))
    nesterov: bool = True
    beta1: float = field(default=0.9, metadata=rng(0.0, 1.0, high_open=True))
    beta2: float = field(default=0.95, metadata=rng(0.0, 1.0, high_open=True))
    eps: float = field(default=1e-8, metadata=rng(0.0, 1.0, low_open=True))
    muon_scale: str = "mup"
    ns_steps: int = field(default=5, metadata=rng(1, 50))
    ns_coeffs: list[float] = field(default_factory=lambda: list(NS_COEFFS))
    ns_dtype: str = "auto"
    init: Dict[str, str] = field(default_factory=dict, metadata=ROLE_KEYED)
    """Per-role base init std at the base width: a number or a shape rule (``table.rules.INIT_RULES``)."""
    multiplier: Dict[str, float] = field(default_factory=dict, metadata={**ROLE_KEYED, **rng(0.0, low_open=True)})
    """Per-role base forward multiplier (> 0)."""
    lr_mult: Dict[str, str] = field(default_factory=dict, metadata=ROLE_KEYED)
    """Per-role base LR factor: a number or a shape rule."""


@dataclass
class DataConfig:
    kind: str = "stdlib"
    path: Optional[str] = None
    val_fraction: float = field(default=0.1, metadata=rng(0.0, 0.5, low_open=True))
    vocab_size: Optional[int] = field(default=None, metadata=rng(2, 65536))


@dataclass
class TrainConfig:
    steps: int = field(default=200, metadata=rng(1))
    batch_size: int = field(default=16, metadata=rng(1))
    seq_len: int = field(default=128, metadata=rng(2))
    seed: int = field(default=0, metadata=rng(0))
    device: str = "auto"
    threads: int = field(default=0, metadata=rng(0))
    warmup_frac: float = field(default=0.1, metadata=rng(0.0, 1.0))
    schedule: str = "linear"
    warmup_steps: Optional[int] = field(default=None, metadata=rng(0))
    """Warm-up in steps, whatever the horizon; None: ``warmup_frac`` of the steps."""
    cooldown_frac: float = field(default=0.2, metadata=rng(0.0, 1.0))
    """``schedule: wsd``: the share of the steps the final decay takes (warm-up, then constant, then this)."""
    min_lr_frac: float = field(default=0.0, metadata=rng(0.0, 1.0))
    grad_clip: float = field(default=0.0, metadata=rng(0.0))
    eval_every: int = field(default=50, metadata=rng(0))
    eval_batches: int = field(default=8, metadata=rng(1))
    eval_batch_size: Optional[int] = field(default=None, metadata=rng(1))
    """Sequences per evaluation batch; None: ``batch_size``. A batch sweep sets it so that every batch size
    is evaluated on the same windows."""
    tokens: Optional[int] = field(default=None, metadata=rng(1))
    """The token budget; when set, ``steps`` is ``tokens / (batch_size × seq_len)`` (``train.budget``)."""
    noise_scale: bool = False
    """Measure the gradient noise scale at every evaluation (``mutransfer.train.noise``); training is unchanged."""
    diverge_factor: float = field(default=1.5, metadata=rng(1.0, low_open=True))
    compile: str = "auto"
    """``torch.compile`` the training step's model: ``on``, ``off``, or ``auto`` where it was measured to pay
    (``mutransfer.train.compiled``). How a run computes, not what: a sweep's fingerprint leaves it out."""
    parallel: str = "ddp"
    """A run on several ranks (``--nproc``, torchrun): ``ddp`` replicates the model, ``fsdp`` shards each block
    (FSDP2). How a run computes, not what: a sweep's fingerprint leaves it out."""
    dist_timeout: float = field(default=600.0, metadata=rng(0.0, low_open=True))
    """Seconds a collective waits for the other ranks before the run fails (a rank that died)."""


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    parametrization: ParametrizationConfig = field(default_factory=ParametrizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


def config_value(cfg: Any, dotted: str) -> Any:
    """The value at a dotted config key (``optimizer.lr_mult.readout``): a field of a config dataclass, or a key of
    a mapping (the per-role tables); None under an optional section that is not set (``model.moe.experts`` of a
    dense model)."""
    value = cfg
    for part in dotted.split("."):
        if value is None:
            return None
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value
