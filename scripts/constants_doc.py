"""The per-role constants study's tables and figure for docs/constants.md, from its kept run directory.

    python scripts/constants_doc.py [--run-dir docs/data/constants] [--figures docs]

Prints the study's Markdown tables:
1. Each constant at the width it was tuned at: its optimum (log2 of the factor on the shipped value) with its 95 %
   interval, the loss at factor 1, the gain of the best factor over it and whether it matters.
2. Each constant that matters, measured again across width: its optimum per width, slope and verdict.
3. The learning rate at the tuning width with the shipped constants (the first coordinate stage) and with the tuned
   ones, and across width with the tuned ones: slope and verdict.
4. ``verify`` at the target width (verify.json): the transferred LR's error and regret, and the best loss with the
   tuned constants against the shipped ones.

It also draws constants.png (each constant's bowls at the widths it was trained at), small enough to commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from mutransfer.analysis.cells import interval_cell
from mutransfer.analysis.plots import key_label, save, transfer_figure
from mutransfer.analysis.result import AxisFit, Summary, measured_point
from mutransfer.analysis.run_files import read_tables, search_settings
from mutransfer.analysis.summary import axis_table, final_stages, summarize, summarize_run
from mutransfer.config import config_from_dict
from mutransfer.schema import LR_KEY, axis_named, config_value
from mutransfer.transfer.target import read_sweep_record

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doc_numbers import kept_run_numbers, write_numbers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DPI = 70


def _keys(run_dir: Path) -> tuple[list[str], int]:
    """The tuned constants' keys and the width they were tuned at, from the sweep's spec."""
    constants = read_sweep_record(run_dir)["spec"]["constants"]
    return [str(k) for k in constants["keys"]], int(constants["at"])


def _labels(run_dir: Path) -> list[str]:
    """The setups in the spec's order."""
    return list(read_sweep_record(run_dir)["setups"])


def _optima(fit: AxisFit) -> str:
    return " / ".join(f"{width}: {interval_cell(o.x_star, o.ci)}" for width, o in sorted(fit.points.items()))


def effect_table(run_dir: Path, summary: Summary) -> list[str]:
    keys, at = _keys(run_dir)
    configs = {label: config_from_dict(data) for label, data in read_sweep_record(run_dir)["setups"].items()}
    lines = [f"| setup | constant | shipped | log2 factor* at width {at} [95 %] | loss at factor 1 | "
             "gain over factor 1 (nats) [95 %] | verdict |", "|---|---|---|---|---|---|---|"]
    for label, cfg in configs.items():
        for key in keys:
            result = summary.setups(key).get(label)
            point = result.line.points.get(at) if result is not None else None
            effect = point.constant if point is not None else None
            lines.append(f"| {label} | `{key.removeprefix('optimizer.')}` | `{config_value(cfg, key)}` | "
                         f"{interval_cell(point.x_star, point.ci) if point else '—'} | "
                         f"{interval_cell(effect.at_one, fmt='.4f') if effect else '—'} | "
                         f"{interval_cell(effect.gain, effect.gain_ci, '+.4f') if effect else '—'} | "
                         f"{effect.verdict if effect else 'unmeasured'} |")
    return lines


def width_table(run_dir: Path, summary: Summary) -> list[str]:
    keys, _ = _keys(run_dir)
    lines = ["| setup | constant | log2 factor* per width [95 %] | slope / width doubling [95 %] | verdict |",
             "|---|---|---|---|---|"]
    for label in _labels(run_dir):
        for key in keys:
            result = summary.setups(key).get(label)
            if result is None:
                continue
            fit = result.line
            if len(fit.points) < 2:
                continue
            lines.append(f"| {label} | `{key.removeprefix('optimizer.')}` | {_optima(fit)} | "
                         f"{interval_cell(fit.slope, fit.slope_ci)} | {fit.verdict} |")
    return lines if len(lines) > 2 else []


def shipped_lr(run_dir: Path, trials: pd.DataFrame) -> Summary:
    """The learning rate's first coordinate stage (every constant at factor 1) analysed on its own."""
    first = trials[(trials["search_key"] == LR_KEY) & (trials["stage"] == trials["stage"].min())]
    return summarize(first.drop(columns="stage").reset_index(drop=True), search_settings(run_dir, trials))


