"""Hugging Face ``transformers`` models under the abc table: shipped architectures (role maps, residual blocks,
fused weights), models built from their config classes at any width, and the plan's optimizer for ``Trainer``.
``transformers`` is imported only when a model is built (``pip install 'mutransfer[hf]'``)."""

from __future__ import annotations

from .architectures import ARCHITECTURES, Architecture
from .build import attention_scale_warning, config_kwargs, hf_model, transposed_parameters
from .trainer import trainer_optimizer

__all__ = ["ARCHITECTURES", "Architecture", "attention_scale_warning", "config_kwargs",
           "hf_model", "transposed_parameters", "trainer_optimizer"]
