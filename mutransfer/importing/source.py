"""A table of finished runs read into a DataFrame: CSV or TSV (gzipped too), JSON lines, Parquet (the ``parquet``
extra), or an Optuna study in any storage (its params and user attributes as columns). Each source is recorded by
what identifies its content: a file by its path, size and SHA-256; a study by its storage, name, trial count and
the digest of its table. A file's table also tells a NaN the file wrote (the text ``nan``, a JSON ``"NaN"``, a
Parquet float NaN) from an empty cell or a null, which pandas reads as the same NaN: see ``NAN_VALUES``."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..errors import UserError, redact
from ..files import file_sha256

__all__ = ["Source", "read_source", "FORMATS", "study_table", "NAN_VALUES", "is_nan_text"]

FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
           ".parquet": "parquet", ".pq": "parquet"}
"""File suffixes (before a ``.gz``) and the reader each one takes."""
SNIFF_BYTES = 8192
TABLE_HINT = "give a CSV/TSV (.csv, .tsv, optionally .gz), JSON lines (.jsonl) or Parquet (.parquet) table"
NAN_VALUES = "nan_values"
"""The key of a file's ``DataFrame.attrs`` that lists, per float column, the rows (0-based, as read) whose NaN the
file itself holds (the text ``nan``, a JSON ``"NaN"`` or ``NaN``, a Parquet float NaN); every other NaN of the
column was an empty cell or a null. Columns without such a NaN are not listed."""


@dataclass(frozen=True)
class Source:
    """Where an import's rows came from, as ``config.yaml`` records it (a changed digest is a changed source)."""

    kind: str
    path: str
    size: int
    sha256: str
    study: Optional[str] = None

    def as_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "path": self.path, "size": self.size, "sha256": self.sha256}
        return {**out, "study": self.study} if self.study is not None else out


def _format(path: Path) -> tuple[str, bool]:
    suffixes = [s.lower() for s in path.suffixes]
    gzipped = bool(suffixes) and suffixes[-1] == ".gz"
    suffix = suffixes[-2] if gzipped and len(suffixes) > 1 else (suffixes[-1] if suffixes and not gzipped else "")
    return FORMATS.get(suffix, "csv"), gzipped


def _check_text(path: Path, gzipped: bool) -> None:
    """Refuse a file whose first bytes are not text (a binary file given as a table)."""
    try:
        with (gzip.open(path, "rb") if gzipped else path.open("rb")) as handle:
            head = handle.read(SNIFF_BYTES)
    except (OSError, EOFError) as exc:
        raise UserError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", TABLE_HINT) from None
    if b"\x00" in head:
        raise UserError(f"{path} is a binary file, not a text table", TABLE_HINT)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte character cut at the sniff's end is fine
            raise UserError(f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)", TABLE_HINT) from None


def is_nan_text(value: object) -> bool:
    """Whether ``value`` is a NaN written as a value: text spelling one (``nan``, ``NaN``, ``-nan``) or a float NaN."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        try:
            return math.isnan(float(value.strip()))
        except ValueError:
            return False
    return False


def _nan_columns(table: pd.DataFrame) -> list[str]:
    """The float columns (named once, by text) holding a NaN: the only ones whose NaNs may be of either kind."""
    once = table.columns[~table.columns.duplicated()]
    return [c for c in once if isinstance(c, str) and pd.api.types.is_float_dtype(table[c].dtype)
            and bool(table[c].isna().any())]


def _csv_nan_flags(path: Path, kind: str, gzipped: bool, columns: list[str]) -> dict[str, np.ndarray]:
    """Per column, the cells whose text spells a NaN: the columns read again as raw text, lines as before."""
    raw = pd.read_csv(path, sep="\t" if kind == "tsv" else ",", compression="gzip" if gzipped else None,
                      usecols=columns, dtype=str, keep_default_na=False, low_memory=False)
    return {c: raw[c].map(is_nan_text).to_numpy(dtype=bool) for c in columns}


def _jsonl_nan_flags(path: Path, gzipped: bool, columns: list[str]) -> dict[str, np.ndarray]:
    """Per column, the records whose value is a NaN (``"NaN"``, ``"nan"`` or a bare ``NaN``), not a null or absent;
    none when a line is not one JSON object."""
    with (gzip.open(path, "rt", encoding="utf-8") if gzipped else path.open(encoding="utf-8")) as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    if not all(isinstance(r, dict) for r in records):
        return {}
    return {c: np.array([is_nan_text(r.get(c)) for r in records], dtype=bool) for c in columns}


def _parquet_nan_flags(path: Path, columns: list[str]) -> dict[str, np.ndarray]:
    """Per column, the float NaNs Parquet holds as values (a null is not one)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    data = pq.read_table(path, columns=columns)
    return {c: pc.fill_null(pc.is_nan(data[c]), False).to_numpy(zero_copy_only=False).astype(bool) for c in columns}


