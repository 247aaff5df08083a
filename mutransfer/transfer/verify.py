"""``mutransfer verify``: measure the optimum at target widths around the η* that ``transfer`` predicts there,
with the sweep's own study machinery, and say how far the prediction missed and what it cost in loss.

Each target (setup, width) gets a grid of ``span`` octaves each side of the predicted log2 η* p at ``step``
spacing — on the lattice of multiples of ``step``, so a plain and a drift-corrected verify share their points —
that extends itself past an edge, the sweep's noise probes, and p itself trained with every seed (an anchor).
The studies live in the sweep's storage under their own prefix (``verify-<sweep name>``), one per width, so
a rerun resumes and ``--workers`` trains in parallel. ``--factors`` keeps the old check: only η*·f is trained.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..analysis.bowl import UNMEASURED, Asymmetry
from ..analysis.decay_effect import decay_effect
from ..analysis.fidelity import Fidelity, measure_fidelity
from ..analysis.prediction import Prediction
from ..analysis.result import PointResult
from ..analysis.stats import welch_difference
from ..analysis.summary import summarize_run
from ..defaults import VERIFY_SPAN, VERIFY_STEP, VERIFY_TOLERANCE
from ..errors import UserError
from ..files import VERIFY_FILE, VERIFY_REPORT, VERIFY_VERSION, atomic_write_text, write_json
from ..schema import LR_COLUMN, LR_KEY, Config
from ..sweep.spec.search import OFF_X
from ..sweep.spec.sweep_spec import MIN_GRID_POINTS, AxisValues, SearchSpec, SetupSpec, SweepSpec, spec_from_dict
from ..table.decay import DECAY_OFF_VALUES
from ..words import TrialStatus
from .decay import DecayTransfer
from .target import make_transfer, read_sweep_record

__all__ = ["VerifyRequest", "Target", "Verification", "parse_widths", "parse_factors", "parse_setups",
           "verify_search", "write_outputs", "drift_advice", "DEFAULT_SPAN", "DEFAULT_STEP", "ERROR_TOLERANCE",
           "ALL_SETUPS"]

DEFAULT_SPAN = VERIFY_SPAN
DEFAULT_STEP = VERIFY_STEP
ERROR_TOLERANCE = VERIFY_TOLERANCE
"""Octaves: ``--strict`` fails a target whose |measured − predicted| log2 η* exceeds this."""
ALL_SETUPS = "all"


@dataclass(frozen=True)
class VerifyRequest:
    widths: tuple[int, ...]
    setups: Optional[tuple[str, ...]] = None
    """None: the setup ``transfer`` would choose; else these labels."""
    span: float = DEFAULT_SPAN
    step: float = DEFAULT_STEP
    tolerance: float = ERROR_TOLERANCE
    correct_drift: bool = False
    factors: Optional[tuple[float, ...]] = None
    overrides: tuple[str, ...] = ()
    depth: Optional[int] = None
    """The target depth, horizon, batch and budget (None: the sweep's base point), as ``transfer --depth --steps
    --batch-size --tokens`` take them."""
    steps: Optional[int] = None
    batch_size: Optional[int] = None
    tokens: Optional[int] = None


@dataclass(frozen=True)
class Target:
    setup: str
    width: int
    prediction: Prediction
    search: SearchSpec
    warnings: tuple[str, ...]
    config: Config
    """The transfer's config at the target: the horizon, batch, depth and data the prediction is for."""
    asymmetry: Asymmetry = UNMEASURED
    """The bowl's asymmetry the sweep measured for this setup (the vertex's where the target's grid cannot)."""
    decay: Optional[DecayTransfer] = None
    """The weight decay ``transfer`` predicts here, when the sweep searched one; measured at the target's LR*."""
    decay_search: Optional[SearchSpec] = None
    constants: tuple[str, ...] = ()
    """The tuned constants ``transfer`` carries (``key=value`` overrides); with any, the same grid also trains with
    the shipped constants (setup ``<label>_shipped``) and the report gives what tuning bought."""
    drift: str = ""
    """``transfer``'s warning on the setup's drift ('' when it does not drift): the report replaces it with what
    the target's measurement says (``drift_advice``)."""
    slope: Optional[float] = None
    """The setup's slope across width, octaves of LR per doubling."""


SHIPPED = "_shipped"
"""The suffix of the setup that trains a target with its shipped constants, beside the tuned ones."""


def parse_widths(text: str) -> tuple[int, ...]:
    """``--width 512`` or ``--width 256,512``."""
    widths = []
    for item in (part.strip() for part in text.split(",")):
        try:
            width = int(item)
        except ValueError:
            raise UserError(f"--width {text}: '{item}' is not a width", "give positive integers, e.g. --width "
                            "256,512") from None
        if width <= 0:
            raise UserError(f"--width {text}: {width} must be positive", "give the target width, e.g. --width 512")
        widths.append(width)
    return tuple(sorted(set(widths)))


def parse_factors(text: str) -> tuple[float, ...]:
    try:
        factors = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--factors {text} must be comma-separated numbers", "e.g. --factors 0.5,1,2") from None
    if len(factors) < 2 or any(not math.isfinite(f) or f <= 0 for f in factors):
        raise UserError(f"--factors {text} needs two or more positive numbers", "e.g. --factors 0.5,1,2")
    return tuple(sorted(set(factors)))


def parse_setups(text: Optional[str], run_dir: Path) -> Optional[tuple[str, ...]]:
    """``--setup``: None (transfer's choice), ``all`` (every setup with an estimate), or labels, comma-separated."""
    if text is None:
        return None
    known = [label for label, setup in summarize_run(run_dir).setups().items() if setup.line.estimated()]
    if text == ALL_SETUPS:
        return tuple(known)
    labels = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    for label in labels:
        if label not in known:
            raise UserError(f"unknown setup '{label}'", f"choose from: {', '.join(known)}, or --setup all")
    return labels


def verify_decay_search(base: SearchSpec, p: float) -> SearchSpec:
    """The target's decay search, at the target's measured LR optimum: the sweep's own step, two steps each side
    of the predicted decay p (log2 scales, on the lattice of multiples of the step; a linear grid as swept), p and
    decay off trained with every seed."""
    if base.scale != "log2":
        return replace(base, at="optimum", anchors=tuple(dict.fromkeys((*base.anchors, round(p, 10)))))
    step = base.step
    low, high = step * round(p / step - 2), step * round(p / step + 2)
    return replace(base, min=round(low, 10), max=round(high, 10), at="optimum", extend=True,
                   anchors=(OFF_X, round(p, 10)))


def verify_search(base: SearchSpec, p: float, request: VerifyRequest) -> SearchSpec:
    """The target's search: the lattice grid ±span around p with p as an anchor, or (``--factors``) p + log2 f."""
    if request.factors:
        points = tuple(round(p + math.log2(f), 10) for f in request.factors)
        return replace(base, key=LR_KEY, scale="log2", min=points[0], max=points[0], step=request.step,
                       sampler="grid", pruner="none", n_trials=None, extend=False, noise_seeds=0, anchors=points)
    step = request.step
    low, high = step * round((p - request.span) / step), step * round((p + request.span) / step)
    return replace(base, key=LR_KEY, scale="log2", min=round(low, 10), max=round(high, 10), step=step, sampler="grid",
                   pruner="none", n_trials=None, extend=True, extend_max=max(base.extend_max, step),
                   anchors=(round(p, 10),))


class Verification:
    """One verify request against one sweep: its targets, the specs that train them, and the report."""

    def __init__(self, run_dir: Path, request: VerifyRequest) -> None:
        if request.span < request.step * (MIN_GRID_POINTS - 1) / 2:
            raise UserError(f"--span {request.span:g} is less than --step {request.step:g}: the grid ±span around the "
                            f"predicted η* can hold fewer than {MIN_GRID_POINTS} points",
                            "give a span of at least one step, e.g. --span 1.5 --step 0.5")
        self.run_dir, self.request = run_dir, request
        self.sweep = spec_from_dict(read_sweep_record(run_dir)["spec"])
        self.targets = [self._target(width, setup) for width in request.widths
                        for setup in (request.setups if request.setups is not None else (None,))]

    def _target(self, width: int, setup: Optional[str]) -> Target:
        r = self.request
        transfer = make_transfer(self.run_dir, width, setup, r.correct_drift, depth=r.depth, steps=r.steps,
                                 batch_size=r.batch_size, tokens=r.tokens, sections=False)
        label = transfer.source.setup
        base = next((s for s in self._setup(label).search if s.key == LR_KEY), SearchSpec())
        search = verify_search(base, transfer.prediction.log2_lr, self.request)
        swept = transfer.source.asymmetry
        decay, decay_search = transfer.decay, None
        if decay is not None and not self.request.factors:
            sweep_decay = next(s for s in self._setup(label).search if s.key == decay.key)
            decay_search = verify_decay_search(sweep_decay, decay.prediction.log2_lr)
        constants = tuple(f"{c.key}={c.value}" for c in transfer.constants if c.applied)
        return Target(label, width, transfer.prediction, search, tuple(transfer.warnings), transfer.config, swept,
                      decay if decay_search is not None else None, decay_search, constants, transfer.drift,
                      transfer.source.slope)

    def _setup(self, label: str) -> SetupSpec:
        return next(s for s in self.sweep.setups if s.label == label)

    def point_overrides(self) -> tuple[str, ...]:
        """``model.depth``, ``train.batch_size`` and the horizon (``train.steps``, or ``train.tokens`` for a budget)
        of the target: set when the sweep swept that axis or the request names it (a width-only verify keeps the
        sweep's overrides, and its study names, as they were)."""
        r, sweep = self.request, self.sweep
        budget = r.tokens is not None or (sweep.hold == "tokens" and r.steps is None)
        out = []
        for key, values, wanted in (("model.depth", sweep.listed("depth"), r.depth),
                                    ("train.batch_size", sweep.listed("batch"), r.batch_size),
                                    ("train.tokens", sweep.listed("tokens") if budget else (), r.tokens),
                                    ("train.steps", sweep.listed("steps"), r.steps)):
            if wanted is not None or values:
                out.append(f"{key}={wanted if wanted is not None else values[0]}")
        return tuple(out)

    @property
    def prefix(self) -> str:
        """Study names' prefix: apart from the sweep's own, and per set of extra overrides and target depth and
        horizon (another experiment)."""
        extra = (*self.point_overrides(), *self.request.overrides)
        tag = hashlib.sha256("\n".join(extra).encode()).hexdigest()[:8]
        return f"verify-{self.sweep.name}" + (f"-{tag}" if extra else "")

    def specs(self) -> list[SweepSpec]:
        """One spec per target width: each target's setup with its own search, the sweep's first seed."""
        out = []
        for width in self.request.widths:
            targets = [t for t in self.targets if t.width == width]
            setups = tuple(SetupSpec(t.setup, (*self._setup(t.setup).overrides, *t.constants),
                                     (t.search, *((t.decay_search,) if t.decay_search is not None else ())),
                                     self._setup(t.setup).trainer)
                           for t in targets)
            setups += tuple(SetupSpec(t.setup + SHIPPED, self._setup(t.setup).overrides, (t.search,),
                                      self._setup(t.setup).trainer) for t in targets if t.constants)
            out.append(SweepSpec(name=f"{self.sweep.name}-verify", setups=setups, values=AxisValues.of({"width": [width]}),
                                 seeds=(self.sweep.seeds[0],),
                                 overrides=(*self.sweep.overrides, *self.point_overrides(), *self.request.overrides),
                                 batch_trials=self.sweep.batch_trials, model=self.sweep.model,
                                 trainer=self.sweep.trainer))
        return out

    def report(self, rows: pd.DataFrame) -> dict[str, Any]:
        """verify.json: per target the prediction, the measured optimum, error and regret (or the factors)."""
        r = self.request
        entries = [self._factors(t, rows) if r.factors else self._fidelity(t, rows) for t in self.targets]
        return {"mutransfer_verify": VERIFY_VERSION, "run_dir": str(self.run_dir), "prefix": self.prefix, "mode": "factors" if r.factors else "measure",
                "tolerance": r.tolerance, "span": r.span, "step": r.step, "correct_drift": r.correct_drift,
                "overrides": list(r.overrides), "passed": all(e["passed"] for e in entries), "targets": entries}

    def _rows(self, target: Target, rows: pd.DataFrame, key: str = LR_KEY) -> pd.DataFrame:
        return rows[(rows["setup"] == target.setup) & (rows["width"] == target.width) & (rows["search_key"] == key)]

    def _fidelity(self, target: Target, rows: pd.DataFrame) -> dict[str, Any]:
        part = self._rows(target, rows)
        p = target.prediction.log2_lr
        fidelity = measure_fidelity(target.width, part[LR_COLUMN].to_numpy(float), part["seed"].to_numpy(),
                                    part["val_loss"].to_numpy(float), part["status"].to_numpy(str), p,
                                    self.sweep.seeds[0], self.request.step, swept=target.asymmetry)
        interval = target.prediction.interval
        x_star = fidelity.measured.x_star if fidelity.measured else math.nan
        covered = interval is not None and interval[0] <= x_star <= interval[1]
        passed = fidelity.within(self.request.tolerance)
        decay = {"decay": self._decay_fidelity(target, rows)} if target.decay is not None else {}
        constants = {"constants": self._constants(target, rows, fidelity)} if target.constants else {}
        warnings = [drift_advice(target, fidelity, self.request) if w == target.drift else w
                    for w in target.warnings]
        return {"setup": target.setup, "width": target.width, "prediction": target.prediction.as_dict(),
                **fidelity.as_dict(), "passed": passed, "covered": covered, "trials": len(part),
                "grid": [target.search.min, target.search.max], **decay, **constants, "warnings": warnings}

    def _constants(self, target: Target, rows: pd.DataFrame, tuned: Fidelity) -> dict[str, Any]:
        """What the tuned constants bought at the target: the best loss with the shipped constants (its own optimum
        on the same grid) minus the best loss with the tuned ones, with Welch's 95 % interval from the seeds."""
        shipped_target = replace(target, setup=target.setup + SHIPPED)
        part = self._rows(shipped_target, rows)
        shipped = measure_fidelity(target.width, part[LR_COLUMN].to_numpy(float), part["seed"].to_numpy(),
                                   part["val_loss"].to_numpy(float), part["status"].to_numpy(str),
                                   target.prediction.log2_lr, self.sweep.seeds[0], self.request.step,
                                   swept=target.asymmetry)
        a, b = shipped.measured, tuned.measured
        gain = ci = None
        if a is not None and b is not None:
            gain = float(a.best_loss - b.best_loss)
            found = welch_difference(np.asarray(b.seed_best_losses, float), np.asarray(a.seed_best_losses, float),
                                     gain)
            ci = None if found is None else [float(found[0]), float(found[1])]
        verdict = ("unmeasured" if ci is None else "tuning paid" if ci[0] > 0 else
                   "tuning cost" if ci[1] < 0 else "no difference")
        return {"overrides": list(target.constants), "shipped_trials": int(len(part)),
                "shipped_log2_lr": a.x_star if a is not None else None,
                "shipped_best_loss": a.best_loss if a is not None else None,
                "tuned_best_loss": b.best_loss if b is not None else None,
                "gain": gain, "gain_ci": ci, "verdict": verdict}

    def _decay_fidelity(self, target: Target, rows: pd.DataFrame) -> dict[str, Any]:
        """The decay measured at the target's LR optimum against the predicted one: error and regret as for the
        LR (log2 units on a log2 grid), and the best decay's loss against decay off's."""
        assert target.decay is not None and target.decay_search is not None
        search, p = target.decay_search, target.decay.prediction.log2_lr
        part = self._rows(target, rows, search.key)
        values = part[search.key].to_numpy(float)
        off = values == DECAY_OFF_VALUES[search.key]
        with np.errstate(divide="ignore"):
            x = np.log2(values) if search.scale == "log2" else values
        keep = ~off & np.isfinite(x)
        fidelity = measure_fidelity(target.width, x[keep], part["seed"].to_numpy()[keep],
                                    part["val_loss"].to_numpy(float)[keep], part["status"].to_numpy(str)[keep], p,
                                    self.sweep.seeds[0], search.step)
        interval = target.decay.prediction.interval
        x_star = fidelity.measured.x_star if fidelity.measured else math.nan
        entry = fidelity.measured.result() if fidelity.measured else PointResult(target.width, None, None)
        off_losses = part.loc[off & (part["status"] == TrialStatus.OK).to_numpy()].groupby("seed")["val_loss"].mean()
        effect = decay_effect(entry, off_losses.to_numpy(float))
        return {"key": search.key, "log2": search.scale == "log2", "prediction": target.decay.prediction.as_dict(),
                **fidelity.as_dict(), "covered": interval is not None and interval[0] <= x_star <= interval[1],
                "passed": fidelity.within(self.request.tolerance), "trials": int(len(part)),
                "lr": float(part["lr"].iloc[0]) if len(part) else None,
                "off_loss": effect.off_loss, "off_seed_losses": effect.off_seed_losses, "effect": effect.effect,
                "effect_ci": list(effect.effect_ci) if effect.effect_ci else None, "decay_effect": effect.verdict}

    def _factors(self, target: Target, rows: pd.DataFrame) -> dict[str, Any]:
        part = self._rows(target, rows)
        part = part[part["seed"] == self.sweep.seeds[0]]
        p = target.prediction.log2_lr
        points = []
        for factor, x in zip(self.request.factors or (), target.search.anchors):
            hit = part[(part[LR_COLUMN] - x).abs() < 1e-6]
            loss = float(hit["val_loss"].iloc[0]) if len(hit) else math.nan
            points.append({"factor": factor, LR_COLUMN: x, "val_loss": loss,
                           "status": str(hit["status"].iloc[0]) if len(hit) else "missing"})
        middle = min(points, key=lambda e: abs(math.log2(e["factor"])))
        others = [e["val_loss"] for e in points if e is not middle and math.isfinite(e["val_loss"])]
        margin = min(others) - middle["val_loss"] if others and math.isfinite(middle["val_loss"]) else math.nan
        return {"setup": target.setup, "width": target.width, "prediction": target.prediction.as_dict(),
                "predicted_log2_lr": p, "factors": points, "middle": middle["factor"], "margin": margin,
                "passed": bool(margin > 0), "warnings": list(target.warnings)}


def drift_advice(target: Target, fidelity: Fidelity, request: VerifyRequest) -> str:
    """What a drifting setup's measurement at the target says: how far the verified η* (plain, or moved along the
    fitted slope by ``--correct-drift``) measured off, against verify's ``--tolerance``; the fix where it missed."""
    kind = "drift-corrected" if request.correct_drift else "plain"
    slope = f" ({target.slope:+.2f} octaves of LR per width doubling)" if target.slope is not None else ""
    head = f"setup '{target.setup}' drifts{slope}"
    if fidelity.measured is None or not math.isfinite(fidelity.error):
        return (f"{head}; the optimum at width {target.width} was not measured ({fidelity.note or 'no estimate'}), so "
                f"how far the {kind} η* is off there is unknown")
    ci = fidelity.error_ci
    found = (f"{head}; measured at width {target.width}, the {kind} η* is off by {fidelity.error:+.2f} octaves"
             + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
             + (" (a bound: the optimum is at the grid's edge)" if fidelity.measured.censored else ""))
    if abs(fidelity.error) <= request.tolerance:
        return f"{found}, within verify's --tolerance {request.tolerance:g}"
    fix = ("--correct-drift applies the fitted slope" if not request.correct_drift else
           "the fitted slope does not carry this far: sweep widths nearer the target")
    return f"{found}, more than verify's --tolerance {request.tolerance:g}; {fix}"


def write_outputs(run_dir: Path, rows: pd.DataFrame, document: dict[str, Any]) -> pd.DataFrame:
    """verify.csv keeps every verified point (this run's studies replace their own earlier rows); verify.json
    is this run's report. Returns the whole verify.csv table."""
    path = run_dir / VERIFY_FILE
    table = rows
    if path.is_file():
        try:
            old = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
            raise UserError(f"{path} is not a CSV table", "move it aside and run verify again") from None
        if "study" in old.columns:
            old = old[~old["study"].isin(set(rows["study"]))]
        table = pd.concat([old, rows], ignore_index=True) if not old.empty else rows
    atomic_write_text(path, table.to_csv(index=False))
    write_json(run_dir / VERIFY_REPORT, document)
    return table

