"""optuna-dashboard on a sweep's journal: every trial names its setup, point and seed as user attributes, and the
dashboard, started as docs/sweeps.md says, serves them over loopback."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import optuna
import yaml
from typer.testing import CliRunner

from conftest import invoke
from mutransfer.sweep.plan.sweep_plan import SweepPlan
from mutransfer.sweep.run.runner import run_sweep
from mutransfer.sweep.spec.sweep_spec import load_spec
from mutransfer.sweep.store.storage import JOURNAL_FILE, open_storage
from mutransfer.sweep.store.studies import is_bookkeeping, load_study, seed_of
from mutransfer.sweep.run.worker import SweepOptions

POINT_ATTRS = ("setup", "width", "depth", "horizon", "seed")
LOOPBACK = "127.0.0.1"
STARTUP_S = 15.0


def test_every_trial_names_its_setup_point_and_seed(spec_file: Path, tmp_path: Path) -> None:
    """Grid trials, noise probes (another seed) and stacked trials (batch_trials 2) all carry setup, width,
    depth, horizon and seed: a swept axis (horizon) at the study's value, an unswept one (depth) at the config's."""
    data = yaml.safe_load(spec_file.read_text())
    data["overrides"] = [o for o in data["overrides"] if not o.startswith("train.steps=")]
    data.update(steps=[4, 6], batch_trials=2)
    data["search"].update(noise_seeds=1)
    path = tmp_path / "horizon.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = load_spec(str(path), ["widths=[32]"])
    run_sweep(SweepPlan.of(spec), SweepOptions(run_dir=tmp_path, prefix="p"))
    storage = open_storage(None, tmp_path)
    seen: set[tuple[str, int, int]] = set()
    for key in SweepPlan.of(spec).studies:
        trials = [t for t in load_study(storage, key, "p").get_trials() if not is_bookkeeping(t)]
        assert trials, key.name("p")
        for t in trials:
            attrs = {name: t.user_attrs.get(name) for name in POINT_ATTRS}
            assert attrs == {"setup": key.setup, "width": key.width, "depth": 1, "horizon": key.point.steps,
                             "seed": seed_of(t, key)}, (key.name("p"), t.number, t.user_attrs)
            seen.add((key.setup, attrs["seed"], t.user_attrs["batch_trials"]))
    assert {seed for _, seed, _ in seen} == {0, 1}, "noise probes (seed 1) should have run"
    assert 2 in {batch for _, _, batch in seen}, "some trials should have trained stacked"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def get_json(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://{LOOPBACK}:{port}{path}", timeout=5) as response:
        return json.loads(response.read())


def wait_for_studies(proc: subprocess.Popen[bytes], port: int, log: Path) -> list[dict[str, Any]]:
    """``/api/studies`` once the dashboard answers (it reads the journal first); fails if it exits or stays
    silent past ``STARTUP_S``."""
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"optuna-dashboard exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            return list(get_json(port, "/api/studies")["study_summaries"])
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise AssertionError(f"optuna-dashboard did not answer within {STARTUP_S:.0f} s: {log.read_text()[-2000:]}")


def test_dashboard_on_a_sweep_journal_serves_the_trial_attributes(runner: CliRunner, spec_file: Path,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "run"
    words = ["search.step=2", "train.steps=4"]
    result = invoke(runner, "sweep", str(spec_file), "--out", str(out), *words)
    assert result.exit_code == 0, result.output
    journal = out / JOURNAL_FILE
    storage = open_storage(None, out)
    expected: dict[str, dict[int, dict[str, str]]] = {}
    for key in SweepPlan.of(load_spec(str(spec_file), words)).studies:
        name = key.name("tiny")
        trials = [t for t in optuna.load_study(study_name=name, storage=storage).get_trials() if not is_bookkeeping(t)]
        expected[name] = {t.number: {"setup": key.setup, "width": str(key.width), "depth": "1", "horizon": "4",
                                     "seed": str(seed_of(t, key))} for t in trials}
    assert len(expected) == 4 and all(expected.values())
    command = shutil.which("optuna-dashboard", path=str(Path(sys.executable).parent))
    assert command, "optuna-dashboard is not installed: pip install -e '.[dev]'"
    port = free_port()
    log = tmp_path / "dashboard.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([command, str(journal), "--host", LOOPBACK, "--port", str(port)],
                                stdout=sink, stderr=subprocess.STDOUT)
        try:
            studies = wait_for_studies(proc, port, log)
            assert sorted(s["study_name"] for s in studies) == sorted(expected)
            for summary in studies:
                detail = get_json(port, f"/api/studies/{summary['study_id']}")
                sortable = {a["key"]: a["sortable"] for a in detail["union_user_attrs"]}
                assert all(sortable.get(name) for name in ("width", "depth", "horizon", "seed")), sortable
                served = {t["number"]: {a["key"]: a["value"] for a in t["user_attrs"]} for t in detail["trials"]}
                for number, want in expected[summary["study_name"]].items():
                    assert {name: served[number].get(name) for name in POINT_ATTRS} == want, (summary, number)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
