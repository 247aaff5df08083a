"""Optuna bookkeeping for a sweep: storage, study names, the grid queue, worker liveness, tables.

One study per (setup, searched key, width, seed), named ``<prefix>.<setup>.<key>.w<width>.s<seed>``,
so every machine pointing at one storage with the same prefix shares the same studies. Grid points are
enqueued (tagged ``grid``); the lowest-numbered live trial of a point is its owner, so a point that two
workers or two machines enqueued is still trained once.
"""

from __future__ import annotations

import math
import os
import socket
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

import optuna
from optuna.trial import FrozenTrial, TrialState

from .errors import UserError
from .spec import SearchSpec, SweepSpec

__all__ = ["StudyKey", "open_storage", "study_keys", "load_study", "enqueue_missing", "reap_abandoned",
           "owner_of", "process_identity", "is_bookkeeping", "prefixed_studies", "heartbeat_of", "JOURNAL_FILE", "LIVE", "RECORD_ATTR"]

JOURNAL_FILE = "optuna.journal"
RECORD_ATTR = "mutransfer_record"
LIVE = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
BOOKKEEPING = ("duplicate", "spurious")


@dataclass(frozen=True)
class StudyKey:
    setup: str
    search: SearchSpec
    width: int
    seed: int

    def name(self, prefix: str) -> str:
        return f"{prefix}.{self.setup}.{self.search.column}.w{self.width}.s{self.seed}"


def study_keys(spec: SweepSpec) -> list[StudyKey]:
    return [StudyKey(setup.label, search, width, seed)
            for setup in spec.setups for search in setup.search for width in spec.widths for seed in spec.seeds]


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
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    for attempt in range(4):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=heartbeat, grace_period=3 * heartbeat,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=3),
                    engine_kwargs={"connect_args": {"connect_timeout": 5}} if url.startswith("postgresql") else None)
        except ModuleNotFoundError as exc:
            raise UserError(f"--storage {url}: the driver '{exc.name}' is not installed",
                            "pip install 'mutransfer[postgres]'") from None
        except Exception as exc:  # SQLAlchemy raises many types for a bad or unreachable URL.
            text = str(exc)
            if attempt < 3 and ("already exists" in text or "UniqueViolation" in text or "duplicate key" in text):
                time.sleep(0.5 + attempt)  # another worker is creating Optuna's tables at this moment
                continue
            first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
            raise UserError(f"cannot open --storage {url}: {first[:200]}",
                            "check the URL, server and credentials") from None
    raise AssertionError("unreachable")


def load_study(storage: optuna.storages.BaseStorage, key: StudyKey, prefix: str) -> optuna.Study:
    return optuna.create_study(study_name=key.name(prefix), storage=storage, load_if_exists=True,
                               direction="minimize", sampler=_sampler(key.search, key.seed),
                               pruner=_pruner(key.search))


def _sampler(search: SearchSpec, seed: int) -> optuna.samplers.BaseSampler:
    if search.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(5, search.budget()))
    if search.sampler == "gp":
        try:
            import scipy  # noqa: F401
        except ModuleNotFoundError:
            raise UserError("search.sampler=gp needs scipy", "pip install 'mutransfer[gp]'") from None
        return optuna.samplers.GPSampler(seed=seed)
    return optuna.samplers.RandomSampler(seed=seed)


def _pruner(search: SearchSpec) -> optuna.pruners.BasePruner:
    if search.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0)
    if search.pruner == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()


def process_identity() -> dict[str, Any]:
    """Host, pid and the process start time (so a recycled pid is not mistaken for a live worker)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "proc_start": _start_time(os.getpid())}


def _stat(pid: int) -> Optional[list[str]]:
    """The fields of /proc/<pid>/stat after the command name (state first), or None where there is no /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _start_time(pid: int) -> Optional[str]:
    fields = _stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def _alive(attrs: dict[str, Any]) -> bool:
    pid = attrs.get("pid")
    if attrs.get("host") != socket.gethostname() or not isinstance(pid, int):
        return True  # another machine's trial: its own heartbeat (RDB storage) decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):
        return False  # a killed worker nobody has reaped yet
    recorded = attrs.get("proc_start")
    return recorded is None or _start_time(pid) in (None, recorded)


def is_bookkeeping(trial: FrozenTrial) -> bool:
    return any(trial.user_attrs.get(flag) for flag in BOOKKEEPING)


def reap_abandoned(study: optuna.Study) -> int:
    """Mark RUNNING trials of dead local workers FAIL (status 'abandoned') so their points run again."""
    reaped = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if "pid" in trial.user_attrs and not _alive(trial.user_attrs):
            study._storage.set_trial_user_attr(trial._trial_id, "status", "abandoned")
            study._storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)
            reaped += 1
    return reaped


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, abs_tol=1e-9)


def _points(trials: Iterable[FrozenTrial], column: str) -> list[float]:
    return [t.params.get(column, t.system_attrs.get("fixed_params", {}).get(column)) for t in trials]


def enqueue_missing(study: optuna.Study, column: str, points: Iterable[float]) -> int:
    """Enqueue every grid point that has no live trial (first run, resume, or a re-run of failed points)."""
    live = [t for t in study.get_trials(deepcopy=False, states=LIVE) if not is_bookkeeping(t)]
    have = _points(live, column)
    added = 0
    for x in points:
        if not any(_same(x, h) for h in have):
            study.enqueue_trial({column: x}, user_attrs={"grid": True})
            added += 1
    return added


def owner_of(study: optuna.Study, number: int, column: str, x: float) -> int:
    """The number of the trial that owns point ``x``: the lowest-numbered live, non-bookkeeping trial."""
    live = [t for t in study.get_trials(deepcopy=False, states=LIVE) if not is_bookkeeping(t)]
    owners = [t.number for t, point in zip(live, _points(live, column)) if _same(point, x)]
    return min(owners, default=number)


def prefixed_studies(storage: optuna.storages.BaseStorage, prefix: str) -> list[str]:
    return sorted(name for name in optuna.get_all_study_names(storage) if name.startswith(f"{prefix}."))


def heartbeat_of(storage: optuna.storages.BaseStorage) -> Optional[int]:
    """The storage's heartbeat interval in seconds (database storages), or None (journal files)."""
    getter = getattr(storage, "get_heartbeat_interval", None)
    return getter() if callable(getter) else None
