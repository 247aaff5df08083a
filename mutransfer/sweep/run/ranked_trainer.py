"""The built-in trainer with ``devices_per_trial`` ranks per trial, one process group per trial: this worker is
rank 0 (it reports evaluations, prunes and records, as for a trial in one process) and starts the other ranks as
helper processes (``rank_trial``). A rank that dies fails the trial when the next collective times out
(``train.dist_timeout``); the helpers never outlive the trial."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from ...config import to_yaml
from ...dist.launch import free_port, rank_environment, stop_all
from ...dist.ranks import join, leave
from ...files import atomic_write_text
from ...train.data import Corpora
from ...train.loop import train_model
from ...train.result import TrainResult
from .trainer import OnEval, OnStep, TrialRun

__all__ = ["RankedTrainer"]

HELPER_EXIT_SECONDS = 30.0
"""How long the helper ranks have to exit after rank 0 finished its trial."""


class RankedTrainer:
    """Each claimed trial trained on ``ranks`` ranks of a fresh process group (``train.parallel``)."""

    def __init__(self, ranks: int, run_dir: Path, gpus: Optional[tuple[int, ...]] = None) -> None:
        self.ranks, self.run_dir = ranks, run_dir
        self.gpus = gpus or tuple(range(ranks))
        """Each rank's GPU index (``LOCAL_RANK``), used when the trial trains on CUDA."""
        self.corpora = Corpora()

    def fit(self, runs: list[TrialRun], on_eval: OnEval, on_step: Optional[OnStep] = None) -> list[TrainResult]:
        if len(runs) != 1:
            raise RuntimeError(f"{len(runs)} stacked trials on {self.ranks} ranks: one trial per process group")
        cfg = runs[0].cfg
        corpus = self.corpora.get(cfg.data, cfg.train.seq_len)
        port = free_port()
        with tempfile.TemporaryDirectory(prefix="ranks-", dir=self.run_dir) as folder:
            config_file = Path(folder) / "config.yaml"
            atomic_write_text(config_file, to_yaml(cfg))
            helpers = [subprocess.Popen([sys.executable, "-m", "mutransfer.sweep.run.rank_trial", str(config_file)],
                                        env=rank_environment(rank, self.ranks, port, local_rank=self.gpus[rank]),
                                        stdout=subprocess.DEVNULL)
                       for rank in range(1, self.ranks)]
            try:
                ranks = join(cfg.train.device, cfg.train.parallel, cfg.train.dist_timeout,
                             rank_environment(0, self.ranks, port, local_rank=self.gpus[0]))
                finished = False
                try:
                    result, _ = train_model(cfg, corpus, on_eval=lambda step, val: on_eval(0, step, val),
                                            on_step=(lambda step, loss: on_step(0, step, loss)) if on_step else None,
                                            ranks=ranks)
                    finished = True
                finally:
                    leave(finished)
                for helper in helpers:
                    helper.wait(HELPER_EXIT_SECONDS)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                codes = [helper.poll() for helper in helpers]
                raise RuntimeError(f"the trial's {self.ranks} ranks failed (helper exit codes {codes}): "
                                   f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
            finally:
                stop_all(helpers)
        return [result]
