"""A database that goes away mid-sweep: the real PostgreSQL server restarted and stopped for longer than the
heartbeat's grace period while two workers train; the retry loop's rules on their own."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from mutransfer.errors import UserError
from mutransfer.sweep.store.resilient import ResilientRDBStorage, connection_lost
from mutransfer.sweep.store.storage import open_storage
from mutransfer.sweep.store.studies import is_bookkeeping, prefixed_studies, reap_orphans
from conftest import FaultTally, no_loss
from test_reliability import CLI, GRID, finished_points, wait_for, write_spec

HEARTBEAT = 1
OUTAGE_SECONDS = 6  # twice the grace period (3 heartbeats): other workers may declare running trials dead


@pytest.fixture()
def pg_cluster(pg_url: str) -> list[str]:
    """``pg_ctlcluster`` arguments (version, cluster) of the Debian cluster serving the test URL's port."""
    port = str(urlsplit(pg_url).port or 5432)
    listing = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True) \
        if shutil.which("pg_lsclusters") else None
    for line in (listing.stdout.splitlines() if listing else []):
        fields = line.split()
        if len(fields) > 2 and fields[2] == port:
            return fields[:2]
    message = f"no Debian PostgreSQL cluster on port {port} to restart (pg_lsclusters)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def pg_ctl(cluster: list[str], action: str, check: bool = True) -> None:
    subprocess.run(["pg_ctlcluster", *cluster, action], check=check, capture_output=True, timeout=60)


def trials_of(url: str, tmp_path: Path, study: str) -> list[optuna.trial.FrozenTrial]:
    storage = open_storage(url, tmp_path)
    return [t for name in prefixed_studies(storage, study)
            for t in optuna.load_study(study_name=name, storage=storage).get_trials()]


