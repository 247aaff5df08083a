"""The gradient noise scale beside the critical batch a batch sweep measured (docs/batch.md).

    python scripts/batch_noise.py [--run-dir runs/batch] [--evals 8]

For each setup and token budget of a sweep across batch sizes at fixed budgets (``hold: tokens``), trains one
run at the base width at the swept batch nearest the measured best batch, at that batch's measured η*, with
``train.noise_scale=true`` and an evaluation every 1/``evals`` of the run, and writes ``noise.csv`` into the
run directory: the run's noise scale B_simple (sequences, the ratio of averages over the run's second half)
beside the best and critical batch the sweep measured there. Each run reads its budget once; at the study's
size the whole script takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import pandas as pd

from mutransfer.analysis.summary import summarize_run
from mutransfer.config import config_from_dict
from mutransfer.train.data import load_corpus
from mutransfer.train.loop import train_model
from mutransfer.transfer.target import read_sweep_record

NOISE_FILE = "noise.csv"


def runs(run_dir: Path) -> list[dict[str, Any]]:
    """One planned run per (setup, budget): the batch nearest the best (in log2) and its η*."""
    summary = summarize_run(run_dir)
    planned = []
    for setup, info in summary.setups().items():
        for tokens, entry in ((info.batch or {}).get("budgets") or {}).items():
            curve = [p for p in entry["curve"] if p["log2_lr_star"] is not None]
            if not curve or not entry.get("best"):
                continue
            point = min(curve, key=lambda p: abs(p["log2_batch"] - entry["best"]["log2_batch"]))
            critical = entry.get("critical") or {}
            planned.append({"setup": setup, "tokens": int(tokens), "batch": int(point["batch"]),
                            "log2_lr": float(point["log2_lr_star"]), "best_batch": entry["best"]["batch"],
                            "best_censored": entry["best"].get("censored"), "critical_batch": critical.get("batch"),
                            "critical_ci": critical.get("ci"), "critical_status": critical.get("status")})
    return planned


def measure(run_dir: Path, plan: dict[str, Any], evals: int) -> dict[str, Any]:
    """Train one planned run with the noise scale on; its row of noise.csv."""
    record = read_sweep_record(run_dir)
    base = record["setups"][plan["setup"]]
    steps = plan["tokens"] // (plan["batch"] * base["train"]["seq_len"])
    cfg = config_from_dict(base, [f"train.batch_size={plan['batch']}", f"train.tokens={plan['tokens']}",
                                  f"optimizer.lr={2.0 ** plan['log2_lr']!r}", "train.noise_scale=true",
                                  f"train.eval_every={max(1, steps // evals)}"])
    result, _ = train_model(cfg, load_corpus(cfg.data, cfg.train.seq_len))
    scale = result.noise_scale
    low, high = plan["critical_ci"] or (None, None)
    return {**{k: v for k, v in plan.items() if k != "critical_ci"}, "critical_low": low, "critical_high": high,
            "steps": cfg.train.steps, "val_loss": result.val_loss, "noise_scale": scale,
            "noise_scale_tokens": scale * cfg.train.seq_len if scale is not None else math.nan,
            "seconds": result.seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, default=Path("runs/batch"))
    parser.add_argument("--evals", type=int, default=8)
    args = parser.parse_args()
    rows = []
    for plan in runs(args.run_dir):
        rows.append(measure(args.run_dir, plan, args.evals))
        row = rows[-1]
        print(f"{row['setup']} tokens {row['tokens']:,} batch {row['batch']} log2 η {row['log2_lr']:.2f}: "
              f"B_simple {row['noise_scale']:.3g} sequences, critical {row['critical_batch']} "
              f"({row['critical_status']}), {row['seconds']:.1f} s", flush=True)
    pd.DataFrame(rows).to_csv(args.run_dir / NOISE_FILE, index=False)
    print(f"wrote {args.run_dir / NOISE_FILE}")


if __name__ == "__main__":
    main()
