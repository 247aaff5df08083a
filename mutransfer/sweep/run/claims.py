"""Claiming the trials a worker asked for: each gets its searched value and tags, and a point another live trial
already holds is dropped."""

from __future__ import annotations

from typing import Optional

import optuna
from optuna.trial import TrialState

from ...schema import Config
from ..store.attrs import TrialAttrs
from ..plan.keys import StudyKey
from ..store.liveness import process_identity
from ..spec.sweep_spec import SweepSpec
from ..store.studies import owner_of, seed_of
from ..plan.trial import axis_values, trial_config, trials_per_batch

__all__ = ["Claimer"]


class Claimer:
    """Places asked trials at their points and keeps one trial per point; also says how many of a study's trials
    a worker claims at once (they train stacked)."""

    def __init__(self, spec: SweepSpec, extra: tuple[str, ...]) -> None:
        self.spec, self.extra = spec, extra
        self.batch_sizes: dict[StudyKey, int] = {}
        self.base_configs: dict[StudyKey, Config] = {}

    def batch_size(self, key: StudyKey) -> int:
        """How many of ``key``'s trials train stacked as one model (``trials_per_batch``)."""
        if key not in self.batch_sizes:
            self.batch_sizes[key] = 1 if self.spec.trainer is not None else trials_per_batch(
                self.spec.batch_trials, key, self.base_config(key), self.spec.devices_per_trial)
        return self.batch_sizes[key]

    def base_config(self, key: StudyKey) -> Config:
        """The study's config at its lowest searched value: what sizes its batches and places its trials on the
        transfer axes."""
        if key not in self.base_configs:
            self.base_configs[key] = trial_config(self.spec, key, key.search.min, self.extra)
        return self.base_configs[key]

    def claim(self, study: optuna.Study, key: StudyKey, trial: optuna.Trial) -> Optional[float]:
        """The trial's searched value, or None when another live trial already holds that value or the trial was
        failed as an orphan while an outage held this claim up."""
        try:
            return self._claim_point(study, key, trial)
        except optuna.exceptions.UpdateFinishedTrialError:
            return None

    def _claim_point(self, study: optuna.Study, key: StudyKey, trial: optuna.Trial) -> Optional[float]:
        search = key.search
        x = trial.suggest_float(search.column, *key.policy().bounds)
        seed = seed_of(trial, key)
        for name, value in {**process_identity(), "setup": key.setup, **axis_values(self.base_config(key)),
                            "seed": seed, "search_key": search.key}.items():
            trial.set_user_attr(name, value)
        if owner_of(study, trial.number, key, x, seed) != trial.number:
            TrialAttrs.write(trial, duplicate=True)
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            return None
        return x
