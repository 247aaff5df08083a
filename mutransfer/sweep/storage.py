"""Optuna storages: a journal file in the run directory (one machine), or a database URL (several
machines) with a heartbeat so that a dead worker's trial is retried by another."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Optional

import optuna

from ..errors import UserError

__all__ = ["open_storage", "heartbeat_of", "JOURNAL_FILE"]

JOURNAL_FILE = "optuna.journal"


def open_storage(url: Optional[str], run_dir: Path, heartbeat: int = 10) -> optuna.storages.BaseStorage:
    """A journal file in the run directory by default (or at a path given as URL); any Optuna RDB URL
    otherwise, with a heartbeat so a dead worker's trial is retried by another."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if url is None or "://" not in url:
        path = run_dir / JOURNAL_FILE if url is None else Path(url)
        if not path.parent.is_dir():
            raise UserError(f"--storage {url}: folder {path.parent} does not exist", "give a journal file path in an "
                            "existing folder, or a database URL such as postgresql://user:pass@host/db")
        backend = optuna.storages.journal.JournalFileBackend(str(path))
        return optuna.storages.JournalStorage(backend)
    engine_url = "postgresql+psycopg://" + url[len("postgresql://"):] if url.startswith("postgresql://") else url
    engine = {"connect_args": {"connect_timeout": 5}} if engine_url.startswith("postgresql") else None
    for attempt in range(4):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
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


def _passwords(url: str) -> set[str]:
    """The password in a database URL as written and decoded (none when there is none): error texts show
    either as ***."""
    from urllib.parse import unquote, urlsplit

    try:
        raw = urlsplit(url).password or ""
    except ValueError:
        return set()
    return {text for text in (raw, unquote(raw)) if text}


def heartbeat_of(storage: optuna.storages.BaseStorage) -> Optional[int]:
    """The storage's heartbeat interval in seconds (database storages), or None (journal files)."""
    getter = getattr(storage, "get_heartbeat_interval", None)
    return getter() if callable(getter) else None
