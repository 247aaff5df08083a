"""``transfer`` from an imported table: η* at a target on any of its axes (``--at params=7e9 --at tokens=2e12``),
with its 95 % range and how far each axis extrapolates beyond the table.

The prediction is the setup's law (every axis's slope applied: an imported table's axes are expected to move
η*) or, with one axis, its line; an axis the target does not name is held at the law's weighted centre (said in
the output). A target on an axis the import left out as collinear is refused: the law cannot tell its effect
from the axis it moves with. An import names no model config, so the output carries η* and its range only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from ..analysis.law import evaluate_law
from ..analysis.prediction import line_range
from ..analysis.result import SetupResult, Summary
from ..analysis.run_files import run_record
from ..analysis.summary import refuse_unfitted, summarize_run
from ..analysis.transfer_layout import IMPORT, TRANSFER_KEY, TRANSFER_VERSION, estimate_fields
from ..errors import UserError, did_you_mean
from ..precision import lr_digits
from ..schema import LR_KEY

__all__ = ["ImportTarget", "ImportPrediction", "predict_import", "import_transfer_file"]


@dataclass(frozen=True)
class ImportTarget:
    """A target point: a value per named axis."""

    values: dict[str, float]


@dataclass
class ImportPrediction:
    setup: str
    target: dict[str, float]
    """Every analysed axis's value at the target (those not named: the law's centre)."""
    held: list[str]
    """The axes the target did not name, held at the law's centre."""
    log2_lr: float
    interval: Optional[tuple[float, float]]
    extrapolation: dict[str, float]
    """Octaves beyond the table's range per axis (0 inside it)."""
    slopes: dict[str, float]
    tolerance: float
    noise: str
    calibrated: bool
    warnings: list[str] = field(default_factory=list)
    backtest: str = ""
    """The backtest's line (``analysis.backtest``), where the import has an axis with three or more values."""
    backtest_brief: dict[str, Any] = field(default_factory=dict)
    """What the transfer file carries of the backtest (``Backtest.brief``: its line and its two figures)."""

    @property
    def half_width(self) -> Optional[float]:
        if self.interval is None:
            return None
        return max(self.log2_lr - self.interval[0], self.interval[1] - self.log2_lr)

    def as_dict(self, run_dir: Path) -> dict[str, Any]:
        """The transfer file, in the layout every source writes (``analysis.transfer_layout``): η* and its range as the
        sweep's file writes them (log2 to the octave's thousandth, ``lr`` = 2^``log2_lr`` to ``LR_DIGITS``
        significant digits), a held axis's centre to ``LR_DIGITS`` too; every other number at its precision when
        the file is written."""
        target = {name: lr_digits(value) if name in self.held else value for name, value in self.target.items()}
        estimate = estimate_fields(self.log2_lr, self.interval)
        return {
            TRANSFER_KEY: TRANSFER_VERSION,
            "prediction": {"target": target, "held_at_centre": self.held, **estimate, "half_width": self.half_width, "tolerance": self.tolerance,
                           "within_tolerance": self.half_width is not None and self.half_width <= self.tolerance,
                           "extrapolated_octaves": self.extrapolation, "slopes": self.slopes},
            "source": {"kind": IMPORT, "run_dir": str(run_dir), "setup": self.setup,
                       "noise": {"method": self.noise, "calibrated": self.calibrated}},
            **({"backtest": self.backtest_brief} if self.backtest_brief else {}),
            "lr": estimate["lr"], "log2_lr": estimate["log2_lr"], "warnings": self.warnings, "config": None}


def import_transfer_file(target: Mapping[str, float], fmt: str) -> str:
    """``transfer_params7e+09_tokens2e+12.yaml``: the target's named values in the file name."""
    tags = "_".join(f"{name}{value:g}" for name, value in target.items())
    return f"transfer_{tags}.{'json' if fmt == 'json' else 'yaml'}"


def _check_axes(target: Mapping[str, float], analysed: list[str], dropped: Mapping[str, str]) -> None:
    for name in target:
        if name in dropped:
            raise UserError(f"--at {name}: the import left axis {name} out of the analysis ({dropped[name]})",
                            f"give the target on the axes analysed: {', '.join(analysed)}")
        if name not in analysed:
            raise UserError(f"--at {name}: the import has no axis {name}",
                            f"{did_you_mean(name, analysed)}its axes: {', '.join(analysed)}")


