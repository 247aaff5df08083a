"""What ``transfer`` warns about before its η* is trusted at the target: the width's drift and range, each other axis
moved from the swept point (measured by the sweep, or assumed: the table's depth rule, the kept horizon, the kept
value of any other registered axis), and the batch."""

from __future__ import annotations

import math

from ..analysis.narrowing import why_inconclusive
from ..analysis.prediction import Prediction, carried_law
from ..analysis.result import SetupResult
from ..schema import FAMILIES, TRANSFER_AXES, Config, axis_named
from ..sweep.plan.trial import axis_value
from ..table.rules import depth_exponents
from ..train.budget import tokens_read
from ..words import Verdict
from .batch import batch_warnings

__all__ = ["SHAPED_AXES", "FAR_FACTOR", "target_warnings", "drift_warning", "setup_warnings", "axis_warnings",
           "assumed_horizon", "assumed_depth_rule", "assumed_value", "implied_error"]

FAR_FACTOR = 64
"""A target more than this many times the largest swept value on an axis is warned about."""
SHAPED_AXES = ("width", "depth", "steps", "batch", "tokens")
"""The axes whose target the transfer builds itself: the model's shape, and the batch with the horizon
(``batch.target_horizon``). Any other registered axis's target is set through its config key."""


def target_warnings(label: str, info: SetupResult, base: Config, cfg: Config, target: dict[str, int],
                     prediction: Prediction, drift: str, builtin: bool) -> list[str]:
    """What to know before training at ``target``: the width's drift (``drift``), and each other axis moved from
    the swept point — measured by the sweep (its verdict) or assumed (the built-in model's rule carried without a
    measurement; for a trainer command's own model, the LR kept)."""
    others = [axis.name for axis in TRANSFER_AXES if axis.name not in SHAPED_AXES and axis.config_key]
    swept = {"depth": base.model.depth, "steps": base.train.steps, "batch": base.train.batch_size,
             "tokens": tokens_read(base.train), **{name: axis_value(base, axis_named(name)) for name in others}}
    law = carried_law(info)
    measured = law.axes if law is not None else []
    warnings = setup_warnings(label, info, prediction, drift)
    for name in ("depth", "tokens" if base.train.tokens is not None else "steps", "batch", *others):
        if target[name] == swept[name]:
            continue
        if name in measured:
            warnings += axis_warnings(label, info, name, target[name], swept[name], name in prediction.applied)
        elif name == "depth":
            warnings.append(assumed_depth_rule(cfg, swept["depth"]) if builtin else
                            assumed_horizon(name, target[name], swept[name]))
        elif name in others:
            warnings.append(assumed_value(name, target[name], swept[name]))
        elif name != "batch":
            warnings.append(assumed_horizon(name, target[name], swept[name]))
    return warnings + batch_warnings(label, info, target["batch"], swept["batch"], target["tokens"], "batch" in measured)


def drift_warning(label: str, info: SetupResult, prediction: Prediction, correct_drift: bool) -> str:
    """The warning on a setup that drifts ('' for one that does not): how far the plain η* is expected off at the
    target, or, with ``--correct-drift``, how far the fitted slope moved it there."""
    if info.verdict != Verdict.DRIFTS or info.line.slope is None:
        return ""
    head = f"setup '{label}' drifts ({info.line.slope:+.2f} octaves of LR per width doubling)"
    shift = info.line.slope * prediction.doublings
    if correct_drift:
        return (f"{head}: --correct-drift moved η* {shift:+.2f} octaves along the fitted line to width "
                f"{prediction.width}; verify measures how far it is off there")
    return (f"{head}: expect the optimum at width {prediction.width} to be off by about {abs(shift):.1f} octaves; "
            "--correct-drift applies the fitted slope")


