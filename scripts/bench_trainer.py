"""The cost a trainer command's trial adds beyond the command's own run time, measured.

    python scripts/bench_trainer.py [--trials 40]

Runs a one-worker sweep whose trainer writes result.json and exits at once (a shell one-liner), on a journal
file, and prints per trial: the command's own wall time (start to exit, as the trial records it), the overhead
from claim to tell beyond it (launch, trial.json, reading the result, recording; the median and the 90th
percentile over the trials), and the sweep's wall time per trial (everything, Optuna's bookkeeping between
trials included). Run it on an otherwise idle machine. ``--numbers`` writes the figures docs/your-trainer.md shows
to the ``trainer_cost`` section of docs/data/numbers.yaml.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import optuna
import yaml
from optuna.trial import TrialState

from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.sweep.run.runner import run_sweep
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.storage import open_storage
from mutransfer.sweep.store.studies import prefixed_studies
from mutransfer.sweep.run.worker import SweepOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from doc_numbers import write_numbers  # noqa: E402

EXIT_AT_ONCE = "echo '{{\"val_loss\": 1.0}}' > \"$MUTRANSFER_TRIAL_DIR/result.json\""


def spec_file(folder: Path, trials: int) -> Path:
    spec = {"name": "bench_trainer", "trainer": {"command": EXIT_AT_ONCE, "shell": True},
            "setups": {"exit_at_once": []}, "widths": [32], "seeds": [0],
            "search": {"log2_min": -trials, "log2_max": -1, "step": 1, "noise_seeds": 0, "extend": False}}
    path = folder / "bench_trainer.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--numbers", action="store_true", help="write the figures to docs/data/numbers.yaml")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-trainer-"))
    spec = load_spec(str(spec_file(folder, args.trials)))
    run_dir = folder / "run"
    run_dir.mkdir()
    opts = SweepOptions(run_dir=run_dir, prefix=spec.name, workers=1, threads=1)
    started = time.perf_counter()
    run_sweep(SweepPlan.of(spec), opts)
    wall = time.perf_counter() - started
    storage = open_storage(None, run_dir)
    trials = [t for name in prefixed_studies(storage, spec.name)
              for t in optuna.load_study(study_name=name, storage=storage).get_trials(states=(TrialState.COMPLETE,))]
    own = [float(t.user_attrs["seconds"]) for t in trials]
    overhead = sorted((t.datetime_complete - t.datetime_start).total_seconds() - s for t, s in zip(trials, own))
    print(f"{len(trials)} trials of a trainer that exits at once, one worker, journal file:")
    print(f"  the command's own run time: median {statistics.median(own):.3f} s")
    print(f"  overhead beyond it, claim to tell: median {statistics.median(overhead):.3f} s, "
          f"90th percentile {overhead[int(0.9 * (len(overhead) - 1))]:.3f} s")
    print(f"  the sweep's wall time per trial, everything included: {wall / len(trials):.3f} s")
    if args.numbers:
        write_numbers("trainer_cost", "scripts/bench_trainer.py", {
            "trials": f"{len(trials)} trials", "command": f"{statistics.median(own):.3f} s",
            "overhead": f"{statistics.median(overhead):.3f} s",
            "overhead_p90": f"{overhead[int(0.9 * (len(overhead) - 1))]:.3f} s",
            "wall_per_trial": f"{wall / len(trials):.3f} s"})
    return 0


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
