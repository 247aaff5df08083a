"""Weights & Biases: the sweep is a group (and a ``sweep`` run in it holding the answer), each trial a run of the
group whose id is fixed by its key, so a trial trained again after a kill resumes its own run instead of adding
one. ``WANDB_MODE=offline`` writes the runs under the run directory's ``wandb/``."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Optional

from .backend import KIND_TAG, STATUS_TAG, SWEEP_KIND, TRIAL_KIND
from .records import SweepAnswer, TrialEnd, TrialInfo, param_value, run_id_of
from .spec import TrackerSpec

__all__ = ["WandbBackend", "INIT_SECONDS"]

INIT_SECONDS = 30
"""W&B's own limit on starting a run."""


class WandbBackend:
    """W&B runs of one process, kept open from a trial's start to its end."""

    def __init__(self, spec: TrackerSpec, run_dir: Path) -> None:
        import wandb

        self.wandb, self.spec = wandb, spec
        self.dir = Path(os.environ.get("WANDB_DIR") or run_dir)
        self.runs: dict[str, Any] = {}

    def _init(self, run_id: str, name: str, group: str, job_type: str, config: dict[str, Any]) -> Any:
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.wandb.init(project=self.spec.experiment, entity=self.spec.entity or None, group=group,
                               job_type=job_type, id=run_id, name=name, config=config, resume="allow",
                               tags=[f"{k}:{v}" for k, v in self.spec.tags.items()], dir=str(self.dir),
                               reinit="create_new",
                               settings=self.wandb.Settings(silent=True, init_timeout=INIT_SECONDS,
                                                            console="off"))

    def open_sweep(self, name: str, existing: Optional[str], fingerprint: str) -> str:
        """A group is a name: the sweep's, with its fingerprint, is the same on every machine."""
        return existing or f"{name}-{(fingerprint or uuid.uuid4().hex)[:8]}"

    def start_trial(self, parent: str, info: TrialInfo) -> str:
        run_id = run_id_of(parent, info.key)
        params = {name: param_value(value) for name, value in info.params.items()}
        run = self._init(run_id, info.name, parent, TRIAL_KIND, {**params, KIND_TAG: TRIAL_KIND})
        self.runs[run_id] = run
        return run_id

    def log(self, run: str, rows: list[tuple[int, dict[str, float]]]) -> None:
        for step, metrics in rows:  # W&B's own step counts calls: an attempt after a kill appends to its run
            self.runs[run].log({**metrics, "step": step})

    def end_trial(self, run: str, end: TrialEnd) -> None:
        handle = self.runs.pop(run)
        handle.summary.update({**end.metrics(), STATUS_TAG: end.status})
        handle.finish(exit_code=0 if end.status != "failed" else 1)

    def log_answer(self, parent: str, answer: SweepAnswer) -> None:
        """The answer on the group's ``sweep`` run, kept open until the final one; files copied into the run."""
        run = self.runs.get(parent) or self._init(parent, parent, parent, SWEEP_KIND, {KIND_TAG: SWEEP_KIND})
        self.runs[parent] = run
        images = {f"figures/{p.stem}": self.wandb.Image(str(p)) for p in answer.files if p.suffix == ".png"}
        run.log({**answer.metrics, **images, "trials": answer.step})
        run.summary.update({**answer.metrics, **answer.tags})
        if answer.final:
            for path in answer.files:
                if path.suffix != ".png":
                    copy = Path(run.dir) / path.name
                    shutil.copyfile(path, copy)
                    run.save(str(copy), base_path=run.dir, policy="now")
            self.runs.pop(parent).finish()

    def close(self) -> None:
        """Finish the runs still open (a trial's as failed). W&B's service process ends with this process (its
        own exit hook): tearing it down here would cut off another tracker of the same process."""
        for run_id, run in self.runs.items():
            run.finish(exit_code=0 if run_id == run.group else 1)
        self.runs.clear()
