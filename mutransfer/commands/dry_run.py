"""``mutransfer sweep --dry-run``: the corpus, studies, trials (grid, probes, expected extension), tokens and FLOPs
per trial, and a time estimate measured on this machine with its range (``sweep.plan.estimate``); once the run
directory holds finished trials (a resume), the trials left priced by their recorded seconds instead, which
``verify --dry-run`` uses too. The measured estimate imports torch; the one from finished trials does not."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional

from rich.console import Group
from rich.table import Table

from ..schema import FAMILIES, LR_KEY
from ..sweep.plan.estimate import SWEEP_OVERHEAD_S, TRIAL_OVERHEAD_S, MeasuredEstimate, MeasuredPoint, SweepEstimate
from ..sweep.plan.finished import FinishedTrials, read_finished
from ..sweep.plan.measured_cost import duration_text
from ..sweep.spec.search import SearchSpec
from ..sweep.plan.keys import StudyKey
from ..sweep.plan.sweep_plan import SweepPlan
from ..sweep.spec.sweep_spec import SweepSpec
from ..sweep.plan.trial import trial_config

if TYPE_CHECKING:
    from ..schema import Config

__all__ = ["dry_run_table", "trainer_dry_run_table", "sweep_dry_run", "measured_estimate", "measured_table",
           "estimate_sweep", "search_range", "stop_estimate", "STOP_SIMS", "NO_ESTIMATE_YET"]

NO_ESTIMATE_YET = ("no time estimate yet: the trials run your command, and only its own finished trials can say what "
                   "one costs (timing the built-in GPT would not); once some have finished, this dry run on the same "
                   "--out, transfer's next: line and verify --dry-run estimate from their seconds")


def sweep_dry_run(plan: SweepPlan, workers: int, threads: int, run_dir: Path) -> Group:
    """``sweep --dry-run``: the trials left priced by ``run_dir``'s finished trials when it holds any (a resume);
    otherwise the plan measured on this machine, or for a trainer's command the plan without an estimate."""
    spec = plan.spec
    finished = read_finished(run_dir)
    estimate = measured_estimate(plan, finished, workers) if finished.timed() else None
    if estimate is not None:
        commands = _command_lines(plan) if spec.trainer is not None else []
        return Group(measured_table(f"sweep {spec.name}: resuming {run_dir}", estimate, resumed=True),
                     *_search_lines(plan), *commands)
    if spec.trainer is None:
        return dry_run_table(plan, workers, threads)
    return trainer_dry_run_table(plan)


def measured_estimate(plan: SweepPlan, finished: FinishedTrials, workers: int,
                      horizons: Optional[Mapping[str, float]] = None,
                      cost_label: Optional[Callable[[str], str]] = None) -> Optional[MeasuredEstimate]:
    """Every (setup, width) of ``plan`` priced by ``finished``; ``cost_label`` maps a setup to the one whose
    trials price it and marks a spec whose trials ``finished`` does not hold (a verify's); ``horizons``: each
    setup's steps over the finished trials'. None when a setup has no trial to price it."""
    groups: dict[tuple[str, int], list[StudyKey]] = {}
    for key in plan.studies:
        groups.setdefault((key.setup, key.width), []).append(key)
    points = []
    for (setup, _), keys in groups.items():
        label = cost_label(setup) if cost_label is not None else setup
        cost = finished.cost(label)
        if cost is None:
            return None
        points.append(MeasuredPoint.of(keys, finished, cost, (horizons or {}).get(setup, 1.0),
                                       label="" if cost_label is not None else setup))
    return MeasuredEstimate(tuple(points), workers)


def measured_table(title: str, estimate: MeasuredEstimate, resumed: bool) -> Group:
    """The trials per (setup, width), those done and left when ``resumed``, the seconds a trial costs, the wall
    time with its range; then per setup the finished trials its seconds come from."""
    table = Table(title=f"{title} (time from finished trials)")
    columns = ("setup", "width", "studies", "trials", "+ext.", *(("done", "left") if resumed else ()),
               "est. s/trial")
    for column in columns:
        table.add_column(column, justify="left" if column == "setup" else "right")
    for p in estimate.points:
        counts = (str(p.done), _count(p.left())) if resumed else ()
        table.add_row(p.setup, str(p.width), str(p.studies), str(p.trials), f"{p.extension:.1f}", *counts,
                      f"{p.seconds_per_trial():#.3g}".rstrip("."))
    planned, extension = estimate.trials("low"), estimate.trials() - estimate.trials("low")
    low, high = (duration_text(estimate.wall_seconds(case)) for case in ("low", "high"))
    wall = (f"{duration_text(estimate.wall_seconds())}{'' if low == high else f' (range {low} – {high})'} with "
            f"{estimate.workers} worker(s)")
    if resumed:
        table.caption = (f"{estimate.done()} trials done of {planned:.0f} (grid, noise probes, anchors) + "
                         f"{extension:.1f} expected from grid extension; the {_count(estimate.left())} left take "
                         f"about {wall}")
    else:
        table.caption = (f"{planned:.0f} trials (grid, noise probes, anchors) + {extension:.1f} expected from grid "
                         f"extension; estimated wall time {wall}")
    lines = [f"time per trial: {basis}; plus {TRIAL_OVERHEAD_S:g} s of bookkeeping" for basis in estimate.bases()]
    lines += [f"{p.setup}: seconds × {p.horizon:.3g} for its horizon (its train.steps over the sweep's)"
              for p in {p.setup: p for p in estimate.points if p.horizon != 1.0}.values()]
    return Group(table, *lines)


