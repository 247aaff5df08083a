"""Kill/resume and two-worker reliability, measured: trials expected, finished, duplicates, lost.

    python scripts/bench_resume.py [--spec smoke] [--kills 2]

1. Runs `mutransfer sweep SPEC --workers 2`, SIGKILLs it after the first finished trials, runs the same command
   again (``--kills`` times), then lets it finish.
2. Runs a fresh two-worker sweep of the same spec to completion.
For each it counts, from the Optuna journal: grid points expected, points finished (ok/diverged), finished
trials beyond one per point (duplicates), points with no finished trial (lost), and trials re-trained after a
kill although they had finished.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from mutransfer.sweep.spec import load_spec
from mutransfer.sweep.storage import open_storage
from mutransfer.sweep.studies import prefixed_studies, study_keys

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import cli_command, run_cli  # noqa: E402


def finished(run_dir: Path, prefix: str) -> list[optuna.trial.FrozenTrial]:
    storage = open_storage(None, run_dir)
    return [t for name in prefixed_studies(storage, prefix)
            for t in optuna.load_study(study_name=name, storage=storage).get_trials(states=(TrialState.COMPLETE,))]


def report(label: str, expected: int, trials: list[optuna.trial.FrozenTrial], retrained: int) -> None:
    points = {(t.user_attrs["setup"], t.user_attrs["width"], t.user_attrs["seed"], t.params["log2_lr"]) for t in trials}
    print(f"{label:<24} expected {expected:>4}  finished {len(points):>4}  duplicates {len(trials) - len(points):>3}  "
          f"lost {expected - len(points):>3}  re-trained after kill {retrained:>3}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="smoke")
    parser.add_argument("--kills", type=int, default=2)
    args = parser.parse_args()
    spec = load_spec(args.spec)
    expected = sum(len(k.search.grid()) for k in study_keys(spec))
    root = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    run = root / "killed"
    words = ["sweep", args.spec, "--out", str(run), "--workers", "2"]
    seen: dict[tuple, int] = {}
    for kill in range(args.kills):
        proc = subprocess.Popen(cli_command(*words), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        target = len(seen) + 2
        while proc.poll() is None and len(finished(run, spec.name) if (run / "optuna.journal").exists() else []) < target:
            time.sleep(0.2)
        proc.kill()
        proc.wait()
        for t in finished(run, spec.name):
            seen.setdefault((t.user_attrs["setup"], t.user_attrs["width"], t.params["log2_lr"]), t.number)
        print(f"kill {kill + 1}: {len(seen)} points finished before the kill")
    run_cli(*words, hide_output=True)
    trials = finished(run, spec.name)
    retrained = sum(1 for t in trials if (key := (t.user_attrs["setup"], t.user_attrs["width"], t.params["log2_lr"]))
                    in seen and seen[key] != t.number)
    report(f"kill×{args.kills} + resume", expected, trials, retrained)
    fresh = root / "two-workers"
    run_cli("sweep", args.spec, "--out", str(fresh), "--workers", "2", hide_output=True)
    report("two workers", expected, finished(fresh, spec.name), 0)


if __name__ == "__main__":
    main()
