"""Typed dataclasses for every config group. Plain data: no Hydra, no torch.

Numeric fields carry their valid range in ``metadata["range"]`` as ``(low, high, low_open, high_open)``;
``config.validate`` checks every one of them, so a new numeric setting cannot forget its range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = [
    "ROLES",
    "FAMILIES",
    "OPTIMIZER_FAMILY",
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
    "FamilyExponents",
    "RoleExponents",
    "RoleTable",
    "RoleRules",
    "RoleFloats",
    "RoleFlags",
    "HFConfig",
    "ModelConfig",
    "ParametrizationConfig",
    "OptimizerConfig",
    "DataConfig",
    "TrainConfig",
    "Config",
    "family_of",
]

ROLES: tuple[str, ...] = ("embedding", "hidden", "readout", "gain", "bias")
FAMILIES: tuple[str, ...] = ("sgd", "adam", "muon")
OPTIMIZER_FAMILY: dict[str, str] = {"sgd": "sgd", "adamw": "adam", "muon": "muon"}
LR_KEY = "optimizer.lr"
"""The config key of the base learning rate η, the key a sweep searches by default."""
LR_COLUMN = "log2_lr"
"""The column that holds log2(η) in every table (trials.csv, summary, verify)."""


def searched_column(key: str) -> str:
    """The trials.csv column that holds a searched key's value (log2 η for the learning rate)."""
    return LR_COLUMN if key == LR_KEY else key


@dataclass(frozen=True)
class Axis:
    """One transfer axis: what a sweep may vary besides the searched hyperparameter, and the one place that says
    which config key it sets, which trials.csv column and summary key hold it, and its study-name tag.

    ``TRANSFER_AXES`` lists the axes a sweep spec can vary; ``axis_named`` and ``axis_of_column`` answer any other
    name with a generic axis (no config key, its name everywhere, log2 coordinates), so that an axis no config key
    sets and whose values are floats (a parameter count in a table imported from elsewhere) needs no new code."""

    name: str
    config_key: Optional[str]
    """The config key a trial's value on the axis sets; None for an axis no config key sets."""
    column: str
    plural: str
    """The spec key and ``SweepSpec`` field that list the axis's values, and the summary key that holds them."""
    tag: str
    option: str
    """The ``transfer`` and ``verify`` option that sets the target's value ('' for an axis they cannot set)."""
    log2: bool = True
    """Whether the analysis takes log2 of the axis's value as its coordinate."""
    example: str = ""
    """Values a spec might list for the axis, for messages that show how to list them."""
    counted: str = ""
    """What a sweep's header calls the axis's values when it counts them (``3 horizons``); '' : its plural."""


TRANSFER_AXES: tuple[Axis, ...] = (
    Axis("width", "model.width", "width", "widths", "w", "--width", example="[32, 64, 128]"),
    Axis("depth", "model.depth", "depth", "depths", "d", "--depth", example="[2, 4, 8]"),
    Axis("steps", "train.steps", "horizon", "steps", "t", "--steps", example="[150, 300, 600]", counted="horizons"),
    Axis("batch", "train.batch_size", "batch_size", "batch_sizes", "b", "--batch-size", example="[4, 8, 16, 32]",
         counted="batch sizes"),
    Axis("tokens", "train.tokens", "tokens", "tokens", "tok", "--tokens", example="[65536, 262144]",
         counted="token budgets"),
)
"""Width, depth (number of blocks), the training horizon in steps, the batch size (sequences per step) and the
token budget (batch × steps × sequence length). The horizon's column is ``horizon`` because ``steps`` in
trials.csv is the number of steps a trial trained (fewer when it diverged). The first, width, is the axis every
sweep spec lists. A new axis is one entry here and a field for it in ``sweep.spec.SweepSpec`` (named by its
``plural``), ``sweep.spec.Point`` and ``sweep.keys.StudyKey`` (named by its ``name``)."""


def generic_axis(name: str) -> Axis:
    """The axis of a name ``TRANSFER_AXES`` does not list: no config key sets it, and ``name`` is its column,
    plural and tag."""
    return Axis(name=name, config_key=None, column=name, plural=name, tag=name, option="")


def axis_named(name: str) -> Axis:
    """The registered axis called ``name``, else ``generic_axis(name)``."""
    return next((a for a in TRANSFER_AXES if a.name == name), None) or generic_axis(name)


def axis_of_column(column: str) -> Axis:
    """The registered axis whose trials.csv column is ``column``, else ``generic_axis(column)``."""
    return next((a for a in TRANSFER_AXES if a.column == column), None) or generic_axis(column)


