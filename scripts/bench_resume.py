"""Kill/resume and two-worker reliability, measured: trials expected, finished, duplicates, lost, orphans.

    python scripts/bench_resume.py [--spec smoke] [--kills 2]
    python scripts/bench_resume.py --trainer-sleep 0.5 [--kills 2]

1. Runs `mutransfer sweep SPEC --workers 2`, SIGKILLs it after the first finished trials, runs the same command
   again (``--kills`` times), then lets it finish.
2. Runs a fresh two-worker sweep of the same spec to completion.
For each it counts, from the Optuna journal: grid points expected, points finished (ok/diverged), finished
trials beyond one per point (duplicates), points with no finished trial (lost), and trials re-trained after a
kill although they had finished; after each kill, the processes of the killed sweep still running 3 s later
(orphans: its workers, and a trainer command's children, found by the run directory in their command line or
environment). ``--trainer-sleep S`` sweeps a trainer command instead (a Python script that sleeps S seconds and
writes a bowl's loss), so that each kill lands while children run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import optuna
import yaml
from optuna.trial import TrialState

from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.storage import open_storage
from mutransfer.sweep.store.studies import prefixed_studies

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import run_benchmark  # noqa: E402
from cli_runner import cli_command, run_cli  # noqa: E402


def finished(run_dir: Path, prefix: str) -> list[optuna.trial.FrozenTrial]:
    storage = open_storage(None, run_dir)
    return [t for name in prefixed_studies(storage, prefix)
            for t in optuna.load_study(study_name=name, storage=storage).get_trials(states=(TrialState.COMPLETE,))]


SLEEPING_TRAINER = """import json, os, sys, time
time.sleep(float(sys.argv[2]))
x = float(sys.argv[1])
with open(os.path.join(os.environ["MUTRANSFER_TRIAL_DIR"], "result.json"), "w") as out:
    json.dump({"val_loss": 2.0 + 0.05 * (x + 6) ** 2}, out)
"""


def trainer_spec(root: Path, sleep: float) -> str:
    """A two-width sweep whose trials run a trainer command that sleeps ``sleep`` seconds."""
    (root / "sleeping_trainer.py").write_text(SLEEPING_TRAINER)
    spec = {"name": "resume_trainer",
            "trainer": {"command": [sys.executable, "sleeping_trainer.py", "{log2_lr}", str(sleep)], "timeout": 120},
            "setups": {"bowl": []}, "widths": [32, 64], "seeds": [0],
            "search": {"log2_min": -9, "log2_max": -3, "step": 1, "noise_seeds": 0, "extend": False}}
    path = root / "resume_trainer.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(path)


def orphans(run: Path) -> int:
    """Processes other than this one whose command line or environment names ``run``."""
    needle, count = str(run).encode(), 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if needle in (proc / "cmdline").read_bytes() or needle in (proc / "environ").read_bytes():
                count += 1
        except OSError:
            continue
    return count


def report(label: str, expected: int, trials: list[optuna.trial.FrozenTrial], retrained: int) -> None:
    points = {(t.user_attrs["setup"], t.user_attrs["width"], t.user_attrs["seed"], t.params["log2_lr"]) for t in trials}
    print(f"{label:<24} expected {expected:>4}  finished {len(points):>4}  duplicates {len(trials) - len(points):>3}  "
          f"lost {expected - len(points):>3}  re-trained after kill {retrained:>3}")


def main(argv: Optional[Sequence[str]] = None) -> Optional[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="smoke")
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--trainer-sleep", type=float, default=None, help="sweep a trainer command instead")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    name = trainer_spec(root, args.trainer_sleep) if args.trainer_sleep is not None else args.spec
    spec = load_spec(name)
    expected = sum(len(k.search.grid()) for k in SweepPlan.of(spec).studies)
    run = root / "killed"
    words = ["sweep", name, "--out", str(run), "--workers", "2"]
    seen: dict[tuple, int] = {}
    for kill in range(args.kills):
        proc = subprocess.Popen(cli_command(*words), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        target = len(seen) + 2
        while proc.poll() is None and len(finished(run, spec.name) if (run / "optuna.journal").exists() else []) < target:
            time.sleep(0.2)
        running = orphans(run)
        proc.kill()
        proc.wait()
        time.sleep(3.0)
        for t in finished(run, spec.name):
            seen.setdefault((t.user_attrs["setup"], t.user_attrs["width"], t.params["log2_lr"]), t.number)
        print(f"kill {kill + 1}: {len(seen)} points finished before the kill; processes of the sweep at the kill "
              f"{running}, 3 s after it {orphans(run)}")
    run_cli(*words, hide_output=True)
    trials = finished(run, spec.name)
    retrained = sum(1 for t in trials if (key := (t.user_attrs["setup"], t.user_attrs["width"], t.params["log2_lr"]))
                    in seen and seen[key] != t.number)
    report(f"kill×{args.kills} + resume", expected, trials, retrained)
    fresh = root / "two-workers"
    run_cli("sweep", name, "--out", str(fresh), "--workers", "2", hide_output=True)
    report("two workers", expected, finished(fresh, spec.name), 0)


if __name__ == "__main__":
    sys.exit(run_benchmark(main))
