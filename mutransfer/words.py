"""The words the tool writes into its files and prints, as types: a verdict, a trial's status, a constant's effect
and the weight decay's.

Each is a ``Word``: a ``str`` whose text is its value wherever it goes (JSON, CSV, f-strings, ``format``, rich), on
every Python the package supports. ``(str, Enum)`` alone is not enough: ``str()`` and ``format()`` of one print
``Verdict.TRANSFERS`` on Python 3.12 where 3.10 printed the value, its hash is its name's (so a dict keyed by the
text would miss it), and ``yaml.safe_dump`` refuses a ``str`` subclass (``files.dump_yaml`` writes a word as its
text). ``tests/core/test_words.py`` writes each through every format and compares the bytes with the plain text's.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Word", "Verdict", "TrialStatus", "Effect", "DecayVerdict"]


class Word(str, Enum):
    """A word of the tool's vocabulary: equal to, hashed as, printed, formatted and shown (``repr``, as a message's
    ``{value!r}`` or rich's pretty-printer shows it) as its text; ``type(word)`` and ``word.name`` tell the member."""

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:
        return hash(self.value)


class Verdict(Word):
    """Whether a setup's optimum stays put along an axis: its slope's 90 % interval inside the margin, wholly beyond
    it, or neither (``analysis.drift``)."""

    TRANSFERS = "transfers"
    DRIFTS = "drifts"
    INCONCLUSIVE = "inconclusive"


class TrialStatus(Word):
    """How a trial ended, as trials.csv's ``status`` column writes it."""

    OK = "ok"
    DIVERGED = "diverged"
    FAILED = "failed"
    PRUNED = "pruned"
    INTERRUPTED = "interrupted"
    """Stopped by Ctrl-C or SIGTERM: its point is trained again on resume."""
    ABANDONED = "abandoned"
    """Its worker died: its point is trained again."""
    STOPPED = "stopped"
    """A training run the sweep's pruner stopped (``TrainResult``); the trial records it as ``PRUNED``."""


class Effect(Word):
    """Whether a searched constant moves the loss at its tuning width, beyond the margin (``constant_effect``)."""

    MATTERS = "matters"
    NO_EFFECT = "no effect"
    UNMEASURED = "unmeasured"


class DecayVerdict(Word):
    """Whether the best weight decay beats decay off at a point, beyond the seeds' noise (``decay_effect``). Its
    words are older than ``Effect``'s and stay as the files hold them: ``effect`` where a constant ``matters``."""

    EFFECT = "effect"
    NO_EFFECT = "no effect"
    UNMEASURED = "unmeasured"
