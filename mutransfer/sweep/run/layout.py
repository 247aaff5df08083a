"""``--workers auto``: on CPU, measure the ways of splitting the cores between worker processes and torch
threads (e.g. 2 workers × 1 thread vs 1 worker × 2 threads on two cores) on the sweep's largest model, all
workers of a layout running at once, and pick the layout with the most training steps per second."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import replace
from typing import Any

import torch

from ...train.cores import available_cores
from ...train.timing import measure_step
from ..spec.sweep_spec import SweepSpec
from ..plan.sweep_plan import SweepPlan
from ..plan.trial import trial_config

__all__ = ["choose_layout", "layouts", "gpu_groups", "rank_gpu_groups"]


def layouts(cores: int) -> list[tuple[int, int]]:
    """(workers, threads per worker) with workers × threads = cores."""
    return [(w, cores // w) for w in range(1, cores + 1) if cores % w == 0]


def _steps_per_second(args: tuple[Any, int]) -> float:
    cfg, threads = args
    return 1.0 / measure_step(replace(cfg, train=replace(cfg.train, threads=threads)), steps=4)


def gpu_groups(per_trial: int) -> list[str]:
    """The visible GPUs (``CUDA_VISIBLE_DEVICES``'s ids when it is set) in groups of ``per_trial``, each as a
    comma-separated list; none on a machine without CUDA or with ``per_trial`` 0."""
    if per_trial < 1 or not torch.cuda.is_available():
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [i.strip() for i in visible.split(",") if i.strip()] if visible else []
    ids = ids or [str(i) for i in range(torch.cuda.device_count())]
    return [",".join(ids[i:i + per_trial]) for i in range(0, len(ids) - per_trial + 1, per_trial)]


def rank_gpu_groups(per_trial: int) -> list[tuple[int, ...]]:
    """The visible GPUs' indices in groups of ``per_trial``, one group per worker whose trials train on that many
    ranks (``devices_per_trial``); none without CUDA."""
    if not torch.cuda.is_available():
        return []
    count = torch.cuda.device_count()
    return [tuple(range(i, i + per_trial)) for i in range(0, count - per_trial + 1, per_trial)]


def _trainer_layout(spec: SweepSpec, cores: int) -> tuple[int, int, str]:
    """A trainer command's sweep: one worker per group of ``devices_per_trial`` GPUs, one worker on a CPU."""
    assert spec.trainer is not None
    groups = gpu_groups(spec.trainer.devices_per_trial)
    if groups:
        return len(groups), max(1, cores // len(groups)), (f"{len(groups)} worker(s), "
                                                            f"{spec.trainer.devices_per_trial} GPU(s) each")
    return 1, cores, "1 worker (no GPU for the trainer command)"


def choose_layout(plan: SweepPlan) -> tuple[int, int, str]:
    """(workers, threads, a one-line account of the measurement)."""
    spec = plan.spec
    cores = available_cores()
    if spec.trainer is not None:
        return _trainer_layout(spec, cores)
    if torch.cuda.is_available():
        gpus = torch.cuda.device_count()
        return gpus, max(1, cores // gpus), f"{gpus} worker(s), one per GPU"
    key = max(plan.studies, key=lambda k: k.width**2 * (k.point.depth or 1))
    grid = key.search.grid()
    cfg = trial_config(spec, key, grid[len(grid) // 2])
    context = multiprocessing.get_context("spawn")
    rates = {}
    for workers, threads in layouts(cores):
        with context.Pool(workers) as pool:
            rates[(workers, threads)] = sum(pool.map(_steps_per_second, [(cfg, threads)] * workers))
    best = max(rates, key=lambda layout: rates[layout])
    measured = ", ".join(f"{w}×{t}: {r:.1f} steps/s" for (w, t), r in rates.items())
    return best[0], best[1], (f"measured at width {key.width}{key.off_width()} ({measured}); using {best[0]} worker(s) × {best[1]} "
                              "thread(s)")
