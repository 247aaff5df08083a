"""What a run directory holds: every output file's name and table columns, and how files are written
(atomically: temp file + rename, so a reader sees the old file or the new one, never half of one)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

from . import __version__
from .errors import UserError, write_failure
from .words import Word

__all__ = [
    "file_sha256",
    "CONFIG_FILE",
    "METRICS_FILE",
    "RESULT_FILE",
    "METRICS_COLUMNS",
    "TRIALS_FILE",
    "CURVES_FILE",
    "SUMMARY_FILE",
    "JOURNAL_FILE",
    "VERIFY_FILE",
    "VERIFY_REPORT",
    "VERIFY_VERSION",
    "VERIFY_VERSIONS",
    "COMPARE_REPORT",
    "COMPARE_TABLE",
    "COMPARE_PLOT",
    "CURVE_COLUMNS",
    "TRANSFER_PLOT",
    "DRIFT_PLOT",
    "BATCH_PLOT",
    "transfer_plot",
    "key_plot",
    "CURVES_PLOT",
    "VERIFY_PLOT",
    "COORD_CHECK_FILES",
    "transfer_file",
    "YAML_DIGITS",
    "STATISTIC_DIGITS",
    "at_statistic_precision",
    "remove_partial_outputs",
    "PARTIAL_TAG",
    "atomic_write_text",
    "atomic_path",
    "read_user_text",
    "load_yaml",
    "dump_yaml",
    "write_json",
    "write_csv",
    "new_run_dir",
    "claim_run_dir",
    "VERSION_KEY",
    "versioned",
    "first_difference",
    "latest_run",
    "TRIALS_DIR",
    "TRIAL_FILE",
    "PROGRESS_FILE",
    "PLAN_FILE",
    "STDOUT_LOG",
    "STDERR_LOG",
    "TRIAL_DIR_ENV",
]

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.csv"
RESULT_FILE = "result.json"
"""A run's result: the built-in ``train`` command's, and what a user's trainer writes for a trial."""
TRIALS_DIR = "trials"
"""Under a sweep's run directory: one folder per trial a user's trainer runs (``trainer`` in the spec)."""
TRIAL_FILE = "trial.json"
"""In a trial's folder: the trial's values (learning rate, width, seed, ...) for ``mutransfer.trial()``."""
PROGRESS_FILE = "progress.jsonl"
"""In a trial's folder: one JSON line per evaluation ``mutransfer.report`` records (step, val_loss, ...)."""
PLAN_FILE = "plan.yaml"
"""In a trial's folder: the per-parameter plan at the trial's width (a ``model.factory`` spec)."""
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
TRIAL_DIR_ENV = "MUTRANSFER_TRIAL_DIR"
"""The environment variable that tells a user's trainer its trial folder."""
METRICS_COLUMNS = ("step", "train_loss", "lr", "tokens", "seconds")

TRIALS_FILE = "trials.csv"
CURVES_FILE = "curves.csv"
SUMMARY_FILE = "summary.json"
JOURNAL_FILE = "optuna.journal"
"""A sweep's Optuna journal in its run directory (the default storage)."""
VERIFY_FILE = "verify.csv"
VERIFY_REPORT = "verify.json"
VERIFY_VERSION = 2
"""verify.json's layout: each target's ``measured`` optimum under the names summary.json's points use (``x_star``)."""
VERIFY_VERSIONS = (1, VERIFY_VERSION)
"""The layouts ``plot`` reads (1: ``log2_lr_star``)."""
COMPARE_REPORT = "compare.json"
COMPARE_TABLE = "compare.md"
COMPARE_PLOT = "compare.png"
CURVE_COLUMNS = ["setup", "width", "seed", "search_key", "x", "trial", "step", "train_loss", "val_loss"]

TRANSFER_PLOT = "transfer.png"
DRIFT_PLOT = "lr_drift.png"
BATCH_PLOT = "batch.png"


def transfer_plot(axis: str) -> str:
    """The loss-vs-LR figure of one axis: transfer.png for width, transfer_<axis>.png for depth and steps."""
    return TRANSFER_PLOT if axis == "width" else f"transfer_{axis}.png"

def key_plot(key: str, kind: str = "") -> str:
    """The figures of another searched key: ``weight_decay.png`` (loss against it per width) and
    ``weight_decay_drift.png`` (its optimum against each swept axis); a per-role constant's are named after its
    kind and role (``lr_mult_readout.png``)."""
    parts = key.split(".")
    name = "_".join(parts[1:]) if len(parts) == 3 else parts[-1]
    return f"{name}{'_' + kind if kind else ''}.png"


