"""The one user-facing error type: a message that names the problem and says how to fix it."""

from __future__ import annotations

import difflib
import errno
import re
from typing import Any, Iterable, Sequence

__all__ = ["UserError", "EXIT_USAGE", "redact", "write_failure", "closest", "did_you_mean", "check_keys", "NO_SPACE"]

URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)[^@\s]*@")

EXIT_USAGE = 2
NO_SPACE = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
"""A full disk, a file-size limit, a full quota."""


class UserError(Exception):
    """Bad input from the user. The CLI prints ``message`` on one line and exits with code 2."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The message and the hint on one line, with any URL's password shown as ``***``."""
        text = " ".join(self.message.split())
        if self.hint:
            text = f"{text}; {' '.join(self.hint.split())}"
        return redact(text)


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option most like ``word`` (``difflib``'s ratio ≥ 0.6), or None when none is close."""
    matches = difflib.get_close_matches(word, list(options), n=1)
    return matches[0] if matches else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"did you mean 'adamw'? "`` for the option closest to ``word``, or ``""``: the start of a hint."""
    match = closest(word, options)
    return f"did you mean '{match}'? " if match else ""


def check_keys(raw: object, where: str, keys: Sequence[str], example: str) -> dict[str, Any]:
    """The section ``raw``; refused when it is not a mapping (``example`` shows one) or holds a key outside
    ``keys`` (the closest key named)."""
    if not isinstance(raw, dict):
        raise UserError(f"{where} must be a mapping", f"e.g. {example}")
    unknown = sorted(set(raw) - set(keys), key=str)
    if unknown:
        raise UserError(f"unknown key '{where}.{unknown[0]}'",
                        f"{did_you_mean(str(unknown[0]), keys)}use only: {', '.join(keys)}")
    return raw


def redact(text: str) -> str:
    """``text`` with every URL's password shown as ``***`` (``postgresql://user:***@host/db``)."""
    return URL_PASSWORD.sub(r"\1***@", text)


def write_failure(exc: OSError, path: object = None) -> UserError:
    """A failed write (a full disk above all) as one line naming the file; what is already on disk stays as it
    was (outputs are replaced atomically, finished trials are in the storage)."""
    where = path if path is not None else exc.filename or "a file"
    return UserError(f"cannot write {where}: {exc.strerror or exc}", "free some disk space (or raise the file-size "
                     "limit) and rerun; the previous file is unchanged and finished trials are kept")
