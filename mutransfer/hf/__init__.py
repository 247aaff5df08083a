"""Hugging Face ``transformers`` models under the abc table: shipped architectures (role maps, residual blocks,
fused weights), models built from their config classes at any width and planned (``plan``), and the plan's
optimizer for ``Trainer``.
``transformers`` is imported only when a model is built (``pip install 'mutransfer[hf]'``)."""

from __future__ import annotations

from ..model.build import transposed_parameters
from .architectures import ARCHITECTURES, Architecture
from .build import attention_scale_warning, config_kwargs, hf_model
from .plan import hf_model_plan
from .trainer import trainer_optimizer

__all__ = ["ARCHITECTURES", "Architecture", "attention_scale_warning", "config_kwargs",
           "hf_model", "hf_model_plan", "transposed_parameters", "trainer_optimizer"]
