"""The verify time ``transfer`` quotes: the sweep's own finished trials priced by their recorded seconds (the
median at a swept width, the fitted law elsewhere, scaled by the target's steps), with that basis in the line;
the suggested width is the widest the budget allows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mutransfer.config import compose
from mutransfer.files import TRIALS_FILE
from mutransfer.sweep.plan.estimate import TRIAL_OVERHEAD_S
from mutransfer.sweep.plan.finished import read_finished
from mutransfer.transfer.next_check import VERIFY_BUDGET_S, VERIFY_TRIALS, next_check, verify_estimate

SECONDS = {32: 0.5, 64: 1.0, 128: 2.0}
"""Seconds a trial took at each swept width: b·width with b = 1/64."""


def _trials(run: Path, widths: list[int]) -> None:
    rows = [{"setup": "mup_muon", "width": w, "status": "ok", "steps": 10, "seconds": SECONDS[w] * jitter,
             "batch_trials": 1} for w in widths for jitter in (0.98, 1.0, 1.02)]
    rows.append({"setup": "mup_muon", "width": widths[-1], "status": "failed", "steps": 0, "seconds": 999.0,
                 "batch_trials": 1})
    run.mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(run / TRIALS_FILE, index=False)


def test_the_quoted_time_is_the_finished_trials_seconds_with_their_basis(tmp_path: Path) -> None:
    """Width 512 from trials that took b·width: 7 × (8 s + bookkeeping), under a minute; twice the steps, twice
    the training seconds. The failed trial's 999 s count for nothing."""
    _trials(tmp_path, [32, 64, 128])
    cost = read_finished(tmp_path).cost("mup_muon")
    assert cost is not None
    assert verify_estimate(cost, 512).seconds == pytest.approx(VERIFY_TRIALS * (8.0 + TRIAL_OVERHEAD_S), rel=1e-3)
    assert verify_estimate(cost, 512, 2.0).seconds == pytest.approx(VERIFY_TRIALS * (16.0 + TRIAL_OVERHEAD_S),
                                                                    rel=1e-3)
    swept = compose(["model.depth=1", "train.steps=10"])
    line = next_check(tmp_path, "mup_muon", swept, compose(["model.depth=1", "train.steps=10", "model.width=512"]))
    assert (f"({VERIFY_TRIALS} trials, under a minute on this machine; time per trial mup_muon: from 9 finished "
            "trials: median 0.50 s at width 32, 1.0 s at 64, 2.0 s at 128; other widths a + b·width^1.00 "
            "fitted") in line
    longer = next_check(tmp_path, "mup_muon", swept, compose(["model.depth=1", "train.steps=20", "model.width=512"]))
    assert "× 2 for the target's steps" in longer


def test_the_suggested_width_is_the_widest_within_the_budget(tmp_path: Path) -> None:
    swept = compose(["model.depth=1", "train.steps=10"])
    _trials(tmp_path, [32, 64])
    cost = read_finished(tmp_path).cost("mup_muon")
    assert cost is not None
    fits = [w for w in (2**k for k in range(7, 24)) if verify_estimate(cost, w).seconds <= VERIFY_BUDGET_S]
    widest, too_wide = max(fits), 4 * max(fits)
    line = next_check(tmp_path, "mup_muon", swept, compose(["model.depth=1", "train.steps=10",
                                                             f"model.width={too_wide}"]))
    assert f"verifying at width {too_wide} takes" in line and f"verify --width {widest} --from" in line
    assert f"verify --width {too_wide} --from {tmp_path} measures" not in line
    empty = next_check(tmp_path / "none", "mup_muon", swept, swept)
    assert empty.endswith("(--dry-run estimates its time first)")
