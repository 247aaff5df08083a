"""What "wrong" looks like in a coordinate check: for Muon, AdamW and SGD under μP, the correct table and the
common mistakes (readout LR exponent ±0.5, hidden LR exponent ±0.5, embedding init exponent wrong, SP), each
measured at several step counts and seeds; prints the width slopes of the quantities that tell them apart and
each table's verdict (the modules `--strict` would name). The bands in mutransfer/analysis/stability.py are
chosen from this table; docs/coord-check.md shows it.

    python scripts/coord_check_bands.py [--steps 3,5] [--seeds 2] [--optimizers muon,adamw,sgd]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from mutransfer.analysis.stability import fit_slopes, judge
from mutransfer.config import compose, packaged_dir
from mutransfer.files import load_yaml
from mutransfer.schema import FAMILIES
from mutransfer.train.coordcheck import coord_check
from mutransfer.train.data import load_corpus

WIDTHS = (32, 64, 128, 256)
SHOWN = (("weight_update", "lm_head.weight"), ("weight_update", "embed.weight"),
         ("weight_update", "blocks.1.mlp.up.weight"), ("update", "logits"), ("update", "block1.resid"),
         ("dependency", "block1.attn"), ("forward", "logits"))


def broken_tables(optimizer: str) -> dict[str, list[str]]:
    """Label → overrides: the correct μP table, then one mistake each."""
    family = FAMILIES.named(optimizer).exponents
    roles = load_yaml(packaged_dir("configs") / "parametrization" / "mup.yaml", "preset")["roles"]
    c = {role: roles[role]["c"][family] for role in ("readout", "hidden")}
    key = "parametrization.roles"
    return {
        "correct μP": [],
        "readout LR exponent +0.5": [f"{key}.readout.c.{family}={c['readout'] + 0.5}"],
        "readout LR exponent −0.5": [f"{key}.readout.c.{family}={c['readout'] - 0.5}"],
        "hidden LR exponent +0.5": [f"{key}.hidden.c.{family}={c['hidden'] + 0.5}"],
        "hidden LR exponent −0.5": [f"{key}.hidden.c.{family}={c['hidden'] - 0.5}"],
        "embedding init exponent 0.5": [f"{key}.embedding.b=0.5"],
        "SP": ["parametrization=sp"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="3,5")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--optimizers", default="muon,adamw,sgd")
    args = parser.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    rows = []
    started = time.perf_counter()
    for optimizer in args.optimizers.split(","):
        for label, overrides in broken_tables(optimizer).items():
            cfg = compose(["parametrization=mup", f"optimizer={optimizer}", *overrides])
            corpus = load_corpus(cfg.data, cfg.train.seq_len)
            for k in steps:
                table = coord_check(cfg, corpus, WIDTHS, k, cfg.optimizer.lr, list(range(args.seeds)))
                slopes = fit_slopes(table)
                result = judge(table)
                bad = sorted(m for m, e in result["modules"].items() if e["verdict"] != "stable")
                last = slopes[slopes["step"] == k]
                row = {"optimizer": optimizer, "table": label, "steps": k,
                       "flagged": ", ".join(f"{m} ({result['modules'][m]['worst']['quantity']})" for m in bad) or "–"}
                for quantity, module in SHOWN:
                    hit = last[(last["quantity"] == quantity) & (last["module"] == module)]
                    row[f"{quantity}:{module}"] = float(hit["slope"].iloc[0]) if len(hit) else float("nan")
                rows.append(row)
                print(f"{optimizer:6s} {label:30s} K={k}: {row['flagged']}", flush=True)
    frame = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    print(frame.drop(columns="flagged").round(2).to_string(index=False))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
