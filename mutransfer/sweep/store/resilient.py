"""A database storage that rides out a server restart or outage: a call that fails because the connection was
lost is retried with exponential back-off until the server answers again, or until ``patience`` runs out (one
line, exit 2; the rerun resumes). Connections are checked before use (``pool_pre_ping``), so a restart between
two calls costs nothing.

Retrying a write is safe here: Optuna's writes set a value (an attribute, a heartbeat, a state), and a
``tell`` whose first attempt did commit is recognised on the retry (the trial is already finished). A new trial
created by a commit whose acknowledgement was lost is never touched again; the worker fails it as an orphan
(``studies.reap_orphans``)."""

from __future__ import annotations

import functools
import sys
import threading
import time
from typing import Any, Callable, TypeVar

import optuna
from optuna.storages import RDBStorage

from ...errors import UserError, redact
from ..interrupts import held

__all__ = ["ResilientRDBStorage", "connection_lost", "OUTAGE_PATIENCE", "FIRST_BACKOFF", "MAX_BACKOFF"]

OUTAGE_PATIENCE = 600.0
"""Seconds a worker keeps retrying an unreachable database before it stops (the rerun resumes)."""
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 8.0

Method = TypeVar("Method", bound=Callable[..., Any])


def connection_lost(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it, as Optuna wraps driver errors in ``StorageInternalError``) is a
    lost or refused connection, which a retry can cure; False for everything else (bad data, bugs)."""
    from sqlalchemy import exc as sa

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (sa.OperationalError, sa.InterfaceError)):
            return True
        if isinstance(seen, sa.DBAPIError) and seen.connection_invalidated:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retried(method: Method) -> Method:
    """``method`` retried while the connection is lost (the outermost call only: Optuna's storage calls its
    own methods, and one retry loop per call is enough)."""

    @functools.wraps(method)
    def call(self: "ResilientRDBStorage", *args: Any, **kwargs: Any) -> Any:
        if getattr(self._calls, "depth", 0):
            return method(self, *args, **kwargs)
        self._calls.depth = 1
        try:
            return self._with_retries(method, self, *args, **kwargs)
        finally:
            self._calls.depth = 0

    return call  # type: ignore[return-value]


class ResilientRDBStorage(RDBStorage):
    """Optuna's ``RDBStorage`` whose calls survive a lost connection (see the module's description)."""

    def __init__(self, url: str, *args: Any, patience: float = OUTAGE_PATIENCE, **kwargs: Any) -> None:
        engine = dict(kwargs.pop("engine_kwargs", None) or {})
        engine.setdefault("pool_pre_ping", True)
        self.patience = patience
        self._calls = threading.local()
        super().__init__(url, *args, engine_kwargs=engine, **kwargs)

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state.pop("_calls", None)
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._calls = threading.local()

    def _with_retries(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        delay, attempt = FIRST_BACKOFF, 0
        while True:
            try:
                with held():
                    result = method(*args, **kwargs)
                if attempt:
                    print(f"warning: reconnected to the storage after {time.monotonic() - started:.0f} s",
                          file=sys.stderr, flush=True)
                return result
            except optuna.exceptions.UpdateFinishedTrialError:
                if attempt and method.__name__ == "set_trial_state_values":
                    return True  # the attempt that lost its connection had committed
                raise
            except Exception as exc:
                if not connection_lost(exc):
                    raise
                waited = time.monotonic() - started
                if waited >= self.patience:
                    raise UserError(f"lost the connection to --storage {self.url} for {waited:.0f} s "
                                    f"({_first_line(exc)})", "check the database server, then run the same "
                                    "command again to resume (finished trials are kept)") from None
                if attempt == 0:
                    print(f"warning: lost the connection to the storage ({_first_line(exc)}); retrying for up to "
                          f"{self.patience:.0f} s", file=sys.stderr, flush=True)
                time.sleep(min(delay, max(self.patience - waited, 0.0)))
                delay, attempt = min(2 * delay, MAX_BACKOFF), attempt + 1

    create_new_study = _retried(RDBStorage.create_new_study)
    delete_study = _retried(RDBStorage.delete_study)
    set_study_user_attr = _retried(RDBStorage.set_study_user_attr)
    set_study_system_attr = _retried(RDBStorage.set_study_system_attr)
    get_study_id_from_name = _retried(RDBStorage.get_study_id_from_name)
    get_study_name_from_id = _retried(RDBStorage.get_study_name_from_id)
    get_study_directions = _retried(RDBStorage.get_study_directions)
    get_study_user_attrs = _retried(RDBStorage.get_study_user_attrs)
    get_study_system_attrs = _retried(RDBStorage.get_study_system_attrs)
    get_trial_user_attrs = _retried(RDBStorage.get_trial_user_attrs)
    get_trial_system_attrs = _retried(RDBStorage.get_trial_system_attrs)
    get_all_studies = _retried(RDBStorage.get_all_studies)
    create_new_trial = _retried(RDBStorage.create_new_trial)
    _create_new_trial = _retried(RDBStorage._create_new_trial)
    set_trial_param = _retried(RDBStorage.set_trial_param)
    _set_trial_param = _retried(RDBStorage._set_trial_param)
    get_trial_param = _retried(RDBStorage.get_trial_param)
    set_trial_state_values = _retried(RDBStorage.set_trial_state_values)
    set_trial_intermediate_value = _retried(RDBStorage.set_trial_intermediate_value)
    set_trial_user_attr = _retried(RDBStorage.set_trial_user_attr)
    set_trial_system_attr = _retried(RDBStorage.set_trial_system_attr)
    get_trial_id_from_study_id_trial_number = _retried(RDBStorage.get_trial_id_from_study_id_trial_number)
    get_trial = _retried(RDBStorage.get_trial)
    get_all_trials = _retried(RDBStorage.get_all_trials)
    _get_trials = _retried(RDBStorage._get_trials)
    get_best_trial = _retried(RDBStorage.get_best_trial)
    _get_best_trial_id = _retried(RDBStorage._get_best_trial_id)
    record_heartbeat = _retried(RDBStorage.record_heartbeat)
    _get_stale_trial_ids = _retried(RDBStorage._get_stale_trial_ids)


def _first_line(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    lines = str(cause).strip().splitlines()
    return redact(lines[0][:160]) if lines else type(cause).__name__
