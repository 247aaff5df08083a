"""The robustness table, measured: run the generated-input tests and every fault test, and print how many
inputs were generated and what each fault cost (points the sweep holds, trials lost, duplicates, tracebacks),
as the tests recorded them (the ``fault_tally`` fixture). The database faults need the PostgreSQL test server:
``eval "$(bash scripts/postgres_test_server.sh)"`` first.

    python scripts/fault_table.py
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATED = "tests/robustness/test_generated_input.py"
FAULTS = (  # (what goes wrong, test file, test)
    ("Ctrl-C (SIGINT) mid-sweep, then rerun", "sweep/test_reliability.py",
     "test_interrupted_sweep_stops_cleanly_and_resumes[SIGINT]"),
    ("SIGTERM mid-sweep, then rerun", "sweep/test_reliability.py",
     "test_interrupted_sweep_stops_cleanly_and_resumes[SIGTERM]"),
    ("SIGKILL mid-sweep, then rerun", "sweep/test_reliability.py", "test_sigkill_then_resume_finishes_without_retraining"),
    ("journal cut mid-record, then rerun", "robustness/test_damaged_files.py",
     "test_a_journal_cut_mid_record_is_repaired_and_the_rerun_finishes_every_point_once"),
    ("full disk while writing outputs", "robustness/test_damaged_files.py",
     "test_a_full_disk_fails_in_one_line_and_leaves_the_previous_outputs_intact"),
    ("two sweeps of one spec on one directory", "robustness/test_storage_input.py",
     "test_two_sweeps_of_the_same_spec_on_one_directory_share_the_work"),
    ("two machines on PostgreSQL", "sweep/test_reliability.py",
     "test_two_machines_share_postgres_and_train_each_point_once"),
    ("a PostgreSQL worker killed mid-trial", "sweep/test_reliability.py",
     "test_killed_worker_trial_is_finished_by_the_other"),
    ("PostgreSQL restarted, then stopped 6 s, mid-sweep", "sweep/test_database_faults.py",
     "test_a_restart_and_an_outage_mid_sweep_lose_and_duplicate_nothing"),
)
COUNTS = ("points", "lost", "duplicates", "tracebacks")


def generated_cases() -> tuple[int, str]:
    """Inputs Hypothesis generated (passing examples over every phase) and the pytest outcome line."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--hypothesis-show-statistics", GENERATED], cwd=ROOT, capture_output=True, text=True)
    cases = sum(int(n) for n in re.findall(r"(\d+) passing", run.stdout))
    return cases, run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr.strip()[-200:]


def fault_counts() -> dict[str, tuple[str, dict[str, str]]]:
    """Per fault test: its outcome and the counts it recorded."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "faults.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                        "-o", "junit_family=xunit1", *(f"tests/{file}::{test}" for _, file, test in FAULTS)], cwd=ROOT)
        tree = ElementTree.parse(report)
    results = {}
    for case in tree.iter("testcase"):
        outcome = "failed" if case.find("failure") is not None or case.find("error") is not None else \
            "skipped" if case.find("skipped") is not None else "passed"
        counts = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        results[case.get("name", "")] = (outcome, counts)
    return results


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    cases, outcome = generated_cases()
    print(f"\ngenerated inputs: {cases} cases ({GENERATED}: {outcome})\n")
    results = fault_counts()
    print("| fault | points the sweep holds | trials lost | duplicates | tracebacks | result |")
    print("|---|---|---|---|---|---|")
    for label, _, test in FAULTS:
        outcome, counts = results.get(test, ("not run", {}))
        cells = [counts.get(name, "—") for name in COUNTS]
        print(f"| {label} | {' | '.join(cells)} | {outcome} |")


if __name__ == "__main__":
    main()