CURVES_PLOT = "curves.png"
VERIFY_PLOT = "verify.png"

COORD_CHECK_FILES = {"table": "coord_check.csv", "summary": "coord_check.json", "plot": "coord_check.png"}


PARTIAL_TAG = "partial"
"""The name part that marks an output made from an unfinished sweep (``transfer_w4096.partial.yaml``)."""


def transfer_file(width: int, fmt: str, partial: bool = False) -> str:
    """The default name of a transfer file: ``transfer_w<width>.yaml`` (or ``.json``), ``.partial`` before the
    suffix when made from an unfinished sweep."""
    return f"transfer_w{width}{'.' + PARTIAL_TAG if partial else ''}.{'json' if fmt == 'json' else 'yaml'}"


def remove_partial_outputs(run_dir: Path) -> list[Path]:
    """Delete the files in ``run_dir`` made from it while its sweep was unfinished (``*.partial.*``), once it is
    finished, so none is taken for the finished run's answer. Returns what it removed."""
    removed = sorted(p for p in run_dir.glob(f"*.{PARTIAL_TAG}.*") if p.is_file())
    for path in removed:
        path.unlink()
    return removed


YAML_DIGITS = 12
"""Significant digits at which a transfer file's computed sections are digested (``transfer.target``), so a
digest does not hang on arithmetic noise past them."""


STATISTIC_DIGITS = 4
"""Significant digits a measured statistic (a slope, its interval, an asymmetry) keeps in a file a person reads:
its seed noise is in the second digit, so ``1.3093333199837622`` is written ``1.309``."""


def at_statistic_precision(data: Any) -> Any:
    """``data`` with every float cut to ``STATISTIC_DIGITS`` significant digits (dicts and lists walked; NaN and
    infinities kept). For statistics only: a config value or a plan keeps every digit."""
    if isinstance(data, float) and math.isfinite(data):
        return float(f"{data:.{STATISTIC_DIGITS}g}")
    if isinstance(data, dict):
        return {key: at_statistic_precision(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [at_statistic_precision(value) for value in data]
    return data


def dump_yaml(data: Any) -> str:
    """YAML a person reads: Unicode kept as written (``±``, ``σ``); floats as their shortest exact repr, read
    back as floats under YAML 1.1 too (PyYAML reads ``1e-08`` as a string); a ``Word`` as its text."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_float(dumper: yaml.SafeDumper, value: float) -> Any:
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        if not math.isfinite(value):
            return dumper.represent_float(value)
        return dumper.represent_scalar("tag:yaml.org,2002:float", text)

    def represent_word(dumper: yaml.SafeDumper, value: Word) -> Any:
        return dumper.represent_str(value.value)

    Dumper.add_representer(float, represent_float)
    Dumper.add_multi_representer(Word, represent_word)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file and a rename: readers see the old file or the new one. A full
    disk (or any write error) leaves the old file as it was and ends in one line."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path next to ``path`` to write; renamed over ``path`` when the block succeeds, removed when it
    fails. An OSError (no space, a file-size limit, no permission) becomes one line naming the file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
        os.close(fd)
        os.chmod(name, 0o644)  # mkstemp makes the file private; outputs are meant to be shared like any other file
    except OSError as exc:
        raise write_failure(exc, path) from None
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise write_failure(exc, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def write_json(path: Path, obj: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, sort_keys=False) + "\n")


def write_csv(path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def new_run_dir(out: Optional[Path], kind: str, root: Path = Path("runs")) -> Path:
    """``out`` if given, else ``runs/<kind>-<timestamp>``; refuses a path that is an existing file."""
    path = out if out is not None else root / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and not path.is_dir():
        raise UserError(f"--out {path} is an existing file", "give a directory path")
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in 4 MiB blocks (a corpus, an imported table)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def read_user_text(path: Path, what: str) -> str:
    """A file the user gave or a run directory holds, as UTF-8 text; one line naming it when it is not."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} {path} is not UTF-8 text (byte {exc.start} cannot be decoded)",
                        f"give a {what} saved as UTF-8 text") from None
    except IsADirectoryError:
        raise UserError(f"{what} {path} is a directory", f"give the path of a {what}") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}", "check the path and its permissions") from None


