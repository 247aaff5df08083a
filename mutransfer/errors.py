"""The one user-facing error type: a message that names the problem and says how to fix it."""

from __future__ import annotations

__all__ = ["UserError", "EXIT_USAGE"]

EXIT_USAGE = 2


class UserError(Exception):
    """Bad input from the user. The CLI prints ``message`` on one line and exits with code 2."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        text = " ".join(self.message.split())
        if self.hint:
            text = f"{text}; {' '.join(self.hint.split())}"
        return text