def lr_table(run_dir: Path, summary: Summary) -> list[str]:
    _, at = _keys(run_dir)
    trials, _ = read_tables(run_dir, all_axes=True)
    shipped = shipped_lr(run_dir, trials).setups()
    lines = [f"| setup | log2 η* at width {at}, shipped constants [95 %] | tuned constants [95 %] | "
             "log2 η* per width, tuned constants | slope / width doubling [95 %] | verdict |",
             "|---|---|---|---|---|---|"]
    for label in _labels(run_dir):
        fit = summary.setups()[label].line
        before = shipped[label].line.points.get(at) if label in shipped else None
        after = fit.points.get(at)
        lines.append(f"| {label} | {interval_cell(before.x_star, before.ci) if before else '—'} | "
                     f"{interval_cell(after.x_star, after.ci) if after else '—'} | {_optima(fit)} | "
                     f"{interval_cell(fit.slope, fit.slope_ci)} | {fit.verdict} |")
    return lines


def verify_table(run_dir: Path) -> list[str]:
    """``verify``'s two tables at the target: the learning rate with the constants carried (the prediction, the
    measured optimum, the error and the regret), then what tuning paid (each grid's best loss and the gain); two
    narrow tables, so that every column fits a page's width."""
    path = run_dir / "verify.json"
    if not path.is_file():
        return []
    report: dict[str, Any] = json.loads(path.read_text())
    lr = ["| setup | width | constants carried | predicted log2 η* [95 % range] | measured [95 %] | error (octaves) "
          "| regret (nats) [95 %] |", "|---|---|---|---|---|---|---|"]
    paid = ["| setup | width | best loss, tuned | best loss, shipped | gain (nats) [95 %] | verdict |",
            "|---|---|---|---|---|---|"]
    for t in report["targets"]:
        p, c = t["prediction"], t.get("constants") or {}
        measured, regret = measured_point(t["width"], t.get("measured")), t.get("regret") or {}
        carried = ", ".join(f"`{o.removeprefix('optimizer.')}`" for o in c.get("overrides", [])) or "none"
        lr.append(f"| {t['setup']} | {t['width']} | {carried} | {interval_cell(p['log2_lr'], p['interval'])} | "
                  f"{interval_cell(measured.x_star, measured.ci) if measured else '—'} | "
                  f"{interval_cell(t.get('error'), t.get('error_ci'))} | "
                  f"{interval_cell(regret.get('nats'), regret.get('nats_ci'), '+.4f')} |")
        paid.append(f"| {t['setup']} | {t['width']} | {interval_cell(c.get('tuned_best_loss'), fmt='.4f')} | "
                    f"{interval_cell(c.get('shipped_best_loss'), fmt='.4f')} | "
                    f"{interval_cell(c.get('gain'), c.get('gain_ci'), '+.4f')} | {c.get('verdict', '—')} |")
    return [*lr, "", *paid]


def tables(run_dir: Path) -> str:
    summary = summarize_run(run_dir)
    parts = [effect_table(run_dir, summary), width_table(run_dir, summary), lr_table(run_dir, summary),
             verify_table(run_dir)]
    return "\n\n".join("\n".join(p) for p in parts if p)


def constants_figure(run_dir: Path) -> Any:
    """Each constant's bowls per width (one row per constant, a panel per setup)."""
    trials, _ = read_tables(run_dir, all_axes=True)
    trials = final_stages(trials)
    settings = search_settings(run_dir, trials)
    summary = summarize_run(run_dir)
    keys, _ = _keys(run_dir)
    runs = [(key_label(key)[0], axis_table(trials, key, settings, axis_named("width")), summary.setups(key))
            for key in keys]
    return transfer_figure(runs, symbol="factor", quantity="factor on the shipped value")


def figure(run_dir: Path, folder: Path) -> Path:
    path = folder / "constants.png"
    save(constants_figure(run_dir), path, dpi=DPI)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, default=ROOT / "docs" / "data" / "constants")
    parser.add_argument("--figures", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    print(tables(args.run_dir))
    write_numbers("constants", "scripts/constants_doc.py", kept_run_numbers(args.run_dir))
    path = figure(args.run_dir, args.figures)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