def _mark_nan_values(table: pd.DataFrame, path: Path, kind: str, gzipped: bool) -> pd.DataFrame:
    """``table`` with ``attrs[NAN_VALUES]`` set where the file holds NaNs as values; left unmarked (every NaN read
    as an empty cell) when the file cannot be read again the same way."""
    columns = _nan_columns(table)
    if not columns:
        return table
    try:
        if kind == "parquet":
            flags = _parquet_nan_flags(path, columns)
        elif kind == "jsonl":
            flags = _jsonl_nan_flags(path, gzipped, columns)
        else:
            flags = _csv_nan_flags(path, kind, gzipped, columns)
    except (OSError, ValueError, KeyError, TypeError, NotImplementedError, ImportError):
        return table
    marked = {c: tuple(int(i) for i in np.flatnonzero(f)) for c, f in flags.items() if len(f) == len(table) and f.any()}
    if marked:
        table.attrs[NAN_VALUES] = marked
    return table


def _read_file(path: Path) -> pd.DataFrame:
    kind, gzipped = _format(path)
    return _mark_nan_values(_read_table(path, kind, gzipped), path, kind, gzipped)


def _read_table(path: Path, kind: str, gzipped: bool) -> pd.DataFrame:
    """The file's table as pandas reads it (an empty cell, a null and the text ``nan`` all NaN)."""
    if kind == "parquet":
        try:
            return pd.read_parquet(path)
        except ImportError:
            raise UserError(f"{path}: reading Parquet needs pyarrow", "pip install 'mutransfer[parquet]'") from None
        except (OSError, ValueError) as exc:
            raise UserError(f"{path} is not a readable Parquet file ({str(exc).splitlines()[0][:120]})",
                            TABLE_HINT) from None
    _check_text(path, gzipped)
    try:
        if kind == "jsonl":
            return pd.read_json(path, lines=True, compression="gzip" if gzipped else None)
        return pd.read_csv(path, sep="\t" if kind == "tsv" else ",", compression="gzip" if gzipped else None,
                           low_memory=False)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty", TABLE_HINT) from None
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} is not a readable {kind.upper()} table ({str(exc).splitlines()[0][:120]})",
                        TABLE_HINT) from None


def study_table(study: Any) -> pd.DataFrame:
    """An Optuna study's finished trials as a table: ``number``, ``value`` (or ``values_<i>``), ``state``, and
    each param and user attribute under its own name (Optuna's ``params_`` / ``user_attrs_`` prefixes dropped
    where the name is free)."""
    table = study.trials_dataframe(attrs=("number", "value", "state", "params", "user_attrs"))
    renamed: dict[str, str] = {}
    for column in table.columns:
        for prefix in ("params_", "user_attrs_"):
            name = column[len(prefix):]
            if column.startswith(prefix) and name not in table.columns and name not in renamed.values():
                renamed[column] = name
    return table.rename(columns=renamed)


def _read_study(storage: str, name: str) -> tuple[pd.DataFrame, Source]:
    import optuna

    from ..sweep.store.storage import open_storage

    if "://" not in storage and not Path(storage).is_file():
        raise UserError(f"--storage {storage} is not a file", "give an Optuna journal file or a database URL")
    backend = open_storage(storage, Path("."))
    names = [s.study_name for s in optuna.get_all_study_summaries(backend)]
    if name not in names:
        from ..errors import did_you_mean

        raise UserError(f"--study {name} is not in {redact(storage)}",
                        f"{did_you_mean(name, names)}its studies: {', '.join(names[:10]) or '(none)'}")
    table = study_table(optuna.load_study(study_name=name, storage=backend))
    text = table.to_csv(index=False).encode()
    return table, Source("optuna", redact(storage), len(table), hashlib.sha256(text).hexdigest(), name)


def read_source(path: Optional[Path], storage: Optional[str], study: Optional[str]) -> tuple[pd.DataFrame, Source]:
    """The table of SOURCE, or of the Optuna study ``--storage URL --study NAME``; one line when unreadable."""
    if storage is not None or study is not None:
        if path is not None or storage is None or study is None:
            raise UserError("give either a table file or both --storage and --study",
                            "e.g. mutransfer import runs.csv ... or mutransfer import --storage sweep.journal "
                            "--study lr_sweep ...")
        return _read_study(storage, study)
    if path is None:
        raise UserError("no table given", "e.g. mutransfer import runs.csv --lr lr --loss loss --axis width --out "
                        "runs/imported")
    if not path.exists():
        raise UserError(f"{path} does not exist", TABLE_HINT)
    if path.is_dir():
        raise UserError(f"{path} is a directory", TABLE_HINT)
    table = _read_file(path)
    return table, Source(_format(path)[0], str(path), path.stat().st_size, file_sha256(path))
