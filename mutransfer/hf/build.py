"""A Hugging Face causal LM at a width: its config-class keywords from ``model.*`` (pure), the model built from
them (randomly initialised; ``from_pretrained`` is never called, nothing is downloaded), and the checks
of a ``model.hf`` config."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Optional

from torch import nn

from ..errors import UserError
from ..schema import HFConfig, ModelConfig
from .architectures import ARCHITECTURES, Architecture

__all__ = ["require_transformers", "config_kwargs", "hf_model", "check_hf", "head_dim_at",
           "attention_scale_warning", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'mutransfer[hf]'"


def require_transformers() -> ModuleType:
    """The ``transformers`` module, or a one-line error saying how to install it."""
    try:
        return importlib.import_module("transformers")
    except ImportError:
        raise UserError("model=hf needs the transformers package, which is not installed", INSTALL_HINT) from None


def _hf(model: ModelConfig) -> HFConfig:
    assert model.hf is not None, "not a model=hf config"
    return model.hf


def _arch(hf: HFConfig) -> Architecture:
    if hf.architecture not in ARCHITECTURES:
        raise UserError(f"unknown model.hf.architecture '{hf.architecture}'",
                        f"choose one of: {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[hf.architecture]


def _derived(arch: Architecture) -> dict[str, str]:
    """Config keywords mutransfer sets from ``model.*`` → the key to set instead."""
    instead = {"width": "model.width", "kv_heads": "model.hf.heads_per_kv", "intermediate": "model.hf.mlp_ratio",
               "depth": "model.depth",
               "vocab": "the data (data.vocab_size)", "tie": "model.tie_embeddings"}
    derived = {keyword: instead[size] for size, keyword in arch.size_keys.items() if keyword and size in instead}
    derived.update({keyword: instead["intermediate"] for keyword in arch.other_intermediate})
    return derived


def _heads(model: ModelConfig, width: int) -> int:
    """Attention heads at ``width``: width / ``model.head_dim``, unless ``model.hf.config`` fixes them."""
    key = _arch(_hf(model)).size_keys["heads"] or ""
    return int(_hf(model).config.get(key, width // model.head_dim))


def config_kwargs(model: ModelConfig, vocab_size: int) -> dict[str, Any]:
    """The config class's keywords at ``model.width``: hidden size, heads = width / head_dim (key-value heads
    heads / heads_per_kv), intermediate = mlp_ratio × width (for a mixture of experts each expert's, and its
    ``other_intermediate`` sizes too), layers = depth, the data's vocabulary, untied embeddings unless
    ``model.tie_embeddings``; then the architecture's defaults and ``model.hf.config``."""
    hf = _hf(model)
    arch = _arch(hf)
    keys = arch.size_keys
    heads = _heads(model, model.width)
    ratio = hf.mlp_ratio if hf.mlp_ratio is not None else arch.mlp_ratio
    sizes: dict[str, Any] = {"width": model.width, "heads": heads, "kv_heads": heads // hf.heads_per_kv,
                             "intermediate": round(ratio * model.width), "depth": model.depth, "vocab": vocab_size,
                             "tie": model.tie_embeddings}
    kwargs = {keys[size]: value for size, value in sizes.items() if keys.get(size)}
    kwargs.update({keyword: sizes["intermediate"] for keyword in arch.other_intermediate})
    kwargs.update(arch.defaults)
    kwargs.update(hf.config)
    return kwargs


def head_dim_at(model: ModelConfig, width: int) -> float:
    """The attention head dimension the built model has at ``width`` (an explicit head_dim, else hidden size /
    heads, where ``model.hf.config`` may fix the number of heads)."""
    overrides = _hf(model).config
    if "head_dim" in overrides:
        return float(overrides["head_dim"])
    return width / _heads(model, width)


def check_hf(model: ModelConfig, base_width: int) -> None:
    """A ``model.hf`` config that can be built at ``model.width`` and the base width; UserError otherwise."""
    hf = _hf(model)
    arch = _arch(hf)
    for keyword, instead in _derived(arch).items():
        if keyword in hf.config:
            raise UserError(f"model.hf.config.{keyword} is set by mutransfer", f"set {instead} instead")
    ratio = hf.mlp_ratio if hf.mlp_ratio is not None else arch.mlp_ratio
    for key, width in (("model.width", model.width), ("parametrization.base_width", base_width)):
        heads = _heads(model, width)
        if heads < 1 or width % heads:
            raise UserError(f"{key}={width} does not split into {heads} attention heads",
                            "give model.hf.config a head count that divides every width (or leave heads to "
                            "model.head_dim)")
        if hf.heads_per_kv > 1 and not arch.size_keys.get("kv_heads"):
            raise UserError(f"model.hf.heads_per_kv={hf.heads_per_kv}: {arch.name} has no grouped-query attention",
                            "set model.hf.heads_per_kv=1")
        if heads % hf.heads_per_kv:
            raise UserError(f"{key}={width} gives {heads} heads, not divisible by model.hf.heads_per_kv="
                            f"{hf.heads_per_kv}", "choose widths whose head count heads_per_kv divides")
        if abs(ratio * width - round(ratio * width)) > 1e-9:
            raise UserError(f"model.hf.mlp_ratio={ratio:g} × {key}={width} is not a whole intermediate size",
                            "choose a ratio that gives whole sizes at every width (e.g. 3 or 4)")


def attention_scale_warning(model: ModelConfig, base_width: int) -> Optional[str]:
    """A warning when head_dim differs between the base width and ``model.width``: these models scale attention
    logits by 1/√head_dim, which is width-stable only while head_dim is fixed; μP's rule is 1/head_dim."""
    at_base, at_width = head_dim_at(model, base_width), head_dim_at(model, model.width)
    if at_base == at_width:
        return None
    arch = _arch(_hf(model))
    return (f"model.hf: head_dim grows with width ({at_base:g} at base width {base_width}, {at_width:g} at width "
            f"{model.width}) but {arch.name} scales attention logits by 1/sqrt(head_dim); muP needs 1/head_dim. "
            f"Keep heads = width / model.head_dim (drop {', '.join(arch.head_keys)} from model.hf.config), or set "
            f"every attention module's `scaling` to 1/head_dim (`{arch.layers}[i].{arch.attention}.scaling`)")


def hf_model(model: ModelConfig, vocab_size: int) -> nn.Module:
    """The architecture's causal LM at ``model.width``, built from its config class on the current default
    device (``torch.device("meta")`` for shapes alone). Its weights are the library's random init: the caller
    re-initialises them by the plan."""
    transformers = require_transformers()
    arch = _arch(_hf(model))
    config_class = getattr(transformers, arch.config_class)
    known = config_class()
    for keyword in _hf(model).config:
        if not hasattr(known, keyword):
            raise UserError(f"model.hf.config.{keyword} is not a {arch.config_class} setting",
                            f"use a keyword of transformers.{arch.config_class}")
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        return getattr(transformers, arch.model_class)(config_class(**config_kwargs(model, vocab_size)))
    except Exception as exc:  # noqa: BLE001 - transformers raises many types for a config value it cannot build
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise UserError(f"transformers cannot build {arch.model_class} at width {model.width}: {first[:160]}",
                        "check the model.hf.config values") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
