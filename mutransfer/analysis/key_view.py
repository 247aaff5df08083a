"""Another searched key's tables as the learning rate's figures read them: its trials with its searched value on
the ``log2_lr`` axis, and its summary entries under ``setups`` (weight decay off left out of the bowls)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..schema import LR_COLUMN, LR_KEY
from ..table.decay import DECAY_SYMBOLS

__all__ = ["key_view", "key_label"]


KEY_WORDS = {"optimizer.weight_decay": "weight decay λ",
             "optimizer.weight_decay_timescale": "weight-decay timescale τ"}


def key_label(key: str) -> tuple[str, str]:
    """(symbol, quantity) naming a searched key on a figure: ``("τ", "weight-decay timescale τ")``."""
    return DECAY_SYMBOLS.get(key, key.rsplit(".", 1)[-1]), KEY_WORDS.get(key, key)


def key_view(trials: pd.DataFrame, summary: Mapping[str, Any], key: str,
             log2: bool) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``key``'s trials with its searched value (log2 for a log2 search) in ``log2_lr`` and ``search_key`` set to
    the learning rate's, finite values only; and a summary whose ``setups`` are the key's entries."""
    rows = trials[trials["search_key"] == key].copy()
    with np.errstate(divide="ignore"):
        x = np.log2(rows[key].astype(float)) if log2 else rows[key].astype(float)
    rows[LR_COLUMN] = x
    rows["search_key"] = LR_KEY
    rows = rows[np.isfinite(rows[LR_COLUMN])]
    entry = ((summary.get("keys") or {}).get(key) or {}).get("setups", {})
    return rows.reset_index(drop=True), {"setups": entry}
