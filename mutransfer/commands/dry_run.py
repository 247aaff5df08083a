"""``mutransfer sweep --dry-run``: studies, trials, tokens and FLOPs per trial, and a measured time estimate."""

from __future__ import annotations

from rich.table import Table

from ..model.build import model_plan
from ..sweep.spec import SweepSpec
from ..sweep.spec import Point
from ..sweep.studies import study_keys
from ..sweep.trial import trial_config, trials_per_batch
from ..train.data import vocab_size
from ..train.timing import measure_step

__all__ = ["dry_run_table"]


def dry_run_table(spec: SweepSpec, workers: int, threads: int) -> Table:
    table = Table(title=f"sweep {spec.name}: plan ({workers} worker(s) × {threads} thread(s))")
    extra = spec.swept()[1:]
    for column in ("setup", "width", *extra, "studies", "trials", "tokens/trial", "GFLOP/trial", "batch", "s/step",
                   "est. s/trial"):
        table.add_column(column, justify="left" if column == "setup" else "right")
    total_trials, total_seconds = 0, 0.0
    seen: set[tuple[str, Point]] = set()
    keys = study_keys(spec)
    for key in keys:
        if (key.setup, key.point) in seen:
            continue
        seen.add((key.setup, key.point))
        group = [k for k in keys if (k.setup, k.point) == (key.setup, key.point)]
        trials = sum(k.policy().budget() for k in group)
        cfg = trial_config(spec, key, key.search.grid()[len(key.search.grid()) // 2],
                           (f"train.threads={threads}",))
        plan = model_plan(cfg, vocab_size(cfg.data))
        tokens = cfg.train.steps * cfg.train.batch_size * cfg.train.seq_len
        matmul = sum(p.shape[0] * p.shape[1] for p in plan.params if p.role in ("hidden", "readout"))
        flops = 6 * matmul * tokens + 12 * cfg.model.depth * cfg.train.seq_len * cfg.model.width * tokens
        batch = trials_per_batch(spec.batch_trials, key, cfg)
        per_step = measure_step(cfg, trials=batch)
        per_trial = per_step / batch * cfg.train.steps * (1 + cfg.train.eval_batches / max(1, cfg.train.eval_every or
                                                                                    cfg.train.steps) / 3)
        total_trials += trials
        total_seconds += trials * per_trial
        coordinates = [str(getattr(key.point, axis)) for axis in extra]
        table.add_row(key.setup, str(key.width), *coordinates, str(len(group)), str(trials), f"{tokens:,}", f"{flops / 1e9:,.1f}",
                      str(batch), f"{per_step:.3f}", f"{per_trial:,.1f}")
    table.caption = (f"{total_trials} trials, estimated wall time {total_seconds / workers / 60:,.1f} min "
                     f"with {workers} worker(s) (from a 3-step warm-up on this machine; s/step is one step of "
                     "'batch' stacked trials)")
    return table