def _setup(summary: Summary, label: Optional[str]) -> SetupResult:
    refuse_unfitted(summary)
    setups = summary.setups(LR_KEY)
    unfitted = summary.unfitted(LR_KEY)
    if label is not None and label in unfitted:
        raise UserError(f"--setup {label} could not be fitted: {unfitted[label].reason}", unfitted[label].fix)
    if label is not None:
        if label not in setups:
            raise UserError(f"--setup {label} is not in the import",
                            f"{did_you_mean(label, setups)}its setups: {', '.join(setups)}")
        return setups[label]
    with_fit = [s for s in setups.values() if s.law is not None or (s.line is not None and s.line.slope is not None)]
    if not with_fit:
        raise UserError("no setup of the import has a fitted law or line",
                        "import points where the optimum is inside the LR range on two or more values of an axis")
    return with_fit[0]


def _extrapolation(setup: SetupResult, target: Mapping[str, float]) -> dict[str, float]:
    """Per axis, how many octaves the target lies beyond the values the table holds (0 inside them)."""
    octaves = {}
    for name, value in target.items():
        if setup.law is not None:
            points = [float(p.at[name]) for p in setup.law.points if name in p.at]
        else:
            points = [float(p) for p in setup.axes[name].points] if name in setup.axes else []
        if not points:
            continue
        low, high = min(points), max(points)
        octaves[name] = max(0.0, math.log2(value / high), math.log2(low / value))
    return octaves


def predict_import(run_dir: Path, target: ImportTarget, label: Optional[str], tolerance: float) -> ImportPrediction:
    """η* at ``target`` from the import in ``run_dir``."""
    record = run_record(run_dir)
    analysed = [str(a) for a in record.get("axes") or []]
    dropped = {str(k): str(v) for k, v in (record.get("dropped_axes") or {}).items()}
    _check_axes(target.values, analysed, dropped)
    summary = summarize_run(run_dir)
    setup = _setup(summary, label)
    noise = summary.noise
    law = setup.law
    if law is not None:
        full = {name: target.values.get(name, 2.0 ** law.centre[name]) for name in law.axes}
        held = [name for name in law.axes if name not in target.values]
        log2_lr, interval = evaluate_law(law, full, list(law.axes))
        slopes = {name: law.coefficients[name] for name in law.axes}
    else:
        line = setup.line or next(iter(setup.axes.values()))
        axis = line.axis
        if axis not in target.values:
            raise UserError(f"the import's one axis is {axis}", f"give the target on it: --at {axis}=VALUE")
        if line.slope is None:
            raise UserError(f"setup {setup.setup} has no fitted line across {axis}",
                            "import two or more points whose optimum is inside the LR range")
        log2_lr, half = line_range(line, target.values[axis])  # type: ignore[arg-type]
        interval, full, held, slopes = (log2_lr - half, log2_lr + half), {axis: target.values[axis]}, [], \
            {axis: float(line.slope)}
    prediction = ImportPrediction(setup.setup, full, held, log2_lr, interval, _extrapolation(setup, full), slopes,
                                  tolerance, noise.method if noise else "seeds",
                                  bool(noise.calibrated) if noise else True)
    prediction.warnings = _warnings(prediction, setup)
    if setup.backtest is not None and setup.backtest.points:
        prediction.backtest = setup.backtest.line()
        prediction.backtest_brief = setup.backtest.brief()
    return prediction


def _warnings(prediction: ImportPrediction, setup: SetupResult) -> list[str]:
    out = [f"{name} is {octaves:.1f} octaves beyond the table's range: the law is extrapolated there"
           for name, octaves in prediction.extrapolation.items() if octaves > 0]
    if prediction.held:
        out.append(f"{', '.join(prediction.held)} not given: held at the table's weighted centre "
                   f"({', '.join(f'{n} {prediction.target[n]:.3g}' for n in prediction.held)})")
    if not prediction.calibrated:
        out.append("the import's intervals are uncalibrated (no seeds and too few points): the range is not a "
                   "95 % range")
    if setup.law is not None and setup.law.fails_lack_of_fit:
        out.append(f"the points lie off the law ({setup.law.lack_of_fit_line})")
    half = prediction.half_width
    if half is not None and half > prediction.tolerance:
        out.append(f"the 95 % range reaches {half:.2f} octaves from η*, wider than --tolerance "
                   f"{prediction.tolerance:g}")
    return out
