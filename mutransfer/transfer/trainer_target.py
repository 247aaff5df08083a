"""What a transfer file says of a sweep whose trials ran the user's own command (a spec's ``trainer`` section).

The tool knows of such a trainer only what its spec declares: the setup's label, its command, the folder it runs
in, the axes it sweeps with their values, and the overrides that set the config keys its placeholders may read.
``TrainerTarget`` carries those, and the command with the target's values in its placeholders (η* at its written
precision, the target's width and other axes); a trial's own placeholders (``{seed}``, ``{trial_dir}``,
``{plan}``, ``{devices}``, ``{trial}``) stay as they are. Without ``model.factory`` the tool has no model of the
trainer's, so the file holds no per-parameter table (``builtin_plan``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from ..schema import TRANSFER_AXES, Config
from ..sweep.spec.sweep_spec import SweepSpec, spec_from_dict

__all__ = ["TrainerTarget", "trainer_target", "builtin_plan", "trainer_text", "TRIAL_PLACEHOLDERS"]

TRIAL_PLACEHOLDERS = ("seed", "trial_dir", "plan", "devices", "trial")
"""Placeholders a trial fills and a target does not: left in the command as written."""


@dataclass(frozen=True)
class TrainerTarget:
    """The spec's trainer for one setup, and its command at the target."""

    setup: str
    command: list[str]
    """The command's words as the spec declares them, placeholders and all (the setup's ``args`` included)."""
    cwd: str
    at_target: list[str] | str
    """The command with the target's values in its placeholders (the trial's own left as placeholders)."""
    axes: dict[str, list[float]]
    """The transfer axes the spec lists, by their plural (``widths``), with their values."""
    overrides: list[str]
    """The spec's and the setup's overrides: the config keys the trainer's placeholders may read."""
    model_factory: Optional[str]

    def as_dict(self) -> dict[str, Any]:
        return {"setup": self.setup, "command": self.command, "cwd": self.cwd, "at_target": self.at_target,
                **self.axes, "overrides": self.overrides,
                **({"model_factory": self.model_factory} if self.model_factory else {})}


def _spec(record: Mapping[str, Any]) -> Optional[SweepSpec]:
    spec = record.get("spec")
    return spec_from_dict(dict(spec)) if isinstance(spec, Mapping) and spec.get("trainer") else None


def builtin_plan(record: Mapping[str, Any]) -> bool:
    """Whether the sweep's trials trained a model whose plan the tool computes: the built-in GPT, or a trainer's
    ``model.factory``; False for a trainer command without one."""
    spec = _spec(record)
    return spec is None or spec.model is not None


def trainer_target(record: Mapping[str, Any], label: str, cfg: Config, log2_lr: float) -> Optional[TrainerTarget]:
    """The trainer of setup ``label`` at the target ``cfg`` (whose ``optimizer.lr`` is η* as written, and
    ``log2_lr`` its log2 as written); None for a sweep of the built-in loop."""
    from ..sweep.run.command_trainer import command_words, trial_values  # imports torch: only for a trainer's sweep

    spec = _spec(record)
    if spec is None:
        return None
    setup = next(s for s in spec.setups if s.label == label)
    trainer = setup.trainer or spec.trainer
    assert trainer is not None
    values = {**trial_values(cfg, label, Path(), None, "", 0), "log2_lr": log2_lr,
              **{name: "{" + name + "}" for name in TRIAL_PLACEHOLDERS}}
    model = spec.model or {}
    return TrainerTarget(setup=label, command=trainer.templates(), cwd=trainer.cwd,
                         at_target=command_words(trainer, values),
                         axes={axis.plural: list(spec.listed(axis.name)) for axis in TRANSFER_AXES
                               if spec.listed(axis.name)},
                         overrides=[*spec.overrides, *setup.overrides],
                         model_factory=str(model["factory"]) if model.get("factory") else None)


def trainer_text(trainer: Mapping[str, Any], lr: float, log2_lr: float, width: int) -> str:
    """What ``transfer`` prints of a trainer's target: η* for the setup, the command to run, and what the spec
    declares (one line each)."""
    command = trainer["at_target"] if isinstance(trainer["at_target"], str) else " ".join(trainer["at_target"])
    axes = "; ".join(f"{axis.plural} {', '.join(f'{v:g}' for v in trainer[axis.plural])}" for axis in TRANSFER_AXES
                     if trainer.get(axis.plural))
    overrides = ", ".join(trainer["overrides"]) or "none"
    return (f"{trainer['setup']} (the spec's trainer command) at width {width}: η* = 2^{log2_lr:.2f} = {lr:.4g}\n"
            f"  command at the target: {command} (in {trainer['cwd']})\n"
            f"  declared by the spec: {axes}; overrides: {overrides}")
