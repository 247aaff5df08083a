"""A config as plain data: what run directories, transfer files and fingerprints store. Pure data, no torch."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..fingerprint import prune_config
from ..schema import Config
from .decay import decay_on

__all__ = ["config_data"]


def config_data(cfg: Config) -> dict[str, Any]:
    """The config as plain data, the keys added after earlier run directories and transfer files left out at
    their defaults (``fingerprint.config_later_keys``; the weight-decay ones while decay is off), so their
    fingerprints and files stay valid."""
    return prune_config(dataclasses.asdict(cfg), decay_off=not decay_on(cfg.optimizer))
