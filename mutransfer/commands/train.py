"""``mutransfer train``: one run → ``config.yaml``, ``metrics.csv``, ``result.json`` in a run directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence
from ..words import TrialStatus

if TYPE_CHECKING:  # the command imports these late (start-up: a bad key answers before torch loads)
    from ..schema import Config
    from ..train.data import Corpus
    from ..train.loop import TrainResult

__all__ = ["run", "GRACE_SECONDS"]

GRACE_SECONDS = 30.0
"""After a rank fails, how long past ``train.dist_timeout`` the launcher waits for the others to fail on their own
before it kills them."""


def run(overrides: Sequence[str], out: Optional[Path], config: Optional[Path], nproc: Optional[int] = None) -> int:
    """Train one run; with ``nproc`` start that many ranks of it here, and as one launched rank (torchrun's
    variables set) train its share (``train.parallel``), rank 0 writing the files."""
    from ..config import compose, load_config_file, to_dict, to_yaml
    from .common import condition_changes, warn_conditions, warn_model

    if config is not None:
        _refuse_untrainable_transfer(config)
        cfg = load_config_file(config, overrides)
        saved = load_config_file(config)
        _refuse_edited_plan(config, saved)
        warn_conditions(condition_changes(saved, cfg), str(config))
    else:
        cfg = compose(overrides)
    from ..files import CONFIG_FILE, METRICS_COLUMNS, METRICS_FILE, RESULT_FILE, atomic_write_text, new_run_dir, \
        versioned, write_csv, write_json
    from ..model_kinds import build_model  # torch: after the config is known to be good, so a bad key fails fast
    from ..train.data import check_validation_split, epochs_warning, load_corpus
    from ..train.noise import NOISE_FIELDS

    from ..dist.ranks import launched

    world = int(os.environ["WORLD_SIZE"]) if launched() else nproc
    if world is not None:
        from .parallel_checks import check_parallel

        check_parallel(cfg, world)
    main = not launched() or os.environ["RANK"] == "0"
    if main:
        warn_model(cfg)
    corpus = load_corpus(cfg.data, cfg.train.seq_len)
    check_validation_split(corpus, cfg.data, cfg.train)
    build_model(cfg, corpus.vocab_size, "meta")  # a model that cannot be built fails here, before any output or file
    epochs = epochs_warning(corpus, cfg.train)
    if epochs and main:
        print(f"warning: {epochs}", file=sys.stderr)
    if nproc is not None and not launched():
        from ..dist.launch import launch
        from ..train.cores import available_cores

        run_dir = new_run_dir(out, "train")
        argv = ["train", *overrides, "--out", str(run_dir), *(["--config", str(config)] if config else [])]
        return launch(nproc, argv, cfg.train.dist_timeout + GRACE_SECONDS, max(1, available_cores() // nproc))
    if not main:
        _train_rank(cfg, corpus)
        return 0
    run_dir = new_run_dir(out, "train")
    print(corpus.headline(), flush=True)
    atomic_write_text(run_dir / CONFIG_FILE, to_yaml(cfg))
    result, env = _train_with_progress(cfg, corpus)
    write_csv(run_dir / METRICS_FILE, result.curve,
              (*METRICS_COLUMNS, *NOISE_FIELDS) if cfg.train.noise_scale else METRICS_COLUMNS)
    write_json(run_dir / RESULT_FILE, versioned({**result.summary(), "evals": result.evals, "corpus": corpus.describe(),
                                                 "environment": env, "config": to_dict(cfg)}))
    _report(result, run_dir)
    return 0


def _train_rank(cfg: Config, corpus: Corpus) -> None:
    """A rank other than 0: train its share, write and print nothing."""
    from ..dist.ranks import join, leave
    from ..train.loop import train_model

    ranks = join(cfg.train.device, cfg.train.parallel, cfg.train.dist_timeout)
    finished = False
    try:
        train_model(cfg, corpus, ranks=ranks)
        finished = True
    finally:
        leave(finished)


def _refuse_untrainable_transfer(path: Path) -> None:
    """A transfer file (any layout, ``analysis.transfer_layout``) with no model config to train is refused in one
    line: one made from a sweep whose trials ran the user's own command, which gives the command to run at the
    target instead; one made from an imported table, which gives η*; one whose config section is gone."""
    from ..analysis.transfer_layout import IMPORT, is_transfer, upgraded
    from ..errors import UserError
    from ..files import load_yaml

    if not path.is_file():
        return
    document = load_yaml(path, "config file")
    if not is_transfer(document):
        return
    document = upgraded(document, str(path))
    trainer = document.get("trainer")
    if isinstance(trainer, dict):
        command = trainer.get("at_target")
        words = command if isinstance(command, str) else " ".join(map(str, command or []))
        raise UserError(f"{path} is the transfer of a sweep that ran your own trainer, not a built-in model",
                        f"run your trainer at the target instead: {words} (in {trainer.get('cwd', '.')})")
    source = document.get("source") if isinstance(document.get("source"), dict) else {}
    if source.get("kind") == IMPORT:
        prediction = document.get("prediction") if isinstance(document.get("prediction"), dict) else {}
        raise UserError(f"{path} is the transfer of an imported table: it holds η* and no model config to train",
                        f"train the target with your own trainer at η* = {prediction.get('lr')} (log2 η* "
                        f"{prediction.get('log2_lr')})")
    if not isinstance(document.get("config"), dict):
        raise UserError(f"{path} is a transfer file with no config section to train",
                        "write it again with mutransfer transfer")


def _refuse_edited_plan(path: Path, saved: Config) -> None:
    """A transfer file's param_groups (and the other sections computed from its config) must be what its config
    gives: training reads only the config, so an edit there would be silently ignored."""
    from ..files import load_yaml
    from ..transfer.derived import check_derived_sections

    document = load_yaml(path, "config file")
    if isinstance(document, dict) and "param_groups" in document:
        check_derived_sections(document, saved, path)


def _train_with_progress(cfg: Config, corpus: Corpus) -> tuple[TrainResult, dict[str, Any]]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..train.device import environment, resolve_device
    from ..train.loop import train_model

    columns = (TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(), TimeRemainingColumn())
    from ..dist.ranks import backend_for, join, launched, leave

    ranks = join(cfg.train.device, cfg.train.parallel, cfg.train.dist_timeout) if launched() else None
    finished = False
    try:
        with Progress(*columns, transient=False, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task("train", total=cfg.train.steps, loss="-")
            result, _ = train_model(cfg, corpus, on_step=lambda step, loss: progress.update(
                task, completed=step, loss=f"{loss:.4f}"), ranks=ranks)
        finished = True
    finally:
        leave(finished)
    env = environment(resolve_device(cfg.train.device) if ranks is None else ranks.device)
    if ranks is not None:
        env["ranks"] = {"world": ranks.world, "parallel": ranks.parallel, "backend": backend_for(ranks.device)}
    return result, env


def _report(result: TrainResult, run_dir: Path) -> None:
    from .common import console

    out = console()
    if result.status == TrialStatus.DIVERGED:
        out.print(f"[yellow]warning:[/] {result.message}; the run stopped early (status: diverged)")
    val = "n/a" if result.val_loss is None else f"{result.val_loss:.4f}"
    out.print(f"status {result.status} · val_loss {val} · steps {result.steps} · "
              f"{result.tokens_per_s:,.0f} tokens/s · optimizer {100 * result.optimizer_fraction:.0f}% of step time")
    out.print(f"run directory: {run_dir}")
