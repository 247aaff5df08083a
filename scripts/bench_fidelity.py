"""Fidelity of the transferred learning rate: the default sweep, then `verify` at wider widths for every setup,
plain and with --correct-drift, as a table of errors and regrets with their intervals and the wall time.

    python scripts/bench_fidelity.py [--run runs/fidelity] [--widths 512] [--full] [--workers 1] [--threads 0]

Sized for 2 cores: width 512, the first beyond the default sweep's 32–256 (add 1024 with --full; a GPU adds it by
default). Every step resumes: the sweep and each verify keep their trials in the run directory's journal, so
running the script again after an interruption trains only what is missing. Each (width, setup, mode) is one `verify` call, whose
verify.json is kept as `fidelity/<mode>_w<width>_<setup>.json`; the Markdown table is printed at the end and
written to `fidelity/table.md`, and `verify.png` of each mode across all widths to `fidelity/<mode>.png`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from mutransfer.analysis.cells import format_interval
from mutransfer.analysis.result import Summary, measured_point

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli_or_exit  # noqa: E402

MODES = {"plain": [], "corrected": ["--correct-drift"]}
NO_INTERVAL = "(none)"


def row(mode: str, target: dict[str, Any]) -> str:
    measured, regret = measured_point(target["width"], target["measured"]), target["regret"] or {}
    star = measured.x_star if measured is not None else None
    measured_text = f"{star:.2f}" if star is not None else "–"
    bound = "≥ " if regret.get("bound") else ""
    regret_text = (f"{bound}{regret['percent']:+.2f} {format_interval(regret['percent_ci'], missing=NO_INTERVAL)}"
                   if regret else "–")
    return (f"| {target['setup']} | {target['width']} | {mode} | {target['predicted_log2_lr']:.2f} | {measured_text} | "
            f"{target['error']:+.2f} {format_interval(target['error_ci'], missing=NO_INTERVAL)} | {regret_text} | "
            f"{'yes' if target['passed'] else 'no'} |")


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=Path("runs/fidelity"))
    parser.add_argument("--widths", default="512")
    parser.add_argument("--full", action="store_true", help="add width 1024")
    parser.add_argument("--workers", default="1")
    parser.add_argument("--threads", default="0", help="torch threads per worker (0: cores / workers)")
    args = parser.parse_args(argv)
    import torch

    widths = [int(w) for w in args.widths.split(",")] + ([1024] if args.full or torch.cuda.is_available() else [])
    out = args.run / "fidelity"
    seconds = {"sweep": run_cli_or_exit("sweep", "default", "--out", str(args.run), "--workers", args.workers)}
    print(f"sweep default: {seconds['sweep']:.0f} s", flush=True)
    setups = list(Summary.from_json(json.loads((args.run / "summary.json").read_text())).setups())
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for width in sorted(set(widths)):
        for setup in setups:
            for mode, flags in MODES.items():
                took = run_cli_or_exit("verify", "--width", str(width), "--from", str(args.run), "--setup", setup,
                                       "--workers", args.workers, "--threads", args.threads, *flags)
                seconds[f"{mode} w{width} {setup}"] = took
                shutil.copy(args.run / "verify.json", out / f"{mode}_w{width}_{setup}.json")
                target = json.loads((args.run / "verify.json").read_text())["targets"][0]
                lines.append(row(mode, target))
                print(f"{lines[-1]}   ({took:.0f} s)", flush=True)
    for mode, flags in MODES.items():
        run_cli_or_exit("verify", "--width", ",".join(map(str, widths)), "--from", str(args.run), "--setup", "all",
                        *flags)
        shutil.copy(args.run / "verify.png", out / f"{mode}.png")
    header = ("| setup | width | prediction | predicted log2 η* | measured | error (octaves) [95 %] | "
              "regret (%) [95 %] | within 0.5 |\n|---|---|---|---|---|---|---|---|")
    table = "\n".join([header, *lines])
    total = sum(seconds.values())
    threads = args.threads if args.threads != "0" else torch.get_num_threads()
    footer = (f"\nwall time: {total / 60:.1f} min in all (sweep {seconds['sweep'] / 60:.1f} min; verify "
              f"{(total - seconds['sweep']) / 60:.1f} min), {args.workers} worker(s), "
              f"{'GPU' if torch.cuda.is_available() else f'CPU, {threads} thread(s) per worker'}")
    (out / "table.md").write_text(table + "\n" + footer + "\n")
    print("\n" + table + "\n" + footer)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
