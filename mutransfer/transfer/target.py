"""A target-width config from a sweep: η* (the base LR found at the swept widths) and every parameter's
init std, multiplier, LR and update rule at the target width, computed by the code that builds the model."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..analysis.bowl import UNMEASURED, Asymmetry
from ..analysis.thresholds import Thresholds
from ..analysis.result import SetupResult, Summary
from ..analysis.summary import summarize_run
from ..defaults import TRANSFER_TOLERANCE
from ..config import check_width, config_from_dict, to_dict
from ..errors import UserError
from ..files import CONFIG_FILE, at_statistic_precision, load_yaml
from ..precision import lr_digits, octaves, written
from ..schema import TRANSFER_AXES, Config, axis_named
from ..sweep.plan.trial import axis_value
from ..analysis.prediction import Prediction, carried_law, predict_setup
from ..analysis.transfer_layout import SWEEP, TRANSFER_KEY, TRANSFER_VERSION, estimate_fields, write_transfer_file
from ..words import Verdict
from .batch import target_horizon
from .constants import TunedConstant, constant_warnings, tuned_constants, with_constants
from .decay import (DecayTransfer, decay_rule_name, decay_setups, decay_verdicts, decay_warnings, predict_decay,
                    with_decay)
from .derived import derived_sections, with_digest
from .target_warnings import SHAPED_AXES, drift_warning, implied_error, target_warnings
from .trainer_target import TrainerTarget, builtin_plan, trainer_target

__all__ = ["Transfer", "TransferSource", "make_transfer", "write_transfer", "read_sweep_record", "FORMATS", "DEFAULT_TOLERANCE"]

FORMATS = ("yaml", "json")
DEFAULT_TOLERANCE = TRANSFER_TOLERANCE


@dataclass(frozen=True)
class TransferSource:
    """A transfer file's ``source``: the sweep and the setup it comes from, the setup's verdict across width, and
    what its analysis found across the swept axes (``found``: each value at the precision the file writes)."""

    run_dir: str
    setup: str
    verdict: Verdict
    found: Mapping[str, Any]

    @property
    def slope(self) -> Optional[float]:
        return self.found.get("slope")

    @property
    def slope_ci(self) -> Optional[tuple[float, float]]:
        ci = self.found.get("slope_ci")
        return (float(ci[0]), float(ci[1])) if ci else None

    @property
    def swept_widths(self) -> list[int]:
        return list(self.found.get("swept_widths") or [])

    @property
    def asymmetry(self) -> Asymmetry:
        """The bowl's asymmetry the setup measured (``UNMEASURED`` when it did not)."""
        if self.found.get("asymmetry") is None:
            return UNMEASURED
        return Asymmetry(float(self.found["asymmetry"]), float(self.found.get("asymmetry_se_log") or 0.0))

    def as_dict(self) -> dict[str, Any]:
        return {"kind": SWEEP, "run_dir": self.run_dir, "setup": self.setup, "verdict": self.verdict, **self.found}


class Transfer:
    """The transfer document plus the Config it spells out (for a trainer command without ``model.factory``, the
    config its trials would get: the document leaves it out), the warning on the setup's drift among
    ``warnings`` (``drift``, '' when it does not drift) and the trainer's target where a trainer ran the sweep."""

    def __init__(self, document: dict[str, Any], config: Config, warnings: list[str], prediction: Prediction,
                 source: TransferSource, decay: Optional[DecayTransfer] = None, constants: Sequence[TunedConstant] = (),
                 drift: str = "", trainer: Optional[TrainerTarget] = None) -> None:
        self.document, self.config, self.warnings, self.prediction = document, config, warnings, prediction
        self.source = source
        self.decay = decay
        self.constants = list(constants)
        self.drift, self.trainer = drift, trainer


