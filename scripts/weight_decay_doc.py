"""The weight-decay study's tables and figures for docs/weight-decay.md, from its kept run directory.

    python scripts/weight_decay_doc.py [--run-dir docs/data/weight_decay] [--figures docs]

Prints the study's Markdown tables:
1. Per setup, whether the LR transfers with decay on (slope per width doubling and per horizon doubling).
2. The decay's optimum per width and horizon, with its verdict, slopes and law.
3. How many points the best decay beat decay off at.
4. The measured slopes beside what each published rule predicts for that setup's parametrization.

It also draws weight_decay.png and weight_decay_drift.png, small enough to commit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from mutransfer.analysis.cells import interval_cell
from mutransfer.analysis.plots import drift_figure, key_label, save, transfer_figure
from mutransfer.analysis.run_files import read_tables, search_settings
from mutransfer.analysis.summary import axis_table, summarize
from mutransfer.config import config_from_dict
from mutransfer.schema import FAMILIES, Config, axis_named
from mutransfer.transfer.decay import decay_rule_name
from mutransfer.transfer.target import read_sweep_record

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_numbers import kept_run_numbers, write_numbers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = "optimizer.weight_decay"
DPI = 70


def hidden_lr_exponent(cfg: Config) -> float:
    """The hidden matrices' LR width exponent −c: η_p ∝ m^(−c)."""
    return -float(cfg.parametrization.roles["hidden"].c[FAMILIES.named(cfg.optimizer.name).exponents])


def predicted_width_slopes(cfg: Config) -> dict[str, Optional[float]]:
    """log2 λ* per width doubling that each published rule predicts for a hidden matrix under ``cfg``'s
    parametrization and decay rule (λ_p = λ·m^-wd; per-step decay η_p·λ_p, or λ_p under ``independent``)."""
    wd = cfg.parametrization.roles["hidden"].wd
    lr = hidden_lr_exponent(cfg)
    rule = 0.0 if cfg.optimizer.weight_decay_rule == "independent" else lr  # per-step decay ∝ m^rule·λ·m^-wd
    adam = cfg.optimizer.name == "adamw"
    return {
        "timescale (Wang & Aitchison)": wd - rule,  # the per-step decay held fixed across width
        "λ ∝ √width (Fan et al.)": lr + 0.5 - rule + wd if adam else None,  # per-step ∝ η_p·m^0.5 (AdamW)
        "λ fixed (PyTorch default)": 0.0,
    }


def tables(run_dir: Path) -> str:
    trials, _ = read_tables(run_dir, all_axes=True)
    summary = summarize(trials, search_settings(run_dir, trials))
    record = read_sweep_record(run_dir)
    configs = {label: config_from_dict(data) for label, data in record["setups"].items()}
    decay = summary.setups(KEY)
    out = ["| setup | rule | LR* slope / width doubling | LR verdict | LR* slope / horizon doubling | LR verdict "
           "(horizon) |", "|---|---|---|---|---|---|"]
    for label, info in summary.setups().items():
        line, steps = info.judged("width"), info.axes["steps"]
        out.append(f"| {label} | {decay_rule_name(configs[label])} | {interval_cell(line.slope, line.slope_ci)} "
                   f"| {line.verdict} | {interval_cell(steps.slope, steps.slope_ci)} | {steps.verdict} |")
    out += ["", "| setup | log2 λ* at width 32 / 64 / 128 (150 steps) | at 600 steps (width 32) | λ* slope / width "
            "doubling | verdict | λ* slope / horizon doubling | verdict (horizon) | beat decay off at |",
            "|---|---|---|---|---|---|---|---|"]
    for label, info in decay.items():
        line, steps = info.judged("width"), info.axes["steps"]
        at = " / ".join(interval_cell(o.x_star, None) for _, o in sorted(line.points.items()))
        last = steps.points[max(steps.points)] if steps.points else None
        effects = line.decay_counts or {}
        out.append(f"| {label} | {at} | {interval_cell(last.x_star) if last is not None else '—'} | "
                   f"{interval_cell(line.slope, line.slope_ci)} | {line.verdict} | "
                   f"{interval_cell(steps.slope, steps.slope_ci)} | {steps.verdict} | "
                   f"{effects.get('effect', 0)} of {sum(effects.values())} points |")
    out += ["", "| setup | measured λ* slope / width doubling | timescale (Wang & Aitchison) | λ ∝ √width "
            "(Fan et al.) | λ fixed (PyTorch default) | measured λ* slope / horizon doubling | timescale predicts |",
            "|---|---|---|---|---|---|---|"]
    for label, info in decay.items():
        predicted = predicted_width_slopes(configs[label])
        line, steps = info.judged("width"), info.axes["steps"]
        lr_steps = summary.setups()[label].axes["steps"].slope
        independent = configs[label].optimizer.weight_decay_rule == "independent"
        horizon = -1.0 if independent else (-1.0 - lr_steps if lr_steps is not None else None)
        out.append(f"| {label} | {interval_cell(line.slope, line.slope_ci)} | "
                   + " | ".join(interval_cell(v) for v in predicted.values())
                   + f" | {interval_cell(steps.slope, steps.slope_ci)} | {interval_cell(horizon)} |")
    return "\n".join(out)


def figures(run_dir: Path, folder: Path) -> list[Path]:
    trials, _ = read_tables(run_dir, all_axes=True)
    settings = search_settings(run_dir, trials)
    setups = summarize(trials, settings).setups(KEY)
    symbol, quantity = key_label(KEY)
    paths = [folder / "weight_decay.png", folder / "weight_decay_drift.png"]
    view = axis_table(trials, KEY, settings, axis_named("width"))
    save(transfer_figure([(run_dir.name, view, setups)], symbol=symbol, quantity=quantity), paths[0], dpi=DPI)
    save(drift_figure([(run_dir.name, setups)], ["width", "steps"], symbol=symbol, quantity=quantity), paths[1],
         dpi=DPI)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, default=ROOT / "docs" / "data" / "weight_decay")
    parser.add_argument("--figures", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    print(tables(args.run_dir))
    write_numbers("weight_decay", "scripts/weight_decay_doc.py", kept_run_numbers(args.run_dir))
    for path in figures(args.run_dir, args.figures):
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