def setup_warnings(label: str, info: SetupResult, prediction: Prediction, drift: str) -> list[str]:
    """What a user should know before trusting the transferred η* at the target width."""
    warnings = []
    width, largest = prediction.width, max(int(w) for w in info.line.points)
    if not prediction.within_tolerance:
        span = f"reaches {prediction.half_width:.2f} octaves from η*" if prediction.half_width is not None else \
            "is unknown"
        warnings.append(f"the predicted range at width {width} {span}, wider than transfer's --tolerance "
                        f"{prediction.tolerance:g}: {prediction.narrow}")
    if drift:
        warnings.append(drift)
    if info.verdict == Verdict.INCONCLUSIVE and info.reason:
        reason, fix = why_inconclusive(info, info.first_axis)
        warnings.append(f"setup '{label}' is inconclusive: {reason}; {fix}")
    if width > FAR_FACTOR * largest:
        warnings.append(f"width {width} is more than {FAR_FACTOR}× the largest swept width {largest}")
    return warnings


def axis_warnings(label: str, info: SetupResult, name: str, value: int, swept: int, applied: bool) -> list[str]:
    """What a measured axis (depth, the horizon, any registered one) says about carrying η* from the swept base
    point to ``value``."""
    assert info.law is not None
    entry = info.axes.get(name)
    slope = info.law.coefficients[name]
    largest = max((int(v) for v in entry.points), default=swept) if entry is not None else swept
    verdict = entry.verdict if entry is not None else None
    moved = slope * math.log2(value / swept)
    warnings = []
    if applied:
        warnings.append(f"setup '{label}': the fitted {name} slope ({slope:+.2f} octaves of LR per doubling) is "
                        f"applied, moving η* by {moved:+.2f} octaves from {name} {swept} to {value}" +
                        ("" if verdict == Verdict.TRANSFERS else f" ({name} axis {verdict or 'not measured'})"))
    if entry is not None and entry.verdict == Verdict.INCONCLUSIVE and entry.reason:
        reason, fix = why_inconclusive(info, name)
        warnings.append(f"setup '{label}' is inconclusive across {name}: {reason}; {fix}")
    if value > FAR_FACTOR * largest:
        warnings.append(f"{name} {value} is more than {FAR_FACTOR}× the largest swept {name} {largest}")
    return warnings


def assumed_horizon(name: str, value: int, swept: int) -> str:
    """The warning for a horizon (``steps``, or a budget of ``tokens``) the sweep did not measure."""
    return (f"{name} {value} differs from the swept horizon {swept}: the LR is kept — assumed, not measured; the "
            f"optimum usually falls as training gets longer (sweep {name}: [...] to measure it), and the predicted "
            f"range has no {name} term")


def assumed_value(name: str, value: float, swept: float) -> str:
    """The warning for a target on a registered axis the sweep did not vary."""
    return (f"{name} {value:g} differs from the swept {name} {swept:g}: the LR is kept — assumed, not measured "
            f"(sweep {axis_named(name).plural}: [...] to measure it), and the predicted range has no {name} term")


def assumed_depth_rule(cfg: Config, swept: int) -> str:
    """The warning for a target depth the sweep did not measure: the table's rule stands in for a measurement."""
    alpha, depth = cfg.parametrization.depth_alpha, cfg.model.depth
    head = f"depth {depth} differs from the swept depth {swept}: "
    tail = " — assumed, not measured; the predicted range has no depth term (sweep depths to measure it)"
    if not alpha:
        return head + "parametrization.depth_alpha=0 scales nothing with depth, so every LR is the swept one" + tail
    rules = depth_exponents(FAMILIES.named(cfg.optimizer.name), alpha)
    ratio = depth / cfg.parametrization.base_depth
    return (head + f"the table's depth rule (depth_alpha={alpha:g}, m_L={ratio:g}: in-block LR × m_L^{rules.lr:+g} "
            f"= {ratio ** rules.lr:.4g}, residual branches × {ratio ** rules.branch:.4g}) is applied" + tail)


def implied_error(info: SetupResult, prediction: Prediction) -> float:
    """Octaves the LR is off at the target if the fitted drift is real and left uncorrected."""
    slope = info.line.slope
    return abs(slope * prediction.doublings) if slope is not None else math.nan
