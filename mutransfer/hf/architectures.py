"""What mutransfer knows of each Hugging Face architecture it ships: the config class and its size keys, the
role of every parameter (glob patterns, first match wins, no catch-all: a parameter no pattern claims is an
error), the parameters inside residual blocks, fused weights, and where the coordinate check probes. Pure data:
nothing here imports ``transformers``."""

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
}
"""The shipped architectures. ``llama`` also describes Mistral- and Qwen2-style models (same parameter names)."""
