"""The one user-facing error type: a message that names the problem and says how to fix it."""

from __future__ import annotations

import re

__all__ = ["UserError", "EXIT_USAGE", "redact"]

URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)[^@\s]*@")

EXIT_USAGE = 2


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


def redact(text: str) -> str:
    """``text`` with every URL's password shown as ``***`` (``postgresql://user:***@host/db``)."""
    return URL_PASSWORD.sub(r"\1***@", text)
