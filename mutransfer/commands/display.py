"""Rich renderables for the CLI: sweep progress (a live display on a terminal, one line per finished trial in a
log) and the optimum/verdict table. Presentation only."""

from __future__ import annotations

import math
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, ContextManager, Optional, Sequence

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..analysis.cells import format_interval
from ..analysis.levels import VERDICT_LEVEL, constant_interval, decay_interval, point_interval, slope_interval
from ..analysis.narrowing import why_inconclusive
from ..analysis.result import Law, PointResult, SetupResult, Summary, point_key
from ..analysis.thresholds import Thresholds
from ..defaults import INTERVAL_LEVEL, INTERVAL_LEVELS
from ..schema import LR_KEY, axis_named
from ..analysis.plots import key_label
from ..table.constants import constant_keys
from ..table.decay import DECAY_OFF_VALUES
from ..sweep.spec.search import OFF_X
from ..words import Verdict

if TYPE_CHECKING:  # the sweep runner imports optuna: only its types here
    from ..sweep.run.runner import FinishedTrial, Snapshot
    from ..sweep.plan.sweep_plan import SweepPlan
    from .log_eta import LogEta

__all__ = ["SweepDisplay", "TrialLog", "progress_view", "trial_lines", "trial_line", "summary_table", "summary_tables",
           "verdict_notes", "provisional_line", "PROVISIONAL_MARK", "law_line", "answer_lines", "flags_text",
           "failure_fix", "FITTED_LOSS"]

PROVISIONAL_MARK = "provisional"
"""How a log line carrying the answer so far begins (the trial lines begin with their count)."""
FITTED_LOSS = "best loss (fitted)"
"""The table's column of each point's fitted minimum of the seeds' mean curve (it can lie below every trial)."""


