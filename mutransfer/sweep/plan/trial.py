"""One trial's config, composed from the spec, and how many of a study's trials train stacked at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...config import compose, to_dict
from ...errors import UserError
from ...fingerprint import EXECUTION_CONFIG_KEYS, EXECUTION_KEYS, sweep_record_of
from ...schema import FAMILIES, LR_KEY, TRANSFER_AXES, Axis, Config, config_value
from ...table.constants import check_constants, scaled
from ...train.budget import tokens_read
from ...table.decay import DECAY_OFF_OVERRIDES
from ..spec.search import OFF_X
from ..spec.sweep_spec import Point, SweepSpec
from .keys import StudyKey

__all__ = ["EXECUTION_KEYS", "EXECUTION_CONFIG_KEYS", "Held", "trial_config", "setup_config", "point_overrides",
           "axis_value", "axis_values",
           "setup_configs", "sweep_record", "auto_trials", "trials_per_batch"]


@dataclass(frozen=True)
class Held:
    """What a study's trials train at besides their searched value (``sweep.run.gates``)."""

    lr: Optional[float] = None
    """The learning rate of a search at the LR optimum; None: the config's."""
    overrides: tuple[str, ...] = ()
    """The values a spec's ``constants`` hold the other keys at."""
    shipped: Optional[Any] = None
    """A searched constant's shipped value (a number or a rule), which the searched factor scales; None: the
    searched value is the config value itself."""


def trial_config(spec: SweepSpec, key: StudyKey, x: float, extra: tuple[str, ...] = (),
                 seed: Optional[int] = None, held: Held = Held()) -> Config:
    """The config one trial trains: setup overrides, spec overrides, then the point, the seed (the study's, or a
    noise probe's), what ``held`` holds, and the searched value (a decay search's ``OFF_X``: decay off)."""
    setup = next(s for s in spec.setups if s.label == key.setup)
    seed = key.seed if seed is None else seed
    value = key.search.value(x) if held.shipped is None else scaled(held.shipped, x)
    searched = (list(DECAY_OFF_OVERRIDES) if x == OFF_X else
                [f"{key.search.key}={value!r}" if held.shipped is None else f"{key.search.key}={value}"])
    return setup_config(spec, setup.label, [*setup.overrides, *spec.overrides, *point_overrides(key.point),
                                            f"train.seed={seed}",
                                            *([f"{LR_KEY}={held.lr!r}"] if held.lr is not None else []),
                                            *held.overrides, *searched, *extra])


def setup_config(spec: SweepSpec, label: str, overrides: list[str]) -> Config:
    """``compose`` for one of the spec's setups; a refusal names the setup (``(setup mup_muon)``)."""
    try:
        return compose(overrides, spec.extra())
    except UserError as exc:
        raise UserError(f"{exc.message} (setup {label})", exc.hint) from None


def point_overrides(point: Point) -> list[str]:
    """The config overrides that put a trial at ``point`` (an axis set to None keeps the config's value)."""
    return [f"{axis.config_key}={value}" for axis, value in zip(TRANSFER_AXES, point) if value is not None]


def axis_value(cfg: Config, axis: Axis) -> Optional[int]:
    """Where ``cfg`` trains on ``axis``: its config key's value (None where the model has no such axis: the expert
    count of a dense model); for the token axis, the tokens the run reads, budget or not."""
    return tokens_read(cfg.train) if axis.name == "tokens" else config_value(cfg, axis.config_key)


def axis_values(cfg: Config) -> dict[str, int]:
    """Where ``cfg`` trains on every transfer axis, by trials.csv column: ``{width, depth, horizon, batch_size,
    tokens}`` (the trial user attributes a dashboard filters and groups by, set whether or not the spec sweeps the
    axis; an axis the model has none of, left out)."""
    values = {axis.column: axis_value(cfg, axis) for axis in TRANSFER_AXES}
    return {column: value for column, value in values.items() if value is not None}


def setup_configs(spec: SweepSpec) -> dict[str, dict[str, Any]]:
    """Each setup's resolved config at the base point (the first value of every swept axis) and the first seed, with
    the searched keys at their base values; a spec's ``constants`` checked against each setup's optimizer."""
    out = {}
    for setup in spec.setups:
        cfg = setup_config(spec, setup.label, [*setup.overrides, *spec.overrides, *point_overrides(spec.points()[0]),
                                               f"train.seed={spec.seeds[0]}"])
        if spec.constants is not None:
            check_constants(spec.constants.keys, FAMILIES.named(cfg.optimizer.name), cfg.optimizer.init,
                            f"constants (setup {setup.label})")
        out[setup.label] = to_dict(cfg)
    return out


def sweep_record(spec: SweepSpec, configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a sweep computes (its run directory's config.yaml and its studies' record), with a fingerprint
    (``fingerprint.sweep_record_of``).

    How it runs is left out: changing ``batch_trials``, ``trunks`` or ``train.compile`` resumes the same sweep.
    """
    return sweep_record_of(spec.as_dict(), configs)


def auto_trials(device_type: str, width: int) -> int:
    """``batch_trials: auto``: 1 on CPU (measured: at most 1.2× there, see docs/performance.md); on a GPU
    ``min(8, 2048 // width)`` learning-rate trials, since small widths leave most of a GPU idle."""
    return max(1, min(8, 2048 // width)) if device_type == "cuda" else 1


def trials_per_batch(setting: int | str, key: StudyKey, cfg: Config, spec_ranks: int = 1) -> int:
    """How many of a study's trials train stacked as one model: ``batch_trials`` when it is a number, else
    ``auto_trials``; only learning-rate searches of the built-in dense GPT on one rank per trial batch."""
    if setting != "auto":
        return int(setting)
    if (spec_ranks > 1 or key.search.key != LR_KEY or cfg.model.factory or cfg.model.hf is not None
            or cfg.model.moe is not None):
        return 1
    from ...train.device import resolve_device  # torch: only when a sweep trains

    return auto_trials(resolve_device(cfg.train.device).type, cfg.model.width)
