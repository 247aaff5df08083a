"""A sweep's (or verify's) tracker from the command's side: its parent opened before the workers start and handed
to them, its final answer and files attached when the outputs are written (``tracking.session``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from ..analysis.result import Summary
    from ..sweep.plan.sweep_plan import SweepPlan
    from ..sweep.run.worker import SweepOptions
    from ..tracking.session import SweepTracking
    from ..tracking.spec import TrackerSpec

__all__ = ["start_tracking", "finish_tracking"]


def start_tracking(tracker: Optional[TrackerSpec], plan: SweepPlan, opts: SweepOptions
                   ) -> tuple[Optional[SweepTracking], SweepOptions]:
    """The sweep's tracker parent (``--log``), and the options that hand it to the workers; (None, ``opts``)
    without a tracker or when it cannot be used (warned once)."""
    if tracker is None:
        return None, opts
    from ..sweep.store.storage import open_storage
    from ..sweep.store.studies import load_study
    from ..tracking.session import SweepTracking

    study = load_study(open_storage(opts.storage, opts.run_dir, opts.heartbeat), plan.studies[0], opts.prefix)
    fingerprint = str((opts.record or {}).get("fingerprint") or "")
    tracking = SweepTracking.start(tracker, opts.run_dir, opts.prefix, study, fingerprint)
    return tracking, (dataclasses.replace(opts, tracker=tracking.handle) if tracking is not None else opts)


def finish_tracking(tracking: Optional[SweepTracking], summary: Summary, run_dir: Path, files: Sequence[str]) -> None:
    """The final answer on the parent with the run directory's ``files`` that exist (and its figures); the
    tracker closed."""
    if tracking is None:
        return
    from ..tracking.answer import sweep_answer

    status = summary.status or {}
    attached = [run_dir / name for name in files if (run_dir / name).is_file()]
    attached += sorted(path for path in run_dir.glob("*.png"))
    tracking.answer(sweep_answer(summary, int(status.get("done") or 0), attached, final=status.get("complete") is True))
    tracking.close()
