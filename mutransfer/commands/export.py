"""``mutransfer export``: a sweep's run directory (config.yaml, tables, summary, plots) from its storage alone."""

from __future__ import annotations

from pathlib import Path
from ..analysis.result import Summary
from ..errors import UserError

__all__ = ["run", "export_run"]


def export_run(storage_url: str, prefix: str, out: Path) -> Summary:
    """Rebuild the run directory ``out`` from the studies named ``<prefix>.*``; returns the summary."""
    import optuna

    from ..files import claim_run_dir
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.spec.sweep_spec import spec_from_dict
    from ..sweep.store.storage import open_storage
    from ..sweep.store.studies import RECORD_ATTR, prefixed_studies
    from .sweep import finalize

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is an existing file", "give a directory path")
    storage = open_storage(storage_url, out if out.is_dir() else Path("."), check=True)
    names = prefixed_studies(storage, prefix)
    if not names:
        raise UserError(f"no studies named '{prefix}.*' in {storage_url}", "check --study (the sweep's study prefix)")
    record = optuna.load_study(study_name=names[0], storage=storage).user_attrs.get(RECORD_ATTR)
    if not isinstance(record, dict):
        raise UserError(f"study {names[0]} was not written by `mutransfer sweep`", "export a mutransfer sweep")
    spec = spec_from_dict(record["spec"])
    out.mkdir(parents=True, exist_ok=True)
    claim_run_dir(out, record)
    return finalize(SweepPlan.of(spec), out, storage_url, prefix, resume=f"mutransfer sweep {spec.name} --storage "
                    f"$MUTRANSFER_STORAGE --study {prefix}, then mutransfer export again")


def run(storage_url: str, prefix: str, out: Path) -> str:
    """The export command; returns the line to print."""
    summary = export_run(storage_url, prefix, out)
    setups = summary.setups()
    return f"exported {sum(len(v.line.points) for v in setups.values())} optima of {len(setups)} setups to {out}"
