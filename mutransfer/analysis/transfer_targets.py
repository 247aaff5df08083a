"""The targets ``transfer`` predicted for, read back from the files it wrote into a run directory
(``transfer_w4096.yaml``, an import's ``transfer_params7e+09_tokens2e+12.yaml``; any layout, ``transfer_layout``),
for the figures to mark. A file that cannot be read as a transfer is left out: a figure never fails on it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from ..errors import UserError
from ..files import PARTIAL_TAG
from .transfer_layout import is_transfer, upgraded

__all__ = ["TransferTarget", "read_targets"]


@dataclass(frozen=True)
class TransferTarget:
    """One transfer's target: where (axis → value), for which setup, and log2 η* there with its 95 % range."""

    at: dict[str, float]
    setup: str
    log2_lr: float
    interval: Optional[tuple[float, float]]
    file: str
    partial: bool = False

    def where(self) -> str:
        """``width 4096``, ``params 7e+09, tokens 2e+12``."""
        return ", ".join(f"{name} {value:g}" for name, value in self.at.items())

    def estimate(self) -> str:
        """``log2 η* -9.10 [-9.80, -8.40]`` (``, partial`` for a transfer of an unfinished sweep)."""
        span = f" [{self.interval[0]:+.2f}, {self.interval[1]:+.2f}]" if self.interval else ", range unknown"
        return f"log2 η* {self.log2_lr:+.2f}{span}{', partial' if self.partial else ''}"


def read_targets(run_dir: Path) -> list[TransferTarget]:
    """Every transfer file in ``run_dir`` as a target, by file name; a partial one only where no finished transfer
    names the same target."""
    targets = []
    for path in sorted(run_dir.glob("transfer_*.yaml")) + sorted(run_dir.glob("transfer_*.json")):
        document = _document(path)
        target = _target(document, path) if document is not None else None
        if target is not None:
            targets.append(target)
    finished = {(tuple(sorted(t.at.items())), t.setup) for t in targets if not t.partial}
    return [t for t in targets if not t.partial or (tuple(sorted(t.at.items())), t.setup) not in finished]


def _document(path: Path) -> Optional[Mapping[str, Any]]:
    """The file as this version's layout; None where it is no transfer file this version reads."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return upgraded(data, str(path)) if is_transfer(data) else None
    except (OSError, ValueError, yaml.YAMLError, UserError):
        return None


def _target(document: Mapping[str, Any], path: Path) -> Optional[TransferTarget]:
    """The transfer's ``prediction``: its target and η* with its range; None where it holds no finite η* at a
    positive point."""
    source = document.get("source") if isinstance(document.get("source"), dict) else {}
    prediction = document.get("prediction") if isinstance(document.get("prediction"), dict) else {}
    at, log2_lr, interval = prediction.get("target"), prediction.get("log2_lr"), prediction.get("interval")
    if not isinstance(at, dict):
        return None
    point = {str(name): float(value) for name, value in at.items() if _number(value) and float(value) > 0}
    if not point or not _number(log2_lr):
        return None
    bounds = (float(interval[0]), float(interval[1])) if isinstance(interval, list) and len(interval) == 2 and all(
        _number(v) for v in interval) else None
    return TransferTarget(point, str(source.get("setup", "")), float(log2_lr), bounds, path.name,
                          f".{PARTIAL_TAG}." in path.name)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))