class SweepDisplay:
    """Overall progress (trials done / total, ETA), the trials running now, the best loss per width so far."""

    def __init__(self, total: int = 0) -> None:
        self.progress = Progress(TextColumn("[bold]sweep"), BarColumn(), TextColumn("{task.completed}/{task.total} trials"),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        self.task = self.progress.add_task("sweep", total=total)
        self.running: list[str] = []
        self.answer = ""
        """The latest provisional answer's line (``provisional_line``) and the setups stopped when decided."""
        self.best: dict[tuple[str, str], float] = {}
        """Best loss per (setup, point), the point as ``StudyKey.where`` writes it (``w64`` or ``w64 d8``)."""
        self.started = time.monotonic()

    def update(self, snap: Snapshot) -> None:
        self.progress.update(self.task, completed=snap.done, total=snap.total)
        self.running, self.best = snap.running, snap.best
        if snap.provisional is not None:
            self.answer = provisional_line(snap.provisional.summary)
        if snap.stops:
            self.answer = "\n".join([self.answer.split("\n")[0], *(stop.line() for stop in snap.stops.values())])

    def __rich__(self) -> Group:
        table = Table(title="best validation loss so far (fitted minimum of the seeds' mean curve)", show_edge=False,
                      pad_edge=False)
        setups = sorted({s for s, _ in self.best})
        widths = sorted({w for _, w in self.best}, key=_point_order)
        table.add_column("setup")
        for w in widths:
            table.add_column(w, justify="right")
        for setup in setups:
            table.add_row(setup, *[f"{self.best[(setup, w)]:.4f}" if (setup, w) in self.best else "-" for w in widths])
        running = "running: " + ("; ".join(self.running[:4]) if self.running else "-")
        return Group(self.progress, running, table, *([self.answer] if self.answer else []))


def progress_view(screen: Console, plan: Optional[SweepPlan] = None,
                  workers: int = 1) -> tuple[SweepDisplay | TrialLog, ContextManager[Optional[Live]]]:
    """A sweep's progress on ``screen`` (its ``update`` takes each snapshot) and the context to run the sweep in:
    a live display on a terminal, one line per finished trial otherwise (with an ETA line when ``plan`` is given,
    its trials trained by ``workers``)."""
    if screen.is_terminal:
        display = SweepDisplay()
        return display, Live(display, console=screen, refresh_per_second=2, transient=False)
    from .log_eta import LogEta, planned_widths

    return TrialLog(screen, LogEta(planned_widths(plan), workers) if plan is not None else None), nullcontext()


class TrialLog:
    """Progress off a terminal: one plain line per trial as it finishes (no live frames, no colour). The first
    snapshot, taken before any training, is the baseline: trials finished by earlier runs are not listed. The
    answer so far gets a line of its own (``provisional_line``) when what it rests on or says moves: a width or a
    width's noise probes added, a verdict, or a slope at one decimal. With ``eta``, an ETA line follows a finished
    trial at most once a minute (``log_eta``)."""

    def __init__(self, screen: Console, eta: Optional[LogEta] = None) -> None:
        self.screen = screen
        self.eta = eta
        self.last: Optional[Snapshot] = None
        self.said: Optional[tuple[object, ...]] = None

    def update(self, snap: Snapshot) -> None:
        lines = trial_lines(self.last, snap) if self.last is not None else []
        eta = self.eta.line(snap) if lines and self.eta is not None else None
        lines += [eta] if eta else []
        if not lines and self.last is not None and snap.done == snap.total != self.last.total:
            lines = [f"{snap.done}/{snap.total} trials done (the policies needed fewer than their budget)"]
        if snap.provisional is not None and _milestone(snap.provisional.summary) != self.said:
            self.said = _milestone(snap.provisional.summary)
            lines.append(provisional_line(snap.provisional.summary))
        seen = self.last.stops if self.last is not None else {}
        lines += [f"{PROVISIONAL_MARK}: {stop.line()}" for label, stop in snap.stops.items() if label not in seen]
        for line in lines:
            self.screen.print(line, markup=False, highlight=False, soft_wrap=True)
        self.last = snap


def trial_lines(before: Optional[Snapshot], after: Snapshot) -> list[str]:
    """The log lines of the trials in snapshot ``after`` that were not finished in ``before`` (None: none were),
    each with the count of finished trials once it is in: the last line's count is ``after.done``."""
    seen = {(t.study, t.number) for t in before.finished} if before is not None else set()
    new = [t for t in after.finished if (t.study, t.number) not in seen]
    first = after.done - len(new)
    return [trial_line(trial, first + i + 1, after.total) for i, trial in enumerate(new)]


def trial_line(trial: FinishedTrial, count: int, total: int) -> str:
    """``12/40 · mup_muon · width 64 · seed 0 · log2_lr -6.00 (lr 0.0156) · loss 4.1234 · ok · 3.21 s``."""
    lr = f" (lr {trial.lr:.4g})" if isinstance(trial.lr, (int, float)) else ""
    seconds = f"{trial.seconds:.2f} s" if trial.seconds is not None else "- s"
    x = "off" if trial.x == OFF_X else f"{trial.x:.2f}"
    return " · ".join([f"{count:>{len(str(total))}}/{total}", trial.setup, trial.point, f"seed {trial.seed}",
                       f"{trial.column} {x}{lr}", f"loss {_number(trial.loss, 4)}", trial.status, seconds])


def _milestone(summary: Summary) -> tuple[object, ...]:
    """What a provisional log line is printed for: the basis's widths and noise widths, each setup's verdict and
    its slope at one decimal."""
    basis = summary.provisional
    fits = [(label, result.judged("width")) for label, result in summary.setups().items()]
    return ((basis.widths, basis.noise_widths) if basis is not None else (),
            *((label, fit.verdict, None if fit.slope is None else round(fit.slope, 1)) for label, fit in fits))


def provisional_line(summary: Summary) -> str:
    """``provisional (widths 32, 64; 20/67 trials; noise not measured yet): sp_adamw drifts, slope -1.17
    [-1.93, -0.41]; mup_muon inconclusive, slope -0.07 [-0.30, +0.16]`` (a setup with one width: its optimum)."""
    basis = f" ({summary.provisional.line()})" if summary.provisional is not None else ""
    parts = []
    for label, result in summary.setups().items():
        fit = result.judged("width")
        if fit.slope is not None and fit.slope_ci is not None:
            parts.append(f"{label} {fit.verdict}, slope {fit.slope:+.2f} {format_interval(fit.slope_ci)}")
        else:
            optima = ", ".join(f"w{point_key(p)} {o.x_star:.2f}" for p, o in sorted(fit.points.items())
                               if o.x_star is not None)
            parts.append(f"{label} log2 LR* {optima or '-'}")
    return f"{PROVISIONAL_MARK}{basis}: " + ("; ".join(parts) or "no optimum yet")


def _point_order(where: str) -> tuple[int, ...]:
    """``w64 d8`` → (64, 8): points ordered by their numbers, not as text."""
    return tuple(int("".join(c for c in tag if c.isdigit()) or 0) for tag in where.split())


def _number(value: Optional[float], digits: int) -> str:
    return f"{value:.{digits}f}" if value is not None else "-"


def summary_table(summary: Summary, title: str = "", axis: str = "width", key: str = LR_KEY,
                  level: int = INTERVAL_LEVEL, level_option: str = "") -> Table:
    """setup × width (or depth, ``axis``) → log2 of the key's optimum (LR* by default), interval (confidence, or a
    resolution bound with one seed), the fitted best loss, flags (a decay key: the best decay's loss minus decay
    off's, and its ``decay_effect``); then each setup's slope and verdict. Every interval is at ``level`` %, which
    the title and the caption name; ``level_option``: the option that prints the other level ('' : none)."""
    name = key_label(key)[0]
    setups = summary.setups(key)
    decay = key in DECAY_OFF_VALUES
    constant = key in constant_keys()
    effect_column = "vs decay off" if decay else "vs factor 1" if constant else None
    status = summary.status or {}
    partial = status.get("complete") is False
    table = Table(title=(title or f"optimal {'learning rate' if key == LR_KEY else key} per {axis}")
                  + f" ({level} % intervals)" + (f" — partial: {status.get('line')}" if partial else ""))
    columns = ("setup", axis, f"log2 {name}*", "interval", FITTED_LOSS, *((effect_column,) if effect_column else ()),
               "flags", "slope / doubling", "verdict")
    for column in columns:
        table.add_column(column, justify="right" if column not in ("setup", "flags", "verdict", effect_column)
                         else "left", no_wrap=column == effect_column)
    colors = {Verdict.TRANSFERS: "green", Verdict.DRIFTS: "red", Verdict.INCONCLUSIVE: "yellow"}
    for setup, result in setups.items():
        if axis not in result.axes:
            continue
        info = result.judged(axis)
        slope = info.slope
        slope_text = (f"{slope:+.2f} {format_interval(slope_interval(info, level))}"
                      if slope is not None and math.isfinite(slope) else "-")
        verdict = info.verdict
        for i, (point, opt) in enumerate(sorted(info.points.items())):
            kind = " (res.)" if opt.ci_kind == "resolution" else ""
            effect = (f"{_number(opt.decay.effect, 3)} {format_interval(decay_interval(opt, level), '+.3f')} "
                      f"{opt.decay.verdict}",) if decay and opt.decay is not None else ("",) if decay else ()
            if constant:
                effect = (f"gain {_number(opt.constant.gain, 3)} "
                          f"{format_interval(constant_interval(opt, level), '+.3f')} {opt.constant.verdict}"
                          if opt.constant is not None else "",)
            table.add_row(setup if i == 0 else "", point_key(point), _number(opt.x_star, 2),
                          format_interval(point_interval(opt, level)) + kind, _number(opt.best_loss, 4), *effect,
                          flags_text(opt), slope_text if i == 0 else "",
                          f"[{colors.get(verdict, 'white')}]{verdict}[/]" + (" (partial)" if partial else "")
                          if i == 0 else "")
        table.add_section()
    res = ("(res.): no seeds, the fit's resolution bound widened by the between-point scatter "
           f"({'calibrated' if summary.noise.calibrated else 'UNCALIBRATED'}: summary.json's noise)"
           if summary.noise is not None and summary.noise.method == "residuals" else
           "(res.): one seed, a grid-resolution bound, not a confidence interval")
    notes = {"vs decay off": "; vs decay off: the best decay's loss minus decay off's, with Welch's interval from "
                             "the seeds (its verdict reads the 95 % one)",
             "vs factor 1": "; x: log2 of the factor on the shipped value; vs factor 1: the loss gained over the "
                            "shipped value, with Welch's interval from the seeds (matters: its 95 % interval beyond "
                            "the noise and --effect-margin)"}
    judged_by_law = [label for label, result in setups.items() if result.primary == "law" and axis in result.axes]
    cut = ""
    if judged_by_law:
        at = setups[judged_by_law[0]].axes[axis].at or {}
        where = ", ".join(f"{name} {value:g}" for name, value in at.items())
        cut = (f"; judged by the law over every point: the slope and verdict are the law's, the points those along "
               f"{axis} at {where}" if where else "")
    table.caption = (_levels_caption(level, level_option) + f"; {FITTED_LOSS}: the minimum of the parabola fitted to "
                     "the seeds' mean curve, which can lie below every trial's loss; " + res
                     + notes.get(effect_column or "", "") + cut)
    return table


def _levels_caption(level: int, option: str) -> str:
    """The caption's first clause: the table's level, the other one on request, and the level the verdict reads."""
    other = next(other for other in INTERVAL_LEVELS if other != level)
    request = f" ({option} {other} for {other} %)" if option else ""
    verdict = "the slope's interval" if level == VERDICT_LEVEL else f"the slope's {VERDICT_LEVEL} % interval"
    return (f"every interval is {level} %{request}: an optimum's from the seeds' spread, the slope's from the "
            f"line's fit; the verdict reads {verdict}: transfers inside ±{Thresholds().transfer_slope:g}, drifts "
            "wholly beyond")


def flags_text(point: PointResult) -> str:
    """A point's flags and its failed trials: ``edge_of_grid:high, 3 failed``, ``all 5 failed``, or ``-``."""
    flags = [flag for flag in point.flags if flag != "all_failed"]
    if point.failed:
        flags.append(f"all {point.failed} failed" if "all_failed" in point.flags else f"{point.failed} failed")
    elif "all_failed" in point.flags:
        flags.append("all_failed")
    return ", ".join(flags) or "-"


def summary_tables(summary: Summary, axes: Sequence[str]) -> list[Table]:
    """``summary_table`` along each of ``axes`` (an import's: any axis names)."""
    return [summary_table(summary, axis=axis) for axis in axes]


def failure_fix(command: str = "") -> str:
    """What to do about trials that failed (not the grid: a failed trial says nothing about its learning rate),
    with the ``command`` that resumes the sweep when known."""
    rerun = f"run `{command} --retry-failed`" if command else "rerun the sweep with --retry-failed"
    return f"fix the failures (trials.csv's message, each trial's stderr.log under trials/), then {rerun}"


def verdict_notes(summary: Summary, axis: str = "width", level: int = INTERVAL_LEVEL) -> list[str]:
    """One line per setup that is not decided on ``axis``: why (a slope's interval at ``level`` %, as the table
    shows it), and what would decide it (``narrowing.why_inconclusive``, as ``transfer`` says it; where every
    trial of the points without a result failed: the failures, not the grid)."""
    where = "" if axis == "width" else f" across {axis}"
    setups = {label: result for label, result in summary.setups().items() if axis in result.axes}
    notes = []
    for setup, result in setups.items():
        info = result.judged(axis)
        if info.verdict != Verdict.INCONCLUSIVE or not info.reason:
            continue
        missing = [point for point, opt in sorted(info.points.items()) if opt.x_star is None]
        if missing and all("all_failed" in info.points[point].flags for point in missing):
            names = ", ".join(point_key(point) for point in missing)
            notes.append(f"{setup}: inconclusive{where} — every trial failed at {axis_named(axis).plural} {names}; "
                         f"{failure_fix()}")
        else:
            reason, fix = why_inconclusive(result, axis, level)
            notes.append(f"{setup}: inconclusive{where} — {reason}; {fix}")
    return notes


def law_line(label: str, law: Law, dof: Optional[int] = None) -> str:
    """One setup's law: each axis's slope with its 95 % interval and its verdict, the lack of fit, and the
    censored points left out with how far the slopes move when their bounds enter; a verdict kept inconclusive
    because a table without seeds is uncalibrated says so, with the law's residual degrees of freedom ``dof``."""
    def verdict(name: str) -> str:
        judged = law.verdicts.get(name)
        return "" if judged is None else judged.verdict + (" (UNCALIBRATED)" if _uncalibrated(judged.reason) else "")

    slopes = "; ".join(f"{name} {law.coefficients[name]:+.3f} [{law.slope_ci[name][0]:+.3f}, "
                       f"{law.slope_ci[name][1]:+.3f}] {verdict(name)}".rstrip() for name in law.axes)
    line = (f"{label}: law log2 η* = {law.coefficients['intercept']:.2f} + Σ slope·log2(axis) over "
            f"{law.points_used} points; {slopes}" + (f"; {law.lack_of_fit_line}" if law.lack_of_fit_line else ""))
    if law.censored:
        moved = ", ".join(f"{name} {shift:+.3f}" for name, shift in law.censored_shift.items())
        line += (f"; {law.censored} censored point(s) left out (with their bounds the slopes move {moved})"
                 + (f", {len(law.contradicted)} contradicting it" if law.contradicted else ""))
    if any(_uncalibrated(judged.reason) for judged in law.verdicts.values()):
        line += f"; {_uncalibrated_reason(dof)}"
    return line


def _uncalibrated(reason: str) -> bool:
    """Whether a verdict is inconclusive only because a table without seeds has uncalibrated intervals."""
    from ..analysis.no_seeds import UNCALIBRATED

    return reason == UNCALIBRATED.reason


def _uncalibrated_reason(dof: Optional[int]) -> str:
    """Why an uncalibrated verdict stays inconclusive, in a few words, and what would calibrate it."""
    from ..analysis.no_seeds import MIN_RESIDUAL_DOF, UNCALIBRATED

    rests = f"σ_b rests on {dof} residual degrees of freedom" if dof is not None else "too few residual dof"
    return f"UNCALIBRATED: no seeds, and {rests} ({MIN_RESIDUAL_DOF} calibrate the intervals); {UNCALIBRATED.fix}"


def _uncalibrated_lines(label: str, setup: SetupResult, dof: int) -> list[str]:
    """A line per axis of a setup without a law whose verdict stays inconclusive for uncalibrated intervals: its
    slope with its 95 % interval and the reason."""
    return [f"{label}: {name} slope {fit.slope:+.2f} {format_interval(fit.slope_ci)} {fit.verdict} — "
            f"{_uncalibrated_reason(dof)}" for name, fit in setup.axes.items()
            if _uncalibrated(fit.reason) and fit.slope is not None]


def answer_lines(summary: Summary) -> list[str]:
    """Per setup: its points' fates, its law with each axis's verdict (a setup without a law: each axis kept
    inconclusive by uncalibrated intervals, with why), its backtest; then each setup that could not be fitted,
    with why and what would fix it."""
    from ..analysis.no_seeds import residual_dof

    lines = []
    for label, setup in summary.setups().items():
        if setup.fates is not None:
            lines.append(f"{label}: {setup.fates.line()}")
        if setup.law is not None:
            lines.append(law_line(label, setup.law, residual_dof(setup)))
        else:
            lines += _uncalibrated_lines(label, setup, residual_dof(setup))
        if setup.backtest is not None and setup.backtest.points:
            lines.append(f"{label}: backtest (refitted without each axis's largest value): {setup.backtest.line()}")
    for label, unfitted in summary.unfitted().items():
        lines.append(f"{label}: not fitted — {unfitted.reason} ({unfitted.fates.line()}); {unfitted.fix}")
    return lines


def batch_table(summary: Summary) -> Optional[Table]:
    """setup × token budget → the best batch and the critical batch with their 95 % intervals and status, and the
    growth of each with the budget where fitted; None when no setup swept batches at fixed budgets."""
    setups = {label: info.batch for label, info in summary.setups().items() if info.batch}
    if not setups:
        return None
    tolerance = next(iter(setups.values()))["tolerance"]
    table = Table(title="the batch worth using at each token budget")
    for column in ("setup", "tokens", "best batch", "interval", "best loss", "critical batch", "interval", "status"):
        table.add_column(column, justify="left" if column in ("setup", "status") else "right")
    for label, entry in setups.items():
        for i, (tokens, at) in enumerate(sorted(entry["budgets"].items(), key=lambda kv: int(kv[0]))):
            best, critical = at.get("best") or {}, at.get("critical") or {}
            bound = {"low": "≤ ", "high": "≥ "}.get(best.get("censored") or "", "")
            table.add_row(label if i == 0 else "", f"{int(tokens):,}", f"{bound}{_number(best.get('batch'), 1)}",
                          format_interval(best.get("ci"), ".1f"), _number(best.get("loss"), 4),
                          ("≥ " if critical.get("status") == "bound" else "") + _number(critical.get("batch"), 1),
                          format_interval(critical.get("ci"), ".1f"), critical.get("status", "-"))
        for kind in ("best", "critical"):
            fit = (entry.get("growth") or {}).get(kind)
            if fit:
                table.add_row("", f"{kind} ∝ D^γ", f"γ = {fit['gamma']:.2f}",
                              format_interval(fit["gamma_ci"], ".2f"), "", "", "", f"{len(fit['budgets'])} budgets")
        table.add_section()
    table.caption = (f"each batch at its own η*; critical: the largest batch within {100 * tolerance:g} % of the "
                     "best batch's loss (--batch-tolerance); intervals: 95 % from the seeds; ≤/≥: a bound at the "
                     "grid's edge")
    return table