def read_sweep_record(run_dir: Path) -> dict[str, Any]:
    """A sweep run directory's config.yaml (its spec and every setup's resolved config)."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such directory" if not run_dir.exists() else f"{run_dir} is not a directory",
                        "pass --from RUN_DIR of a sweep (ls runs/ lists them)")
    path = run_dir / CONFIG_FILE
    record = load_yaml(path, "sweep config") if path.is_file() else None
    if not isinstance(record, dict) or record.get("kind") != "sweep" or not isinstance(record.get("spec"), dict):
        raise UserError(f"{run_dir} is not a sweep run directory (no sweep config.yaml)", "pass --from RUN_DIR of a sweep")
    return record


def _choose(summary: Summary, setup: Optional[str],
            allowed: Optional[list[str]] = None) -> tuple[str, SetupResult, list[str]]:
    """The setup to transfer: ``setup``; else, among ``allowed`` (all), the best-loss one whose LR transfers —
    and whose searched decay transfers too, where any does — else the one whose optimum moves least."""
    setups = {k: v for k, v in summary.setups().items()
              if v.line is not None and v.line.estimated() and (allowed is None or k in allowed)}
    if not setups:
        raise UserError("the sweep has no finished trials to transfer from", "run or resume the sweep first")
    if setup is not None:
        if setup not in setups:
            raise UserError(f"unknown setup '{setup}'", f"choose one of: {', '.join(setups)}")
        return setup, setups[setup], []
    best_loss = {k: min(float(w.best_loss or math.inf) for w in v.line.estimated().values()) for k, v in setups.items()}
    transfers = [k for k, v in setups.items() if v.verdict == Verdict.TRANSFERS]
    decays = decay_verdicts(summary)
    both = [k for k in transfers if decays.get(k) == Verdict.TRANSFERS]
    if transfers:
        label = min(both or transfers, key=lambda k: best_loss[k])
        note = ([f"no setup's decay optimum transfers; '{label}' is the best-loss setup whose LR does"]
                if decays and not both else [])
        return label, setups[label], note
    label = min(setups, key=lambda k: abs(setups[k].line.slope or 0.0) if setups[k].line.slope is not None else math.inf)
    if len(setups) == 1:
        return label, setups[label], [f"'{label}' is the only setup with results and its LR is not shown to transfer "
                                      f"across widths (verdict {setups[label].verdict}): treat the result "
                                      "with care"]
    return label, setups[label], [f"no setup's LR transfers across widths; using '{label}', whose optimum moves "
                                  "least (|slope| smallest): treat the result with care"]


def make_transfer(run_dir: Path, width: int, setup: Optional[str] = None, correct_drift: bool = False,
                  tolerance: float = DEFAULT_TOLERANCE, depth: Optional[int] = None,
                  steps: Optional[int] = None, decay_rule: Optional[str] = None, batch_size: Optional[int] = None,
                  tokens: Optional[int] = None, th: Thresholds = Thresholds(), sections: bool = True,
                  at: Mapping[str, float] = {}) -> Transfer:
    """The transfer to ``width`` (and ``depth``, ``batch_size`` and the horizon, ``steps`` or a budget of
    ``tokens``: the swept base point's when None); a sweep that searched the decay carries its prediction too,
    under the setup's rule (``decay_rule`` chooses among them); ``th`` carries the critical batch's tolerance;
    ``sections=False`` leaves out the per-parameter plan and the trainer's command (``verify`` needs neither, and
    both import torch); ``at`` the target on any other registered axis (its swept base point's when absent)."""
    _check_request(width, depth, tolerance)
    record = read_sweep_record(run_dir)
    summary = summarize_run(run_dir, th)
    allowed = _decay_rule_setups(record, decay_rule, run_dir) if decay_rule is not None else None
    label, info, warnings = _choose(summary, setup, allowed)
    base = _swept_config(record, label, run_dir)
    builtin = builtin_plan(record)
    _check_target_shape(base, label, width, depth, builtin)
    horizon = target_horizon(base, batch_size, tokens, steps)
    target = {"width": width, "depth": base.model.depth if depth is None else depth,
              **horizon.point(base.train.seq_len)}
    others = [axis for axis in TRANSFER_AXES if axis.name not in SHAPED_AXES and axis.config_key]
    for axis in others:
        if axis.name in at and axis_value(base, axis) is None:
            raise UserError(f"--at {axis.name}={at[axis.name]:g}: setup {label}'s model has no {axis.name} "
                            f"({str(axis.config_key).rpartition('.')[0]} is not set)",
                            f"drop --at {axis.name}, or transfer from a sweep of a model that has it (model=moe)")
    target.update({axis.name: _integral(at[axis.name]) if axis.name in at else axis_value(base, axis)
                   for axis in others})
    prediction = _as_written(predict_setup(info, target, correct_drift, tolerance))
    cfg = replace(base, model=replace(base.model, width=width, depth=target["depth"]),
                  train=replace(base.train, steps=horizon.steps, batch_size=horizon.batch, tokens=horizon.tokens),
                  optimizer=replace(base.optimizer, lr=lr_digits(2.0**prediction.log2_lr)))
    moved = [f"{axis.config_key}={_number(at[axis.name])}" for axis in others if axis.name in at]
    cfg = config_from_dict(to_dict(cfg), moved) if moved else cfg
    decay = predict_decay(summary, record, label, target, tolerance)
    if decay is not None:
        decay = replace(decay, value=lr_digits(decay.value),
                        prediction=_as_written(decay.prediction) if decay.log2 else decay.prediction)
        cfg = with_decay(cfg, decay)
        warnings += decay_warnings(label, decay)
    constants = tuned_constants(summary, record, label, base)
    cfg = with_constants(cfg, constants)
    warnings += constant_warnings(label, constants)
    drift = drift_warning(label, info, prediction, correct_drift)
    warnings += target_warnings(label, info, base, cfg, target, prediction, drift, builtin)
    trainer = trainer_target(record, label, cfg, prediction.log2_lr) if sections else None
    source = _source(run_dir, label, info, base, builtin)
    document = {
        TRANSFER_KEY: TRANSFER_VERSION,
        "prediction": _prediction_section(prediction),
        "source": source.as_dict(),
        **({"backtest": info.backtest.brief()} if info.backtest is not None and info.backtest.points else {}),
        **({"decay": {**_decay_section(decay), "rule": decay_rule_name(base)}} if decay is not None else {}),
        **({"constants": {c.key: c.as_dict() for c in constants}} if constants else {}),
        "correct_drift": correct_drift,
        "implied_error_octaves": octaves(implied_error(info, prediction)),
        **(with_digest(derived_sections(cfg)) if builtin and sections else
           {"lr": cfg.optimizer.lr, "log2_lr": prediction.log2_lr}),
        **({"trainer": trainer.as_dict()} if trainer is not None else {}),
        "warnings": warnings,
        "config": to_dict(cfg) if builtin else None,
    }
    return Transfer(document, cfg, warnings, prediction, source, decay, constants, drift, trainer)


def _integral(value: float) -> int | float:
    """A target's value: an integer where it is one (``--at context=64`` is 64, not 64.0)."""
    return int(value) if float(value).is_integer() else value


def _number(value: float) -> str:
    """A target's value as a config override's text."""
    return str(_integral(value)) if float(value).is_integer() else repr(value)


def _as_written(prediction: Prediction) -> Prediction:
    """``prediction`` as the transfer file writes it (``precision``: log2 η* and its range to the octave's
    thousandth), so that the η* trained, verified and read is the one number."""
    interval = None if prediction.interval is None else (octaves(prediction.interval[0]),
                                                         octaves(prediction.interval[1]))
    log2_lr = octaves(prediction.log2_lr)
    half = None if interval is None else octaves(max(log2_lr - interval[0], interval[1] - log2_lr))
    return replace(prediction, log2_lr=log2_lr, interval=interval,
                   half_width=half if half is not None else prediction.half_width)


def _prediction_section(prediction: Prediction) -> dict[str, Any]:
    """The file's ``prediction`` (``analysis.transfer_layout``): the target on the axes the fit carries, η* with
    its 95 % range in log2 and as learning rates, and what the sweep's fit adds (the doublings extrapolated, what
    would narrow the range, the lack of fit, and for a law the axes whose slope moved η*)."""
    return {"target": {"width": prediction.width, **dict(prediction.at)},
            **estimate_fields(prediction.log2_lr, prediction.interval), "half_width": prediction.half_width, "tolerance": prediction.tolerance,
            "within_tolerance": prediction.within_tolerance, "extrapolated_doublings": prediction.doublings,
            "narrow": prediction.narrow, "lack_of_fit": prediction.lack_of_fit,
            **({"applied_slopes": list(prediction.applied)} if prediction.at else {})}


def _decay_section(decay: DecayTransfer) -> dict[str, Any]:
    """The decay as the file writes it: its value and range at ``LR_DIGITS``, a log2 prediction in octaves."""
    return written(decay.as_dict(), lr_keys={"value", "range"},
                   octave_keys={"prediction"} if decay.log2 else ())


def _check_request(width: int, depth: Optional[int], tolerance: float) -> None:
    if depth is not None and depth <= 0:
        raise UserError(f"depth={depth} must be positive", "give the target depth, e.g. 48")
    if width <= 0:
        raise UserError(f"width={width} must be positive", "give the target width, e.g. 4096")
    if not math.isfinite(tolerance) or tolerance <= 0:
        raise UserError(f"tolerance={tolerance} must be a positive number of octaves", "e.g. 1")


def _swept_config(record: dict[str, Any], label: str, run_dir: Path) -> Config:
    """The setup's resolved config at the sweep's base point, as the run directory's config.yaml records it."""
    resolved = record.get("setups")
    if not isinstance(resolved, dict) or not isinstance(resolved.get(label), dict):
        raise UserError(f"{run_dir}/{CONFIG_FILE} has no resolved config for setup '{label}'",
                        "rewrite it by rerunning the sweep's command (or mutransfer export)")
    return config_from_dict(resolved[label], where=f"{run_dir}/{CONFIG_FILE}")


def _check_target_shape(base: Config, label: str, width: int, depth: Optional[int], builtin: bool) -> None:
    """The built-in GPT's target width must be a multiple of its head dimension; a factory model keeps its depth;
    a trainer command's own model is the trainer's to check."""
    if base.model.factory is None and builtin:
        check_width(f"width={width}", width, base.model.head_dim)
    if depth is not None and base.model.factory is not None and depth != base.model.depth:
        raise UserError(f"depth={depth}: setup '{label}' is a model.factory model, which is built at one depth",
                        "leave the depth out (the factory's module fixes it)")


def _source(run_dir: Path, label: str, info: SetupResult, base: Config, builtin: bool) -> TransferSource:
    """The transfer file's ``source``: the sweep, the setup and what its analysis found across the swept axes
    (the base depth where the tool knows the model: not a trainer command's own). Statistics at their
    significant digits, slopes and optima in octaves (``precision``)."""
    law = carried_law(info)
    found = at_statistic_precision({
        "reason": info.reason, "slope": info.line.slope,
        "slope_ci": list(info.line.slope_ci) if info.line.slope_ci else None,
        "asymmetry": info.line.asymmetry, "asymmetry_se_log": info.line.asymmetry_se_log,
        "swept_widths": sorted(int(w) for w in info.line.points),
        **({"swept_depth": base.model.depth} if builtin else {}),
        **_swept_axes(info), "log2_lr_star": {str(w): o.x_star for w, o in info.line.points.items()},
        **({"law": law.to_json()} if law is not None else {})})
    in_octaves = {key for key in found if key.endswith(("slope", "slope_ci")) or key == "log2_lr_star"}
    return TransferSource(str(run_dir), label, info.verdict, written(found, octave_keys=in_octaves, lr_keys=()))


def _decay_rule_setups(record: dict[str, Any], rule: str, run_dir: Path) -> list[str]:
    resolved = record.get("setups") if isinstance(record.get("setups"), dict) else {}
    configs = {label: config_from_dict(data, where=f"{run_dir}/{CONFIG_FILE}") for label, data in resolved.items()}
    return decay_setups(record, configs, rule)


def _swept_axes(info: SetupResult) -> dict[str, Any]:
    """The other axes' slopes, intervals, verdicts and swept values, for the axes the sweep varied."""
    out: dict[str, Any] = {}
    for name, fit in info.axes.items():
        if fit is not info.line:
            plural = axis_named(name).plural
            out.update({f"{name}_slope": fit.slope, f"{name}_slope_ci": list(fit.slope_ci) if fit.slope_ci else None,
                        f"{name}_verdict": fit.verdict, f"swept_{plural}": sorted(fit.points)})
    return out


def write_transfer(transfer: Transfer, path: Path, fmt: str = "yaml") -> None:
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt} is not supported", f"use one of: {', '.join(FORMATS)}")
    write_transfer_file(transfer.document, path, fmt)