def load_yaml(path: Path, what: str) -> Any:
    """A YAML (or JSON) file's document, loaded safely (no code runs, aliases and nesting bounded: ``yamldoc``);
    one line naming the file and the line of a syntax error or the bound it passes. A ``.json`` file is read as
    JSON (YAML 1.1 would read its ``1e-08`` as a string)."""
    import yaml

    from .yamldoc import YAMLBoundError, parse_yaml

    text = read_user_text(path, what)
    if path.suffix == ".json":
        return _load_json(text, path, what)
    try:
        return parse_yaml(text)
    except YAMLBoundError as exc:
        raise UserError(f"{what} {path}: {exc.problem}", exc.fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise UserError(f"{what} {path} is not valid YAML{where}", "fix the syntax, or give a file written by "
                        "mutransfer") from None


def _load_json(text: str, path: Path, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{what} {path} is not valid JSON (line {exc.lineno})",
                        "fix the syntax, or give a file written by mutransfer") from None
    except RecursionError:
        raise UserError(f"{what} {path} nests too deep to read", "give a file written by mutransfer") from None


VERSION_KEY = "mutransfer_version"
"""The key of a run directory's record (config.yaml, train's result.json) that names the mutransfer version that
wrote it; never part of a fingerprint, so a newer version resumes a run an older one started."""


def versioned(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with ``VERSION_KEY`` first: the version of mutransfer writing it (``mutransfer.__version__``)."""
    return {VERSION_KEY: __version__, **{key: value for key, value in record.items() if key != VERSION_KEY}}


def claim_run_dir(run_dir: Path, record: Mapping[str, Any]) -> None:
    """Write the sweep's ``record`` (``versioned``) as the run directory's config.yaml, or refuse when the directory
    already holds a different sweep. A directory that holds the same sweep (its ``fingerprint``) is resumed and its
    config.yaml kept as written: it names the version that started the run (none when an earlier mutransfer, one
    that did not record it, started it), and a newer version resumes it."""
    import yaml

    from .yamldoc import parse_yaml

    path, text = run_dir / CONFIG_FILE, dump_yaml(versioned(record))
    if path.exists():
        try:
            existing = parse_yaml(path.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError):
            existing = {}
        if not isinstance(existing, dict) or existing.get("kind") != "sweep":
            raise UserError(f"{run_dir} holds a run that is not a sweep (its config.yaml has no sweep record)",
                            "use a new --out directory")
        if existing.get("fingerprint") != record["fingerprint"]:
            change = first_difference(existing, parse_yaml(text))
            raise UserError(f"{run_dir} holds a different sweep: {change or 'its config.yaml differs'}",
                            "use a new --out directory, or rerun with the same spec and overrides to resume")
        return
    atomic_write_text(path, text)


ABSENT = "(absent)"
"""How ``first_difference`` shows a key or list element that one side does not have."""


def first_difference(old: Any, new: Any, where: str = "") -> Optional[str]:
    """The first field (in ``new``'s order, then ``old``'s) whose value differs, as ``spec.widths: [32, 64] →
    [32, 64, 128]``: short lists whole, long ones element by element; None when equal. The top-level fingerprint
    is skipped (it differs whenever anything does), and so is the version that wrote a record (``VERSION_KEY``)."""
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in [*new, *(k for k in old if k not in new)] if where or k not in ("fingerprint", VERSION_KEY)]
        pairs = [(f"{where}.{k}" if where else str(k), old.get(k, ABSENT), new.get(k, ABSENT)) for k in keys]
    elif isinstance(old, list) and isinstance(new, list) and len(_shown(old, None) + _shown(new, None)) > 80:
        pairs = [(f"{where}[{i}]", old[i] if i < len(old) else ABSENT, new[i] if i < len(new) else ABSENT)
                 for i in range(max(len(old), len(new)))]
    else:
        return f"{where}: {_shown(old)} → {_shown(new)}"
    return next(filter(None, (first_difference(a, b, name) for name, a, b in pairs)), None)


def _shown(value: Any, limit: Optional[int] = 60) -> str:
    text = value if value is ABSENT else json.dumps(value, default=str, ensure_ascii=False)
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def latest_run(root: Path = Path("runs")) -> Path:
    """The most recently modified sweep directory under ``runs/``."""
    candidates = [p.parent for p in root.glob(f"*/{TRIALS_FILE}")] if root.is_dir() else []
    if not candidates:
        raise UserError(f"no sweep found under {root}/", "run `mutransfer sweep` first or pass --from RUN_DIR")
    return max(candidates, key=lambda p: (p / TRIALS_FILE).stat().st_mtime)
