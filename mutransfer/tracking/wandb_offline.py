"""Reading back what W&B wrote offline (``WANDB_MODE=offline``). The library has no reader for its offline runs
(``wandb sync`` only uploads them), so this reads each run's transaction log itself: LevelDB's log framing (32 KiB
blocks, records cut into FULL / FIRST / MIDDLE / LAST pieces behind a 7-byte header) after W&B's own 7-byte file
header, each record one of the library's protobuf ``Record`` messages (``wandb.proto.wandb_internal_pb2``)."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from ..errors import UserError

__all__ = ["OfflineRun", "read_offline_runs", "records"]

FILE_HEADER = 7
"""``:W&B``, a two-byte magic and a version byte."""
BLOCK = 32768
PIECE_HEADER = 7
"""CRC32C (4 bytes), length (2), type (1)."""
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """One offline run as its log holds it: its id, group and job type, config, summary, history rows (each
    ``log`` call's values) and exit code (None: it never finished). ``folder``: the offline-run directory."""

    run_id: str
    folder: Path
    group: str = ""
    job_type: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    exit_code: Optional[int] = None


def records(path: Path) -> Iterator[bytes]:
    """Each whole record of a ``.wandb`` log, its pieces joined; a torn last record (a killed writer) ends it."""
    data = path.read_bytes()
    if data[:4] != b":W&B":
        raise UserError(f"{path} is not a W&B transaction log", "give the wandb/ folder an offline run wrote")
    pos, pieces = FILE_HEADER, []
    while pos + PIECE_HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < PIECE_HEADER:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + PIECE_HEADER])
        pos += PIECE_HEADER
        if kind == 0 and length == 0:
            pos += left - PIECE_HEADER  # the block's zero padding
            continue
        piece = data[pos:pos + length]
        pos += length
        if len(piece) < length:
            return
        if kind == FULL:
            yield piece
        elif kind == FIRST:
            pieces = [piece]
        elif kind == MIDDLE:
            pieces.append(piece)
        elif kind == LAST:
            yield b"".join([*pieces, piece])
            pieces = []


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read(folder: Path) -> Optional[OfflineRun]:
    from wandb.proto import wandb_internal_pb2 as pb

    logs = sorted(folder.glob("run-*.wandb"))
    if not logs:
        return None
    run: Optional[OfflineRun] = None
    for data in records(logs[0]):
        record = pb.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = run or OfflineRun(run_id=record.run.run_id, folder=folder)
            run.group, run.job_type = record.run.run_group, record.run.job_type
            for item in record.run.config.update:
                run.config[item.key] = _value(item.value_json)
        elif run is None:
            continue
        elif kind == "config":
            for item in record.config.update:
                run.config[item.key] = _value(item.value_json)
        elif kind == "summary":
            for item in record.summary.update:
                run.summary[item.key or ".".join(item.nested_key)] = _value(item.value_json)
        elif kind == "history":
            run.history.append({item.key or ".".join(item.nested_key): _value(item.value_json)
                                for item in record.history.item})
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run


def read_offline_runs(directory: Path) -> list[OfflineRun]:
    """The runs under ``directory`` (a ``wandb/`` folder, or the folder holding it), the latest attempt of each
    run id (a run resumed offline writes a new folder under the same id), in the order they started."""
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        raise UserError("reading W&B runs needs the wandb package", "pip install 'mutransfer[wandb]'")
    root = directory / "wandb" if (directory / "wandb").is_dir() else directory
    folders = sorted(p for p in root.glob("offline-run-*") if p.is_dir())
    if not folders:
        raise UserError(f"{directory} holds no offline W&B runs (offline-run-* folders)",
                        "give the wandb/ folder a run with WANDB_MODE=offline wrote")
    latest: dict[str, OfflineRun] = {}
    for folder in folders:
        run = _read(folder)
        if run is not None:
            latest.pop(run.run_id, None)
            latest[run.run_id] = run
    return list(latest.values())
