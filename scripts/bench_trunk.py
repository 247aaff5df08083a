"""Horizons from one trunk against every horizon from scratch, both under WSD: the training time saved and whether
the optimum per horizon agrees.

    python scripts/bench_trunk.py [--scratch DIR --trunk DIR] [--spec horizon] [OVERRIDE ...]

Without run directories it runs ``mutransfer sweep SPEC train.schedule=wsd train.warmup_steps=10 trunks=false``
and the same with trunks (the default), one after the other in fresh directories, and prints each one's wall
time; extra words are passed to both. Then, per setup and horizon: the trials, the training seconds (the trials'
``seconds`` summed: a branch counts only the steps it trained), log2 LR* with its 95 % interval from each run, and
their difference with the 95 % interval of a difference (the two intervals' standard errors added in quadrature,
Student's t at the smaller degrees of freedom); then the totals, how many trials trained at the same point gave the
same validation loss to the bit, the steps each run trained, and the trunk run's seconds at the scratch run's speed
per step (the median ratio of seconds per trained step over the points both trained: machines of this kind drift
by several per cent between two runs).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from mutransfer.analysis.cells import interval_cell
from mutransfer.analysis.stats import t_quantile
from mutransfer.analysis.result import PointResult, SetupResult
from mutransfer.analysis.summary import summarize_run

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import run_cli  # noqa: E402

WSD = ["train.schedule=wsd", "train.warmup_steps=10"]
POINT = ["setup", "horizon", "seed", "log2_lr"]


def run(spec: str, words: list[str], out: Path) -> float:
    return run_cli("sweep", spec, *words, "--out", str(out), "--workers", "1", hide_output=True)


def optimum(info: SetupResult, horizon: int) -> Optional[PointResult]:
    point = info.axes["steps"].points.get(horizon) if "steps" in info.axes else None
    return point if point is not None and point.measured else None


def difference(a: PointResult, b: PointResult) -> str:
    assert a.x_star is not None and b.x_star is not None and a.se is not None and b.se is not None
    d = b.x_star - a.x_star
    dof = min(x for x in (a.dof, b.dof, 10**6) if x)
    half = t_quantile(0.975, dof) * math.hypot(a.se, b.se)
    return interval_cell(d, (d - half, d + half), carried=False)


def trained_steps(trials: pd.DataFrame) -> pd.Series:
    """The steps each trial trained itself: all of them, less the trunk's where it branched."""
    return trials["steps"] - trials["branched_at"].fillna(0) if "branched_at" in trials else trials["steps"]


def side_by_side(scratch: Path, trunk: Path) -> str:
    tables = {name: pd.read_csv(path / "trials.csv") for name, path in (("scratch", scratch), ("trunk", trunk))}
    summaries = {name: summarize_run(path).setups() for name, path in (("scratch", scratch), ("trunk", trunk))}
    lines = ["| setup | horizon | trials (scratch / trunk) | training s (scratch / trunk) | of scratch | "
             "log2 LR* from scratch | log2 LR* from the trunk | difference, 95 % |",
             "|---|---|---|---|---|---|---|---|"]
    for (setup, horizon), part in tables["scratch"].groupby(["setup", "horizon"]):
        other = tables["trunk"][(tables["trunk"]["setup"] == setup) & (tables["trunk"]["horizon"] == horizon)]
        a, b = (optimum(summaries[name][setup], int(horizon)) for name in ("scratch", "trunk"))
        cells = [interval_cell(x.x_star, x.ci, ".2f", carried=False) if x and x.ci else "—" for x in (a, b)]
        lines.append(f"| {setup} | {horizon} | {len(part)} / {len(other)} | {part['seconds'].sum():.0f} / "
                     f"{other['seconds'].sum():.0f} | {other['seconds'].sum() / part['seconds'].sum():.0%} | "
                     f"{cells[0]} | {cells[1]} | {difference(a, b) if a and b else '—'} |")
    merged = tables["scratch"].merge(tables["trunk"], on=POINT, suffixes=("_scratch", "_trunk"))
    both_missing = merged["val_loss_scratch"].isna() & merged["val_loss_trunk"].isna()
    same = (merged["val_loss_scratch"] == merged["val_loss_trunk"]) | both_missing
    total = {name: t["seconds"].sum() for name, t in tables.items()}
    lines += ["", f"training seconds: {total['scratch']:.0f} from scratch, {total['trunk']:.0f} from trunks "
                  f"({total['trunk'] / total['scratch']:.0%}); trials {len(tables['scratch'])} / "
                  f"{len(tables['trunk'])}; {int(same.sum())} of the {len(merged)} points both trained gave the same "
                  "validation loss to the bit"]
    steps = {name: int(trained_steps(t).sum()) for name, t in tables.items()}
    trunk_steps = trained_steps(merged.rename(columns={"steps_trunk": "steps"}))
    speed = ((merged["seconds_trunk"] / trunk_steps) / (merged["seconds_scratch"] / merged["steps_scratch"])).median()
    lines.append(f"per step, the trunk run's trials took {speed:.2f}× as long as the same points from scratch "
                 f"(median); steps trained: {steps['trunk']:,} of {steps['scratch']:,} "
                 f"({steps['trunk'] / steps['scratch']:.1%}); at equal speed the trunks cost "
                 f"{total['trunk'] / speed / total['scratch']:.1%} of the training seconds")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--trunk", type=Path, default=None)
    parser.add_argument("--spec", default="horizon")
    parser.add_argument("words", nargs="*", help="spec keys or config overrides for both runs")
    args = parser.parse_args(argv)
    scratch, trunk = args.scratch, args.trunk
    if scratch is None or trunk is None:
        root = Path(tempfile.mkdtemp(prefix="bench-trunk-"))
        scratch, trunk = root / "scratch", root / "trunk"
        walls = {name: run(args.spec, [*WSD, *args.words, *extra], path)
                 for name, path, extra in (("scratch", scratch, ["trunks=false"]), ("trunk", trunk, []))}
        print(f"wall time: {walls['scratch']:.0f} s from scratch, {walls['trunk']:.0f} s from trunks "
              f"({walls['trunk'] / walls['scratch']:.0%}); run directories {scratch}, {trunk}")
    print(side_by_side(scratch, trunk))


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
