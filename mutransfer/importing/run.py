"""``mutransfer import``'s work: read the source, convert it, and write the run directory (config.yaml,
trials.csv, summary.json, the figures). Nothing is written until the whole conversion has passed, and an existing
directory's files are replaced only by a complete new set."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from ..analysis.result import Summary
from ..analysis.run_files import spec_settings
from ..analysis.summary import refuse_unfitted, summarize
from ..analysis.thresholds import Thresholds
from ..errors import UserError
from ..files import CONFIG_FILE, CURVES_FILE, SUMMARY_FILE, TRIALS_FILE, atomic_write_text, dump_yaml, versioned, \
    write_json
from .convert import Imported, to_trials
from .mapping import ImportMapping, check_mapping
from .record import PENDING, existing_import, import_record
from .retried import flag_retried
from .source import Source, read_source

__all__ = ["ImportResult", "import_runs", "MlflowSource"]


@dataclass(frozen=True)
class MlflowSource:
    """``--mlflow URI --experiment NAME``: an MLflow experiment to import."""

    uri: str
    experiment: str

    @classmethod
    def of(cls, uri: Optional[str], experiment: Optional[str]) -> Optional[MlflowSource]:
        """Both options, or neither (None); one without the other is refused."""
        if uri is None and experiment is None:
            return None
        if uri is None or experiment is None:
            raise UserError("--mlflow and --experiment go together", "e.g. mutransfer import --mlflow "
                            "http://127.0.0.1:5000 --experiment my_sweep --out runs/imported")
        return cls(uri, experiment)


@dataclass
class ImportResult:
    """What an import did: the source, the conversion, the summary, and whether the directory already held it."""

    source: Source
    imported: Optional[Imported]
    summary: Optional[Summary]
    unchanged: bool
    figures: list[Path]


def import_runs(path: Optional[Path], storage: Optional[str], study: Optional[str], mapping: ImportMapping,
                out: Path, force: bool = False, th: Thresholds = Thresholds(), draw: bool = True,
                mlflow: Optional[MlflowSource] = None, wandb: Optional[Path] = None) -> ImportResult:
    """Import the table at ``path`` (or the Optuna study, the MLflow experiment, W&B's offline runs in ``wandb``)
    into ``out`` under ``mapping``
    (an experiment a sweep logged maps itself where ``mapping`` leaves a column unset); a table no setup of which
    can be fitted is refused before anything is written."""
    if (mlflow is not None or wandb is not None) and sum(x is not None for x in (path, storage or study, mlflow,
                                                                                wandb)) > 1:
        raise UserError("give one source: a table file, --storage and --study, --mlflow and --experiment, or "
                        "--wandb", "drop the others")
    if mlflow is not None or wandb is not None:
        from .mlflow_source import logged_mapping, read_mlflow
        from .wandb_source import read_wandb_offline

        table, source, logged = (read_mlflow(mlflow.uri, mlflow.experiment) if mlflow is not None
                                 else read_wandb_offline(wandb))  # type: ignore[arg-type]
        mapping = logged_mapping(table, mapping) if logged else mapping
    else:
        table, source = read_source(path, storage, study)
        logged = False
    mapping = check_mapping(mapping)
    imported = to_trials(table, mapping)
    record = import_record(source, mapping, imported)
    if existing_import(out, record, force):
        return ImportResult(source, None, None, True, [])
    text = imported.trials.to_csv(index=False)
    seeded = imported.seeds or logged  # a sweep's trials carry their seed even when each point has one
    summary = summarize(pd.read_csv(io.StringIO(text)), spec_settings(record["spec"]), th, imported.axes,
                        not seeded, Counter(str(p["setup"]) for p in imported.skipped_points))
    refuse_unfitted(summary)
    flag_retried(summary, imported.retried_points, imported.trials, imported.axes)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / CONFIG_FILE, dump_yaml(versioned({**record, "fingerprint": PENDING})))
    (out / CURVES_FILE).unlink(missing_ok=True)
    atomic_write_text(out / TRIALS_FILE, text)
    write_json(out / SUMMARY_FILE, summary.to_json())
    figures = []
    if draw:
        from ..analysis.draw import draw as draw_figures

        figures = draw_figures([out], th=th, summary=summary)
    atomic_write_text(out / CONFIG_FILE, dump_yaml(versioned(record)))
    return ImportResult(source, imported, summary, False, figures)
