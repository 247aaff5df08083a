"""What trains a worker's claimed trials: the built-in trainer, in this process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Protocol

from ...schema import Config
from ...train.data import Corpora
from ...train.loop import train_model, train_trials
from ...train.result import TrainResult
from ...train.trunk import TRUNK_DIR, Trunk, trunk_for
from ..plan.keys import StudyKey
from ..spec.sweep_spec import SweepSpec

__all__ = ["TrialTrainer", "InProcessTrainer", "OnEval", "TrialRun"]

OnEval = Callable[[int, int, float], bool]
"""Called with (trial index, step, validation loss) at each evaluation; True stops that trial (pruned)."""
OnStep = Callable[[int, int, float], None]
"""Called with (trial index, step, training loss) after each step a trainer reports."""


@dataclass(frozen=True)
class TrialRun:
    """One claimed trial: its study, its Optuna number and the config it trains."""

    key: StudyKey
    number: int
    cfg: Config
    tracker_run: Optional[str] = None
    """The trial's tracker run id (``--log``), handed to a training command; None without a tracker."""


class TrialTrainer(Protocol):
    """Trains one seed's claimed trials (several share a model when stacked); a trial that cannot train raises
    ``RuntimeError`` (its message is recorded)."""

    def fit(self, runs: list[TrialRun], on_eval: OnEval, on_step: Optional[OnStep] = None) -> list[TrainResult]:
        ...


class InProcessTrainer:
    """The built-in GPT trained in this process: one trial on its own (branching off a shared trunk where the
    spec allows), several learning rates stacked as one model; corpora read once per worker."""

    def __init__(self, spec: SweepSpec, run_dir: Path) -> None:
        self.spec, self.run_dir = spec, run_dir
        self.corpora = Corpora()

    def fit(self, runs: list[TrialRun], on_eval: OnEval, on_step: Optional[OnStep] = None) -> list[TrainResult]:
        cfgs = [run.cfg for run in runs]
        corpus = self.corpora.get(cfgs[0].data, cfgs[0].train.seq_len)
        if len(cfgs) == 1:
            return [train_model(cfgs[0], corpus, on_eval=lambda step, val: on_eval(0, step, val),
                                on_step=(lambda step, loss: on_step(0, step, loss)) if on_step else None,
                                trunk=self._trunk(cfgs[0]))[0]]
        return train_trials(cfgs[0], corpus, [cfg.optimizer.lr for cfg in cfgs], on_eval=on_eval,
                            on_step=_each(on_step) if on_step is not None else None)[0]

    def _trunk(self, cfg: Config) -> Optional[Trunk]:
        """The trunk a trial trained on its own branches off (``SweepSpec.branches``), None without one."""
        if not self.spec.branches(cfg.train):
            return None
        return trunk_for(cfg, self.run_dir / TRUNK_DIR, self.spec.listed("steps"))


def _each(on_step: OnStep) -> Callable[[int, dict[int, float]], None]:
    """A stacked run's step callback (``{trial index: loss}``) as one ``on_step`` call per trial."""
    def each_step(step: int, losses: dict[int, float]) -> None:
        for i, loss in losses.items():
            on_step(i, step, loss)
    return each_step
