"""The device a run trains on, its CUDA settings (TF32, peak memory) and the environment a result depends on."""

from __future__ import annotations

import platform
import resource
from importlib import metadata
from typing import Any

import torch

from ..errors import UserError

__all__ = ["resolve_device", "prepare_device", "synchronize", "peak_memory_mb", "environment"]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError("train.device=cuda but no CUDA device is available", "use train.device=cpu or auto")
    return torch.device(name)


def prepare_device(name: str, threads: int = 0) -> torch.device:
    """The device for a run, with torch's threads set (when ``threads``) and TF32 matmuls on CUDA."""
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(name)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats(device)
    return device


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on CPU), so wall-clock timings are real."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def environment(device: torch.device) -> dict[str, Any]:
    """Versions and hardware a result depends on."""
    versions = {}
    for package in ("torch", "optuna", "hydra-core", "numpy", "pandas", "mutransfer"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "threads": torch.get_num_threads(),
    }
