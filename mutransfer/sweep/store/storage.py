"""Optuna storages: a journal file in the run directory (one machine), or a database URL (several
machines) with a heartbeat so that a dead worker's trial is retried by another, and retries that ride out a
database restart."""

from __future__ import annotations

import json
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Optional

import optuna
from optuna.storages import JournalStorage

from ...errors import UserError
from ...files import JOURNAL_FILE
from ..interrupts import held, storage_call
from .resilient import ResilientRDBStorage

__all__ = ["open_storage", "heartbeat_of", "repair_journal", "HeldJournalStorage", "JOURNAL_FILE"]

MIN_SECRET = 4


class HeldJournalStorage(JournalStorage):
    """Optuna's ``JournalStorage`` whose calls Ctrl-C and SIGTERM never cut half-way (``interrupts.held``): its
    file lock and its replay of the log are not safe against an exception raised inside them."""

    create_new_study = storage_call(JournalStorage.create_new_study)
    delete_study = storage_call(JournalStorage.delete_study)
    set_study_user_attr = storage_call(JournalStorage.set_study_user_attr)
    set_study_system_attr = storage_call(JournalStorage.set_study_system_attr)
    get_study_id_from_name = storage_call(JournalStorage.get_study_id_from_name)
    get_study_name_from_id = storage_call(JournalStorage.get_study_name_from_id)
    get_study_directions = storage_call(JournalStorage.get_study_directions)
    get_study_user_attrs = storage_call(JournalStorage.get_study_user_attrs)
    get_study_system_attrs = storage_call(JournalStorage.get_study_system_attrs)
    get_all_studies = storage_call(JournalStorage.get_all_studies)
    create_new_trial = storage_call(JournalStorage.create_new_trial)
    set_trial_param = storage_call(JournalStorage.set_trial_param)
    get_trial_id_from_study_id_trial_number = storage_call(JournalStorage.get_trial_id_from_study_id_trial_number)
    get_trial_number_from_id = storage_call(JournalStorage.get_trial_number_from_id)
    get_trial_param = storage_call(JournalStorage.get_trial_param)
    set_trial_state_values = storage_call(JournalStorage.set_trial_state_values)
    set_trial_intermediate_value = storage_call(JournalStorage.set_trial_intermediate_value)
    set_trial_user_attr = storage_call(JournalStorage.set_trial_user_attr)
    set_trial_system_attr = storage_call(JournalStorage.set_trial_system_attr)
    get_trial = storage_call(JournalStorage.get_trial)
    get_all_trials = storage_call(JournalStorage.get_all_trials)
    get_n_trials = storage_call(JournalStorage.get_n_trials)
    get_best_trial = storage_call(JournalStorage.get_best_trial)
    get_trial_params = storage_call(JournalStorage.get_trial_params)
    get_trial_user_attrs = storage_call(JournalStorage.get_trial_user_attrs)
    get_trial_system_attrs = storage_call(JournalStorage.get_trial_system_attrs)
    check_trial_is_updatable = storage_call(JournalStorage.check_trial_is_updatable)