def _count(trials: float) -> str:
    """A count of trials that may hold an expected fraction: ``5``, ``5.4``."""
    return f"{trials:.1f}".removesuffix(".0")


def _middle_config(spec: SweepSpec, key: StudyKey, threads: int) -> Config:
    grid = key.search.grid()
    return trial_config(spec, key, grid[len(grid) // 2], (f"train.threads={threads}",))


def estimate_sweep(plan: SweepPlan, workers: int, threads: int) -> SweepEstimate:
    """Every (setup, point) of ``plan`` at its grid's middle value, each model shape measured once on this machine
    (points that differ only in their horizon share one measurement)."""
    from dataclasses import replace

    from ..sweep.plan.estimate import PointEstimate
    from ..sweep.plan.trial import trials_per_batch
    from ..train.timing import measure_trial
    from ..train.trunk import trained_steps

    spec = plan.spec
    groups = plan.by_point()
    points, costs = [], {}
    first = _middle_config(spec, next(iter(groups.values()))[0], threads)
    measure_trial(first, min_steps=2, max_steps=2, budget_seconds=0.0)  # the first model pays torch's start-up
    for keys in groups.values():
        cfg = _middle_config(spec, keys[0], threads)
        batch = trials_per_batch(spec.batch_trials, keys[0], cfg, spec.devices_per_trial)
        shape = repr((replace(cfg, train=replace(cfg.train, steps=1, seed=0, eval_every=0, tokens=None)), batch))
        if shape not in costs:
            costs[shape] = measure_trial(cfg, trials=batch)
        steps = trained_steps(cfg.train, spec.listed("steps")) if _branches(spec, cfg, batch) else cfg.train.steps
        points.append(PointEstimate.of(keys, batch, steps, cfg.train.eval_every, costs[shape]))
    return SweepEstimate(tuple(points), workers)


def _branches(spec: SweepSpec, cfg: Config, batch: int) -> bool:
    """Whether the point's trials branch off trunks (``trunks``: a WSD horizon axis, trials one by one)."""
    return spec.branches(cfg.train) and batch == 1


def search_range(search: SearchSpec) -> str:
    """A study's searched range as the spec writes it and as values: ``LR 2^-10 … 2^-4 = 0.000977 … 0.0625``."""
    name = "LR" if search.key == LR_KEY else search.key.rsplit(".", 1)[-1]
    if search.scale != "log2":
        return f"{name} {search.min:g} … {search.max:g}"
    return (f"{name} 2^{search.min:g} … 2^{search.max:g} = {search.value(search.min):.3g} … "
            f"{search.value(search.max):.3g}")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:,.1f} min"


def dry_run_table(plan: SweepPlan, workers: int, threads: int) -> Group:
    """The corpus line(s), the plan table and the time estimate with its range."""
    from ..train.budget import tokens_read
    from ..train.data import Corpora
    from ..train.flops import training_flops

    spec = plan.spec
    estimate = estimate_sweep(plan, workers, threads)
    extra = spec.swept()[1:]
    table = Table(title=f"sweep {spec.name}: plan ({workers} worker(s) × {threads} thread(s))")
    for column in ("setup", "width", *extra, "studies", "trials", "+ext.", "steps", "tokens/trial", "GFLOP/trial",
                   "stacked", "s/step", "est. s/trial"):
        table.add_column(column, justify="left" if column == "setup" else "right")
    corpora, headlines = Corpora(), []
    for point in estimate.points:
        cfg = _middle_config(spec, point.key, threads)
        headlines.append(corpora.get(cfg.data, cfg.train.seq_len).headline())
        tokens = tokens_read(cfg.train)
        coordinates = [str(getattr(point.key.point, axis)) for axis in extra]
        table.add_row(point.key.setup, str(point.key.width), *coordinates, str(point.studies), str(point.trials),
                      f"{point.extension:.1f}", str(cfg.train.steps), f"{tokens:,}",
                      f"{training_flops(cfg, tokens) / 1e9:,.1f}", str(point.batch), f"{point.cost.step:.3f}",
                      f"{point.seconds_per_trial():,.1f}")
    low, high = estimate.wall_seconds("low"), estimate.wall_seconds("high")
    extension = estimate.trials() - estimate.trials("low")
    table.caption = (f"{estimate.trials('low'):.0f} trials (grid, noise probes, anchors) + {extension:.1f} "
                     f"expected from grid extension; estimated wall time {_minutes(estimate.wall_seconds())} "
                     f"(range {_minutes(low)} – {_minutes(high)}) with {workers} worker(s), measured on this machine "
                     "now: a busy machine measures slow steps and runs slower")
    stopping = [stop_estimate(plan, estimate, threads)] if spec.stop else []
    return Group(*dict.fromkeys(headlines), table, *_search_lines(plan), *stopping)


STOP_SIMS = 100
"""Simulated sweeps per setup and truth behind the dry run's expected cost with ``stop: true``."""


def stop_estimate(plan: SweepPlan, estimate: SweepEstimate, threads: int = 0) -> str:
    """``stop: true``: the full design's time as the upper bound, and the expected time when every setup's optimum
    stays put (slope 0) or drifts an octave per doubling (slope −1), from ``STOP_SIMS`` simulated sweeps per setup
    (the real-curve simulator, AdamW's bowl for a setup whose optimizer is of the Adam family, μP + Muon's
    otherwise)."""
    from ..simulation.calibration import real_truth
    from ..simulation.sequential import tier_odds
    from ..simulation.simulate import Design

    spec = plan.spec
    expected = []
    for slope in (0.0, -1.0):
        seconds = 0.0
        for setup in spec.setups:
            search = next(s for s in setup.search if s.key == LR_KEY)
            first = next(p.key for p in estimate.points if p.key.setup == setup.label)
            bowl = FAMILIES.named(_middle_config(spec, first, threads).optimizer.name).bowl
            design = Design(widths=tuple(sorted(spec.widths)), low=search.min, high=search.max, step=search.step,
                            seeds=len(spec.seeds), noise_seeds=search.noise_seeds, extend=search.extend,
                            extend_max=search.extend_max)
            odds = tier_odds(real_truth(bowl, slope=slope, x0=(search.min + search.max) / 2), design, STOP_SIMS)
            seconds += sum(odds[plan.tier_of(p.key)] * p.seconds("median")
                           for p in estimate.points if p.key.setup == setup.label)
        expected.append(SWEEP_OVERHEAD_S + seconds / estimate.workers)
    return (f"stop=true: at most {_minutes(estimate.wall_seconds())} (the full design); expected "
            f"{_minutes(expected[0])} when every optimum stays put, {_minutes(expected[1])} when every one drifts an "
            f"octave per doubling ({STOP_SIMS} simulated sweeps per setup)")


def trainer_dry_run_table(plan: SweepPlan) -> Group:
    """A trainer command's sweep before any trial: the studies and trials per point, the searched ranges, each
    setup's command as its first trial runs it, and no time estimate (``NO_ESTIMATE_YET``)."""
    spec = plan.spec
    extra = spec.swept()[1:]
    table = Table(title=f"sweep {spec.name}: plan (trials run the trainer command)")
    for column in ("setup", "width", *extra, "studies", "trials", "steps"):
        table.add_column(column, justify="left" if column == "setup" else "right")
    for (label, point), keys in plan.by_point().items():
        grid = keys[0].search.grid()
        cfg = trial_config(spec, keys[0], grid[len(grid) // 2])
        coordinates = [str(getattr(point, axis)) for axis in extra]
        table.add_row(label, str(point.width), *coordinates, str(len(keys)),
                      str(sum(k.policy().budget() for k in keys)), str(cfg.train.steps))
    return Group(table, *_search_lines(plan), *_command_lines(plan), NO_ESTIMATE_YET)


def _search_lines(plan: SweepPlan) -> list[str]:
    """``mine: searched LR 2^-7 … 2^-3 = 0.00781 … 0.125``, once per setup and searched key."""
    return list(dict.fromkeys(f"{key.setup}: searched {search_range(key.search)}" for key in plan.studies))


def _command_lines(plan: SweepPlan) -> list[str]:
    """Each setup's trainer command as its first trial (the grid's middle point) runs it."""
    from ..sweep.run.command_trainer import command_words, trial_values

    spec = plan.spec
    lines: dict[str, str] = {}
    for key in plan.studies:
        if key.setup in lines:
            continue
        grid = key.search.grid()
        cfg = trial_config(spec, key, grid[len(grid) // 2])
        model_plan = Path("TRIAL_DIR/plan.yaml") if spec.model else None
        words = command_words(spec.trainer_for(key.setup),
                              trial_values(cfg, key.setup, Path("TRIAL_DIR"), model_plan, "", 0))
        lines[key.setup] = f"{key.setup}: {words if isinstance(words, str) else ' '.join(words)}"
    return list(lines.values())
