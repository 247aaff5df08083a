"""``mutransfer verify``: train the target width at η*·f for a few factors and check that f = 1 wins."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pandas as pd

from ..config import config_from_dict, to_dict
from ..errors import UserError
from ..files import VERIFY_FILE, atomic_write_text
from ..schema import LR_COLUMN
from ..train.data import load_corpus
from ..train.loop import train_model
from .target import make_transfer

__all__ = ["parse_factors", "verify", "VERIFY_COLUMNS"]

VERIFY_COLUMNS = ["width", "setup", "factor", LR_COLUMN, "lr", "val_loss", "status", "seconds"]


def parse_factors(text: str) -> list[float]:
    try:
        factors = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--factors {text} must be comma-separated numbers", "e.g. --factors 0.5,1,2") from None
    if len(factors) < 2 or any(not math.isfinite(f) or f <= 0 for f in factors):
        raise UserError(f"--factors {text} needs two or more positive numbers", "e.g. --factors 0.5,1,2")
    return sorted(set(factors))


def verify(run_dir: Path, width: int, factors: Sequence[float], setup: Optional[str] = None,
           overrides: Sequence[str] = (), on_trial: Optional[Callable[[float], None]] = None) -> dict[str, Any]:
    """Train each factor, append the rows to verify.csv, and say whether the factor nearest 1 wins."""
    transfer = make_transfer(run_dir, width, setup)
    base = transfer.config
    if overrides:
        base = config_from_dict(to_dict(base), overrides)
    corpus = load_corpus(base.data, base.train.seq_len)
    rows = []
    for factor in factors:
        if on_trial:
            on_trial(factor)
        cfg = replace(base, optimizer=replace(base.optimizer, lr=base.optimizer.lr * factor))
        result, _ = train_model(cfg, corpus)
        rows.append({"width": width, "setup": transfer.document["source"]["setup"], "factor": factor,
                     LR_COLUMN: math.log2(cfg.optimizer.lr), "lr": cfg.optimizer.lr,
                     "val_loss": result.val_loss if result.val_loss is not None else math.nan,
                     "status": result.status, "seconds": result.seconds})
    new = pd.DataFrame(rows, columns=VERIFY_COLUMNS)
    path = run_dir / VERIFY_FILE
    old = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=VERIFY_COLUMNS)
    keep = old[~((old["width"] == width) & old["factor"].isin(factors))] if not old.empty else old
    table = pd.concat([keep, new], ignore_index=True) if not keep.empty else new
    atomic_write_text(path, table.to_csv(index=False))
    middle = min(factors, key=lambda f: abs(math.log2(f)))
    at_middle = new[new["factor"] == middle]["val_loss"].iloc[0]
    others = new[new["factor"] != middle]["val_loss"].dropna()
    margin = float(others.min() - at_middle) if len(others) and math.isfinite(at_middle) else math.nan
    return {"rows": new, "middle": middle, "middle_wins": bool(margin > 0), "margin": margin,
            "warnings": transfer.warnings, "setup": transfer.document["source"]["setup"]}
