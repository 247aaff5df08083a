"""What every command prints with: a rich console sized for a terminal or a log, and number formats."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any, Optional

from ..defaults import BATCH_TOLERANCE, INTERVAL_LEVEL, INTERVAL_LEVELS, option_text

if TYPE_CHECKING:  # the commands import these late (start-up: `mutransfer --help` loads no rich, torch or pandas)
    from pathlib import Path

    from rich.console import Console

    from ..analysis.thresholds import Thresholds
    from ..schema import Config
    from ..sweep.store.completion import SweepStatus

__all__ = ["console", "format_number", "positive_number", "positive_integer", "rank_count", "warn_model", "condition_changes",
           "warn_conditions", "CONDITION_KEYS", "unfinished_run", "interval_level", "LEVEL_OPTION"]

CONDITION_KEYS = ("train.steps", "train.batch_size", "train.seq_len", "model.depth", "data.kind", "data.path",
                  "data.vocab_size", "data.val_fraction")
"""What a learning rate was chosen at besides width: horizon, batch, depth and data."""
LEVEL_OPTION = "--level"
"""The option that sets the level, in percent, of every interval a sweep's tables print."""


def console(log_width: int = 140, stderr: bool = False) -> Console:
    """A rich console: the terminal's width on a TTY, ``log_width`` columns otherwise (logs, CI)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(width=None if stream.isatty() else log_width, stderr=stderr)


def format_number(value: float) -> str:
    """``2^-5`` for exact powers of two beyond ±3, else 4 significant digits."""
    if value == 0:
        return "0"
    exponent = math.log2(abs(value))
    if abs(exponent - round(exponent)) < 1e-9 and abs(exponent) >= 3:
        return f"2^{int(round(exponent))}"
    return f"{value:.4g}"


def positive_number(option: str, text: str, example: str) -> float:
    """A numeric option given as text: a finite number > 0, else one line that names the option."""
    from ..errors import UserError

    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{option} {text} is not a number", f"give a positive number, e.g. {option} {example}") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{option} {text} must be a positive finite number", f"e.g. {option} {example}")
    return value


def effect_margin(text: str) -> float:
    """``--effect-margin``: nats, ≥ 0 and below 1 (a gain of a nat is no margin but a different model)."""
    from ..errors import UserError

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < 1:
        raise UserError(f"--effect-margin {text} must be a number of nats in [0, 1)", "e.g. --effect-margin 0.005")
    return value


def interval_level(text: str) -> int:
    """``--level``: the percent of the tables' intervals, one of ``INTERVAL_LEVELS``."""
    from ..errors import UserError

    given = text.strip().removesuffix("%").strip()
    levels = {option_text(level): level for level in INTERVAL_LEVELS}
    if given not in levels:
        raise UserError(f"{LEVEL_OPTION} {text} is not a level the tables print",
                        f"use {' or '.join(f'{LEVEL_OPTION} {level}' for level in levels)} "
                        f"(default {option_text(INTERVAL_LEVEL)})")
    return levels[given]


def batch_tolerance(text: str) -> Thresholds:
    """``--batch-tolerance``: a fraction of the best loss in (0, 0.5], as the analysis thresholds that carry it."""
    from ..analysis.thresholds import Thresholds
    from ..errors import UserError

    value = positive_number("--batch-tolerance", text, option_text(BATCH_TOLERANCE))
    if value > 0.5:
        raise UserError(f"--batch-tolerance {text} is a fraction of the best loss, at most 0.5",
                        "e.g. --batch-tolerance 0.01 for 1 %")
    return Thresholds(batch_tolerance=value)


def positive_integer(option: str, text: str, example: str) -> int:
    """An integer option given as text (``--depth``): a whole number > 0, else one line that names the option."""
    from ..errors import UserError

    value = positive_number(option, text, example)
    if value != int(value):
        raise UserError(f"{option} {text} is not a whole number", f"give a positive integer, e.g. {option} {example}")
    return int(value)


def rank_count(text: Optional[str]) -> Optional[int]:
    """``--nproc``: None when not given, else a positive whole number of ranks (``--nproc 0`` is refused)."""
    if text is None:
        return None
    from .parallel_checks import check_nproc
    from ..errors import UserError

    try:
        return check_nproc(int(text))
    except ValueError:
        raise UserError(f"--nproc {text} is not a whole number", "give a positive number of ranks, e.g. --nproc 2") \
            from None


def warn_model(cfg: Config) -> None:
    """Warnings about the configured model on stderr: a Hugging Face model whose head_dim grows with width."""
    if cfg.model.hf is None:
        return
    from ..hf.build import attention_scale_warning

    warning = attention_scale_warning(cfg.model, cfg.parametrization.base_width)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)


def condition_changes(before: Config, after: Config) -> list[str]:
    """``key: old → new`` for each of ``CONDITION_KEYS`` where config ``after`` differs from ``before``."""
    def value(cfg: Config, key: str) -> Any:
        group, name = key.split(".")
        return getattr(getattr(cfg, group), name)

    return [f"{key}: {value(before, key)} → {value(after, key)}" for key in CONDITION_KEYS
            if value(before, key) != value(after, key)]


def warn_conditions(changes: list[str], against: str, fix: str = "") -> None:
    """One warning on stderr when a run's horizon, batch, depth or data differ from those its learning rate was
    chosen at (``against`` names that source), e.g. ``train --config`` and ``verify``."""
    if changes:
        print(f"warning: {', '.join(dict.fromkeys(changes))} against {against}; learning rates are not known to "
              f"transfer across training horizon, batch size, depth or data without further evidence{fix}",
              file=sys.stderr)


def unfinished_run(run_dir: Path, partial: bool, command: str) -> Optional[SweepStatus]:
    """The status of an unfinished sweep that ``command`` may answer from (``--partial``), None for a finished one
    (or one whose summary predates the status). Without ``--partial`` an unfinished sweep is refused with one
    line naming what is missing and how to finish it, except a sweep still training: its provisional answer
    (``summary.json`` marked ``provisional``) is answered from with a warning, every output marked."""
    import json
    from dataclasses import replace
    from pathlib import Path

    from ..errors import UserError
    from ..files import SUMMARY_FILE
    from ..sweep.store.completion import SweepStatus

    from ..analysis.result import Basis

    path = Path(run_dir) / SUMMARY_FILE
    try:
        data = json.loads(path.read_text())
        status = SweepStatus.from_dict(data.get("status"))
        basis = Basis.from_json(data["basis"]) if data.get("provisional") else None
    except (OSError, ValueError, AttributeError, TypeError, KeyError, OverflowError):
        return None  # a damaged summary: the analysis reads trials.csv and says what is wrong with it
    if status is None or status.complete:
        return None
    if basis is not None:
        print(f"warning: {command}: sweep {run_dir} is still training; this answers from its provisional answer "
              f"({basis.line()}), and every output is marked partial and provisional", file=sys.stderr)
        return replace(status, provisional=basis)
    if not partial:
        finish = f"finish it with `{status.resume}`" if status.resume else "run its sweep again to finish it"
        raise UserError(f"{command}: sweep {run_dir} is {status.line()}",
                        f"{finish}, or pass --partial to answer from what it has (every output marked partial)")
    print(f"warning: {command} --partial: sweep {run_dir} is {status.line()}; every output is marked partial",
          file=sys.stderr)
    return status