def open_storage(url: Optional[str], run_dir: Path, heartbeat: int = 10,
                 check: bool = False) -> optuna.storages.BaseStorage:
    """A journal file in the run directory by default (or at a path given as URL); any Optuna RDB URL
    otherwise, with a heartbeat so a dead worker's trial is retried by another. ``check``: read the whole
    journal first (``repair_journal``), as a command does once before it trains or reads results."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if url is None or "://" not in url:
        path = run_dir / JOURNAL_FILE if url is None else Path(url)
        if url is not None and (not url.strip() or "\x00" in url or path.is_dir()):
            raise UserError(f"--storage {url!r} is not a journal file path", "give a file path (e.g. "
                            "runs/x/optuna.journal) or a database URL such as postgresql://user:pass@host/db")
        if not path.parent.is_dir():
            raise UserError(f"--storage {url}: folder {path.parent} does not exist", "give a journal file path in an "
                            "existing folder, or a database URL such as postgresql://user:pass@host/db")
        if check and path.is_file():
            repair_journal(path)
        backend = optuna.storages.journal.JournalFileBackend(str(path))
        return HeldJournalStorage(backend)
    engine_url = "postgresql+psycopg://" + url[len("postgresql://"):] if url.startswith("postgresql://") else url
    engine = {"connect_args": {"connect_timeout": 5}} if engine_url.startswith("postgresql") else None
    for attempt in range(4):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return ResilientRDBStorage(
                    engine_url, heartbeat_interval=heartbeat, grace_period=3 * heartbeat,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=3),
                    engine_kwargs=engine)
        except ModuleNotFoundError as exc:
            raise UserError(f"--storage {url}: the driver '{exc.name}' is not installed",
                            "pip install 'mutransfer[postgres]'") from None
        except Exception as exc:  # SQLAlchemy raises many types for a bad or unreachable URL.
            text = str(exc)
            if attempt < 3 and ("already exists" in text or "UniqueViolation" in text or "duplicate key" in text):
                time.sleep(0.5 + attempt)  # another worker is creating Optuna's tables at this moment
                continue
            first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
            for secret in _passwords(url):
                first = first.replace(secret, "***")
            raise UserError(f"cannot open --storage {url}: {first[:200]}",
                            "check the URL, server and credentials") from None
    raise AssertionError("unreachable")


def repair_journal(path: Path) -> None:
    """Make a journal file safe to read and append to, under Optuna's own lock (no writer mid-record).

    A last record cut mid-write (power loss, a full disk) never took effect: it is dropped, after the whole file
    is copied to ``<journal>.damaged-<unix time>``, with a warning on stderr; the trial it belonged to is re-run
    like any unfinished trial. Without the repair Optuna would skip it, and its next append would land on the
    same line and make every later read fail. A damaged record before the last one cannot be dropped without
    losing what follows: refused in one line."""
    lock = optuna.storages.journal.JournalFileSymlinkLock(str(path))
    with held():  # the lock is not safe against an exception raised inside acquire or release
        lock.acquire()
        try:
            data = path.read_bytes()
            lines = data.split(b"\n")
            complete, tail = lines[:-1], lines[-1]
            for number, line in enumerate(complete, start=1):
                try:
                    json.loads(line)
                except ValueError:
                    raise UserError(f"journal {path} is damaged at record {number} of {len(complete)}",
                                    "restore it from a backup, or move it aside and rerun the sweep to start "
                                    "afresh (mutransfer export can rebuild the tables from an intact copy)") from None
            if tail:
                backup = path.with_name(f"{path.name}.damaged-{int(time.time())}")
                shutil.copyfile(path, backup)
                with path.open("r+b") as handle:
                    handle.truncate(len(data) - len(tail))
                print(f"warning: journal {path} ended in a record cut mid-write ({len(tail)} bytes); dropped it "
                      f"(the original is kept as {backup.name}); its trial is re-run like any unfinished one",
                      file=sys.stderr)
        finally:
            lock.release()


def _passwords(url: str) -> set[str]:
    """The password in a database URL as written and decoded (none when there is none or it is shorter than
    ``MIN_SECRET``, which would mangle the message): a driver's error text shows either as ***. The URL itself is
    always shown as user:***@host."""
    from urllib.parse import unquote, urlsplit

    try:
        raw = urlsplit(url).password or ""
    except ValueError:
        return set()
    return {text for text in (raw, unquote(raw)) if len(text) >= MIN_SECRET}


def heartbeat_of(storage: optuna.storages.BaseStorage) -> Optional[int]:
    """The storage's heartbeat interval in seconds (database storages), or None (journal files)."""
    getter = getattr(storage, "get_heartbeat_interval", None)
    return getter() if callable(getter) else None