DEPTH_COLUMN = axis_named("depth").column
NS_COEFFS: tuple[float, float, float] = (3.4445, -4.7750, 2.0315)
"""Quintic Newton–Schulz coefficients (Jordan, "Muon"): singular values land roughly in [0.7, 1.2]."""
INF = float("inf")


def rng(low: float, high: float = INF, low_open: bool = False, high_open: bool = False) -> Any:
    """Field metadata: the closed/open interval a numeric setting must lie in."""
    return {"range": (low, high, low_open, high_open)}


def family_of(optimizer: str) -> str:
    """The optimizer family ('sgd' | 'adam' | 'muon') whose exponents and base values an optimizer uses."""
    return OPTIMIZER_FAMILY[optimizer]


@dataclass
class FamilyExponents:
    """The learning-rate exponent c for each optimizer family; None means the preset has no rule."""

    sgd: Optional[float] = field(default=None, metadata=rng(-INF))
    adam: Optional[float] = field(default=None, metadata=rng(-INF))
    muon: Optional[float] = field(default=None, metadata=rng(-INF))


@dataclass
class RoleExponents:
    """One row of the abc table: multiplier m^-a, init std σ·m^-b, LR η·m^-c, Adam eps·m^-eps, weight decay
    λ·m^-wd (for the roles ``optimizer.decayed`` turns on)."""

    a: float = field(default=0.0, metadata=rng(-INF))
    b: float = field(default=0.0, metadata=rng(-INF))
    c: FamilyExponents = field(default_factory=FamilyExponents)
    eps: float = field(default=0.0, metadata=rng(-INF))
    wd: float = field(default=0.0, metadata=rng(-INF))


@dataclass
class RoleTable:
    embedding: RoleExponents = field(default_factory=RoleExponents)
    hidden: RoleExponents = field(default_factory=RoleExponents)
    readout: RoleExponents = field(default_factory=RoleExponents)
    gain: RoleExponents = field(default_factory=RoleExponents)
    bias: RoleExponents = field(default_factory=RoleExponents)


@dataclass
class RoleRules:
    """Per-role base values at the base width: a number or a shape rule from INIT_RULES."""

    embedding: str = "1.0"
    hidden: str = "1.0"
    readout: str = "1.0"
    gain: str = "1.0"
    bias: str = "1.0"


@dataclass
class RoleFloats:
    embedding: float = field(default=1.0, metadata=rng(0.0, low_open=True))
    hidden: float = field(default=1.0, metadata=rng(0.0, low_open=True))
    readout: float = field(default=1.0, metadata=rng(0.0, low_open=True))
    gain: float = field(default=1.0, metadata=rng(0.0, low_open=True))
    bias: float = field(default=1.0, metadata=rng(0.0, low_open=True))


@dataclass
class RoleFlags:
    """Which roles weight decay reaches (``optimizer.decayed``): the hidden matrices and the LM head, not the
    gains and biases (as is usual), and not the embedding, whose rows move only when their token appears while
    decoupled decay shrinks every row every step (docs/weight-decay.md says why)."""

    embedding: bool = False
    hidden: bool = True
    readout: bool = True
    gain: bool = False
    bias: bool = False


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
    hf: Optional[HFConfig] = None
    """Set by ``model=hf``: a ``transformers`` model instead of the built-in GPT."""


@dataclass
class ParametrizationConfig:
    """A preset: how each role scales with m = width / base_width (and, inside residual blocks, with
    m_L = depth / base_depth). Base values live in the optimizer."""

    name: str = "mup"
    base_width: int = field(default=128, metadata=rng(1))
    muon_scale_shapes: str = "base"
    roles: RoleTable = field(default_factory=RoleTable)
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
    decayed: RoleFlags = field(default_factory=RoleFlags)
    momentum: float = field(default=0.95, metadata=rng(0.0, 1.0, high_open=True))
    nesterov: bool = True
    beta1: float = field(default=0.9, metadata=rng(0.0, 1.0, high_open=True))
    beta2: float = field(default=0.95, metadata=rng(0.0, 1.0, high_open=True))
    eps: float = field(default=1e-8, metadata=rng(0.0, 1.0, low_open=True))
    muon_scale: str = "mup"
    ns_steps: int = field(default=5, metadata=rng(1, 50))
    ns_coeffs: list[float] = field(default_factory=lambda: list(NS_COEFFS))
    ns_dtype: str = "auto"
    init: RoleRules = field(default_factory=RoleRules)
    multiplier: RoleFloats = field(default_factory=RoleFloats)
    lr_mult: RoleRules = field(default_factory=RoleRules)


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


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    parametrization: ParametrizationConfig = field(default_factory=ParametrizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
