"""What mutransfer knows of each Hugging Face architecture it ships: the config class and its size keys, the
role of every parameter (glob patterns, first match wins, no catch-all: a parameter no pattern claims is an
error), the parameters inside residual blocks, fused weights, and where the coordinate check probes. Pure data:
nothing here imports ``transformers``.

The mixtures of experts (``mixtral``, ``qwen2_moe``, ``qwen3_moe``, ``olmoe``) store each layer's routed experts
as two 3-D tensors in ``nn.Linear`` orientation, (experts, dout, din), as ``transformers`` 5 builds them:
``mlp.experts.gate_up_proj`` (E, 2·f, d), gate then up along dout, and ``mlp.experts.down_proj`` (E, d, f).
Their role ``expert`` plans each (dout, din) slice as a matrix of its own; the router ``mlp.gate.weight`` (E, d)
maps the width to a fixed number of experts (role ``router``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Architecture", "ARCHITECTURES", "SIZE_KEYS"]

SIZE_KEYS = ("width", "heads", "kv_heads", "intermediate", "depth", "vocab", "tie")
"""The config keys mutransfer derives from ``model.*`` (each architecture names its own keyword for each)."""


@dataclass(frozen=True)
class Architecture:
    """One ``transformers`` causal LM: ``config_class`` / ``model_class`` by name, ``size_keys`` (``SIZE_KEYS``
    → the config class's keyword, None where it has none), ``defaults`` for the other keywords, the role map,
    ``in_block`` patterns, ``blocks`` (fused weights: pattern → equal logical blocks along dout) and the module
    paths the coordinate check probes."""

    name: str
    config_class: str
    model_class: str
    size_keys: Mapping[str, str | None]
    mlp_ratio: float
    roles: Mapping[str, str]
    in_block: tuple[str, ...]
    blocks: Mapping[str, int] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    head_keys: tuple[str, ...] = ()
    """Config keywords about attention heads that ``model.hf.config`` may set (they can make head_dim grow with
    width, which ``attention_scale_warning`` reports)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Parameter-name prefixes → the built-in GPT's names in the coordinate-check table (``embed.``, ``blocks.``)."""
    embedding: str = ""
    layers: str = ""
    attention: str = ""
    mlp: str = ""
    final_norm: str = ""
    readout: str = "lm_head"
    other_intermediate: tuple[str, ...] = ()
    """Further config keywords given the intermediate size of ``size_keys["intermediate"]`` (a mixture of
    experts' dense-MLP layers and shared expert), so that every MLP keeps one aspect ratio at every width."""


_MOE_SIZES: dict[str, str | None] = {
    "width": "hidden_size", "heads": "num_attention_heads", "kv_heads": "num_key_value_heads",
    "intermediate": "intermediate_size", "depth": "num_hidden_layers", "vocab": "vocab_size",
    "tie": "tie_word_embeddings"}
"""The size keywords the mixtures of experts share with Llama (``intermediate``: each routed expert's hidden size
in Mixtral and OLMoE; the Qwen MoEs name it ``moe_intermediate_size``)."""

_MOE_ROLES: dict[str, str] = {
    "model.embed_tokens.weight": "embedding", "lm_head.weight": "readout", "*norm.weight": "gain", "*.bias": "bias",
    "model.layers.*.mlp.experts.*_proj": "expert", "model.layers.*.mlp.gate.weight": "router",
    "model.layers.*_proj.weight": "hidden"}
"""A mixture of experts' roles: the fused expert tensors (no ``.weight`` suffix) ``expert``, the router
(E, width) ``router``, attention projections and any dense or shared-expert MLP ``hidden``."""

_MOE_BLOCKS: dict[str, int] = {"model.layers.*.mlp.experts.gate_up_proj": 2}
"""Each expert's gate and up projections, stacked along dout in one (E, 2·f, d) tensor: two (f, d) matrices."""

_MOE_DEFAULTS: dict[str, Any] = {
    "use_cache": False, "attention_dropout": 0.0, "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
    "num_experts_per_tok": 2}
"""Top-2 routing, no dropout, no KV cache, no special tokens; the router's auxiliary loss keeps the library's
settings (``output_router_logits``, ``router_aux_loss_coef``). The expert count is each architecture's own key."""

_MOE_PROBES: dict[str, Any] = {
    "labels": {"model.embed_tokens.": "embed.", "model.layers.": "blocks."}, "embedding": "model.embed_tokens",
    "layers": "model.layers", "attention": "self_attn", "mlp": "mlp", "final_norm": "model.norm"}
"""Where the coordinate check probes a mixture of experts (``mlp``: the sparse MoE block, router and experts)."""


ARCHITECTURES: dict[str, Architecture] = {
    "llama": Architecture(
        name="llama",
        config_class="LlamaConfig",
        model_class="LlamaForCausalLM",
        size_keys={"width": "hidden_size", "heads": "num_attention_heads", "kv_heads": "num_key_value_heads",
                   "intermediate": "intermediate_size", "depth": "num_hidden_layers", "vocab": "vocab_size",
                   "tie": "tie_word_embeddings"},
        mlp_ratio=3.0,
        roles={"model.embed_tokens.weight": "embedding", "lm_head.weight": "readout", "*norm.weight": "gain",
               "*.bias": "bias", "model.layers.*_proj.weight": "hidden"},
        in_block=("model.layers.*",),
        blocks={"model.layers.*.mlp.gate_up_proj.weight": 2},
        defaults={"use_cache": False, "attention_dropout": 0.0, "bos_token_id": None, "eos_token_id": None,
                  "pad_token_id": None},
        head_keys=("num_attention_heads", "head_dim"),
        labels={"model.embed_tokens.": "embed.", "model.layers.": "blocks."},
        embedding="model.embed_tokens",
        layers="model.layers",
        attention="self_attn",
        mlp="mlp",
        final_norm="model.norm",
    ),
    "gpt2": Architecture(
        name="gpt2",
        config_class="GPT2Config",
        model_class="GPT2LMHeadModel",
        size_keys={"width": "n_embd", "heads": "n_head", "kv_heads": None, "intermediate": "n_inner",
                   "depth": "n_layer", "vocab": "vocab_size", "tie": "tie_word_embeddings"},
        mlp_ratio=4.0,
        roles={"transformer.wte.weight": "embedding", "transformer.wpe.weight": "embedding",
               "lm_head.weight": "readout", "*.ln_*.weight": "gain", "*.bias": "bias",
               "transformer.h.*.c_*.weight": "hidden"},
        in_block=("transformer.h.*",),
        blocks={"transformer.h.*.attn.c_attn.weight": 3, "transformer.h.*.attn.c_attn.bias": 3},
        defaults={"use_cache": False, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
                  "bos_token_id": None, "eos_token_id": None, "n_positions": 1024},
        head_keys=("n_head",),
        labels={"transformer.wte.": "embed.", "transformer.wpe.": "embed_positions.", "transformer.h.": "blocks."},
        embedding="transformer.wte",
        layers="transformer.h",
        attention="attn",
        mlp="mlp",
        final_norm="transformer.ln_f",
    ),
    "mixtral": Architecture(
        name="mixtral",
        config_class="MixtralConfig",
        model_class="MixtralForCausalLM",
        size_keys=_MOE_SIZES,
        mlp_ratio=3.0,  # each expert a full SwiGLU MLP (Mixtral 8x7B: 14336 / 4096 = 3.5), Llama's ratio here
        roles=_MOE_ROLES,
        in_block=("model.layers.*",),
        blocks=_MOE_BLOCKS,
        defaults={**_MOE_DEFAULTS, "num_local_experts": 4, "router_jitter_noise": 0.0},
        head_keys=("num_attention_heads", "head_dim"),
        **_MOE_PROBES,
    ),
    "qwen2_moe": Architecture(
        name="qwen2_moe",
        config_class="Qwen2MoeConfig",
        model_class="Qwen2MoeForCausalLM",
        size_keys={**_MOE_SIZES, "intermediate": "moe_intermediate_size"},
        mlp_ratio=0.5,  # fine-grained experts (Qwen1.5-MoE-A2.7B: 1408 / 2048 = 0.69), whole at every even width
        # the shared expert's gate maps the width to one fixed output, a sigmoid's logit: router-like, as the
        # router maps it to a fixed number of experts
        roles={**_MOE_ROLES, "model.layers.*.mlp.shared_expert_gate.weight": "router"},
        in_block=("model.layers.*",),
        blocks=_MOE_BLOCKS,
        defaults={**_MOE_DEFAULTS, "num_experts": 4},
        head_keys=("num_attention_heads",),
        other_intermediate=("shared_expert_intermediate_size", "intermediate_size"),
        **_MOE_PROBES,
    ),
    "qwen3_moe": Architecture(
        name="qwen3_moe",
        config_class="Qwen3MoeConfig",
        model_class="Qwen3MoeForCausalLM",
        size_keys={**_MOE_SIZES, "intermediate": "moe_intermediate_size"},
        mlp_ratio=0.5,  # fine-grained experts (Qwen3-30B-A3B: 768 / 2048 = 0.375), whole at every even width
        roles=_MOE_ROLES,
        in_block=("model.layers.*",),
        blocks=_MOE_BLOCKS,
        defaults={**_MOE_DEFAULTS, "num_experts": 4},
        head_keys=("num_attention_heads",),
        other_intermediate=("intermediate_size",),
        **_MOE_PROBES,
    ),
    "olmoe": Architecture(
        name="olmoe",
        config_class="OlmoeConfig",
        model_class="OlmoeForCausalLM",
        size_keys=_MOE_SIZES,
        mlp_ratio=0.5,  # fine-grained experts (OLMoE-1B-7B: 1024 / 2048), whole at every even width
        roles=_MOE_ROLES,
        in_block=("model.layers.*",),
        blocks=_MOE_BLOCKS,
        defaults={**_MOE_DEFAULTS, "num_experts": 4},
        head_keys=("num_attention_heads",),
        **_MOE_PROBES,
    ),
}
"""The shipped architectures, keyed by the config class's ``model_type``. ``llama`` also describes Mistral- and
Qwen2-style models (same parameter names); ``mixtral``, ``qwen2_moe``, ``qwen3_moe`` and ``olmoe`` are mixtures
of experts (expert count and top-k from ``model.hf.config``: ``num_local_experts`` / ``num_experts`` and
``num_experts_per_tok``)."""