@pytest.mark.slow
def test_a_restart_and_an_outage_mid_sweep_lose_and_duplicate_nothing(pg_url: str, pg_cluster: list[str],
                                                                      tmp_path: Path, text_file: Path,
                                                                      fault_tally: FaultTally) -> None:
    spec = write_spec(tmp_path, text_file, steps=300)
    study = f"f{uuid.uuid4().hex[:8]}"
    command = [*CLI, "sweep", str(spec), "--storage", pg_url, "--study", study, "--heartbeat", str(HEARTBEAT),
               "--threads", "1"]
    workers = [subprocess.Popen([*command, "--out", str(tmp_path / f"m{i}")], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        def both_training() -> bool:
            running = {t.user_attrs.get("pid") for t in trials_of(pg_url, tmp_path, study)
                       if t.state == TrialState.RUNNING}
            return {w.pid for w in workers} <= running

        wait_for(both_training, 120, "both workers to train")
        pg_ctl(pg_cluster, "restart")
        wait_for(both_training, 120, "both workers to train again after the restart")
        pg_ctl(pg_cluster, "stop")
        time.sleep(OUTAGE_SECONDS)
        pg_ctl(pg_cluster, "start")
        errors = [w.communicate(timeout=600)[1] for w in workers]
    finally:
        pg_ctl(pg_cluster, "start", check=False)  # already running unless the test failed mid-outage
        for worker in workers:
            worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0], [err[-2000:] for err in errors]
    assert any("lost the connection to the storage" in err for err in errors)
    complete = Counter(finished_points([t for t in trials_of(pg_url, tmp_path, study)
                                        if t.state == TrialState.COMPLETE]))
    assert fault_tally(GRID, list(complete.elements()), errors) == no_loss(GRID)
    assert not [t for t in trials_of(pg_url, tmp_path, study) if t.state in (TrialState.RUNNING, TrialState.WAITING)]

    rerun = subprocess.run([*command, "--out", str(tmp_path / "rerun")], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    again = Counter(finished_points([t for t in trials_of(pg_url, tmp_path, study)
                                     if t.state == TrialState.COMPLETE]))
    assert again == complete


class Clock:
    """The retry loop's clock: ``sleep`` records the wait asked for and moves ``monotonic`` on by it at once, so
    the back-off is read from what the loop asked for, not from how long a busy machine took."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr("mutransfer.sweep.store.resilient.time", fake)
    return fake


def flaky(failures: int, calls: list[float], clock: Clock):  # noqa: ANN201 - a storage method stand-in
    """A call that loses its connection ``failures`` times, then answers 42."""
    def method(*_: object) -> int:
        calls.append(clock.monotonic())
        if len(calls) <= failures:
            raise optuna.exceptions.StorageInternalError("commit failed") from sqlalchemy.exc.OperationalError(
                "SELECT 1", {}, Exception("server closed the connection unexpectedly"))
        return 42
    method.__name__ = "get_trial"
    return method


def test_a_lost_connection_is_retried_with_back_off_until_it_answers(tmp_path: Path, clock: Clock) -> None:
    storage = ResilientRDBStorage(f"sqlite:///{tmp_path / 'db.sqlite'}", patience=30)
    calls: list[float] = []
    assert storage._with_retries(flaky(3, calls, clock)) == 42
    assert len(calls) == 4 and clock.sleeps == [0.5, 1.0, 2.0]
    assert [b - a for a, b in zip(calls, calls[1:])] == clock.sleeps


def test_an_outage_past_the_patience_stops_in_one_line_without_the_password(tmp_path: Path,
                                                                           clock: Clock) -> None:
    storage = ResilientRDBStorage(f"sqlite:///{tmp_path / 'db.sqlite'}", patience=1.0)
    storage.url = "postgresql://me:S3cretPass@db.example/sweeps"
    calls: list[float] = []
    with pytest.raises(UserError) as error:
        storage._with_retries(flaky(1000, calls, clock))
    line = error.value.one_line()
    assert "S3cretPass" not in line and "me:***@db.example" in line and "run the same command again" in line
    assert clock.sleeps == [0.5, 0.5]  # the second wait cut to the patience left; none after it is spent
    assert len(calls) == 3 and calls[-1] - calls[0] == 1.0 and "for 1 s" in line


def test_only_a_lost_connection_is_retried(tmp_path: Path) -> None:
    storage = ResilientRDBStorage(f"sqlite:///{tmp_path / 'db.sqlite'}", patience=30)
    assert not connection_lost(ValueError("bad value"))
    assert not connection_lost(optuna.exceptions.StorageInternalError("too long"))
    attempts: list[int] = []

    def bad_data() -> None:
        attempts.append(1)
        raise optuna.exceptions.StorageInternalError("exceeding max length")

    with pytest.raises(optuna.exceptions.StorageInternalError):
        storage._with_retries(bad_data)
    assert attempts == [1]


def test_a_tell_whose_first_attempt_committed_is_not_an_error(tmp_path: Path) -> None:
    """The connection drops after the commit: the retry finds the trial finished, which is success."""
    storage = ResilientRDBStorage(f"sqlite:///{tmp_path / 'db.sqlite'}", patience=30)
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    original = optuna.storages.RDBStorage.set_trial_state_values
    dropped = threading.Event()

    def commit_then_drop(self: optuna.storages.RDBStorage, *args: object, **kwargs: object) -> bool:
        result = original(self, *args, **kwargs)
        if not dropped.is_set():
            dropped.set()
            raise optuna.exceptions.StorageInternalError("lost") from sqlalchemy.exc.OperationalError(
                "COMMIT", {}, Exception("connection lost"))
        return result

    commit_then_drop.__name__ = "set_trial_state_values"
    assert storage._with_retries(commit_then_drop, storage, trial._trial_id, TrialState.COMPLETE, [1.5]) is True
    assert study.trials[0].state == TrialState.COMPLETE and study.trials[0].value == 1.5


def test_an_unclaimed_running_trial_is_reaped_and_a_claimed_one_kept(tmp_path: Path) -> None:
    storage = ResilientRDBStorage(f"sqlite:///{tmp_path / 'db.sqlite'}")
    study = optuna.create_study(storage=storage)
    orphan, claimed = study.ask(), study.ask()
    claimed.set_user_attr("pid", os.getpid())
    assert reap_orphans(study, older_than=3600) == 0
    assert reap_orphans(study, older_than=0) == 1
    states = {t.number: t for t in study.get_trials()}
    assert states[orphan.number].state == TrialState.FAIL and is_bookkeeping(states[orphan.number])
    assert states[claimed.number].state == TrialState.RUNNING
