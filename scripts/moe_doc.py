"""The tables of docs/moe.md that are not an axis table: the coordinate check of the router's two candidate rules
(readout-like, as shipped, and hidden-like) and the dispatch's cost, each computed from a table kept under
docs/data/moe/. With ``--measure`` it first runs the two coordinate checks (μP + Muon, widths 32–256, 5 steps,
2 seeds) and keeps their tidy tables; the dispatch table is ``scripts/bench_moe.py``'s.

    python scripts/moe_doc.py [--measure] [--data docs/data/moe]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

RULES = ("readout", "hidden")
"""The router rows compared: the shipped one (the readout's) and the hidden matrices' row."""
MODULES = ("block0.router", "blocks.0.mlp.router.weight", "block0.experts", "block0.mlp", "logits")


def measure(data: Path) -> None:
    """Run the coordinate check under each router row and keep its tidy table (``coord_<rule>.csv``)."""
    from mutransfer.config import compose
    from mutransfer.train.coordcheck import coord_check
    from mutransfer.train.data import load_corpus

    cfg = compose(["model=moe", "parametrization=mup", "optimizer=muon"])
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    p = cfg.parametrization
    data.mkdir(parents=True, exist_ok=True)
    for rule in RULES:
        rows = {**p.roles, "router": p.roles[rule]}
        run = dataclasses.replace(cfg, parametrization=dataclasses.replace(p, roles=rows))
        table = coord_check(run, corpus, [32, 64, 128, 256], 5, run.optimizer.lr, [0, 1])
        table.to_csv(data / f"coord_{rule}.csv", index=False)


def coord_table(data: Path) -> str:
    """Per module, the verdict and the worst width exponent under each router row, from the kept tables."""
    from mutransfer.analysis.stability import judge

    judged = {rule: judge(pd.read_csv(data / f"coord_{rule}.csv"))["modules"] for rule in RULES}
    lines = ["| module | router like the readout (shipped) | router like a hidden matrix |", "|---|---|---|"]
    for module in MODULES:
        cells = []
        for rule in RULES:
            entry = judged[rule][module]
            worst = entry["worst"]
            cells.append(entry["verdict"] if worst is None else
                         f"{entry['verdict']}: {worst['quantity']} (step {worst['step']}) slope {worst['slope']:+.2f}, "
                         f"needs {worst['required']}")
        lines.append(f"| `{module}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dispatch_table(data: Path) -> str:
    """The dispatch's padded rows over active rows in real runs per balancing rate, and the trained layer's time
    beside a dense MLP of its active FLOPs (``scripts/bench_moe.py``'s kept table)."""
    table = pd.read_csv(data / "dispatch.csv")
    lines = ["| `balance_rate` | width | padded / active rows: mean over the run | p95 | mean over the last 50 steps | "
             "MoE layer fwd+bwd (padded rows) | dense MLP of the active FLOPs | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples():
        lines.append(f"| {row.balance_rate:g} | {row.width} | {row.padding_mean:.2f} | {row.padding_p95:.2f} | "
                     f"{row.padding_last50:.2f} | {row.moe_ms:.1f} ms ({row.timed_padding:.2f}) | {row.dense_ms:.1f} ms | "
                     f"{row.time_ratio:.2f}× |")
    return "\n".join(lines)


def tables(data: Path) -> str:
    """Both tables, as docs/moe.md shows them (``tests/project/test_docs.py`` checks the page's copies)."""
    return coord_table(data) + "\n\n" + dispatch_table(data)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", action="store_true", help="run the two coordinate checks first")
    parser.add_argument("--data", type=Path, default=Path("docs/data/moe"))
    args = parser.parse_args(argv)
    if args.measure:
        measure(args.data)
    print(tables(args.data))


if __name__ == "__main__":
    main()
