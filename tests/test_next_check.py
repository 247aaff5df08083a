"""The verify time ``transfer`` quotes: the step cost fitted to a sweep's step times recovers a known fixed cost
and cost per FLOP, and the suggested width is the widest the budget allows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mutransfer.config import compose
from mutransfer.files import TRIALS_FILE
from mutransfer.train.flops import training_flops
from mutransfer.train.budget import tokens_per_step
from mutransfer.transfer.next_check import VERIFY_BUDGET_S, VERIFY_TRIALS, next_check, step_cost, verify_estimate

FIXED, PER_FLOP = 0.02, 3e-11


def _trials(run: Path, widths: list[int]) -> None:
    rows = []
    for width in widths:
        cfg_w = compose([f"model.width={width}", "model.depth=1", "train.steps=10"])
        flops = training_flops(cfg_w, tokens_per_step(cfg_w.train.batch_size, cfg_w.train.seq_len))
        for jitter in (0.98, 1.0, 1.02):
            rows.append({"setup": "mup_muon", "width": width, "status": "ok", "steps": 10,
                         "seconds": 10 * (FIXED + PER_FLOP * flops) * jitter})
    rows.append({"setup": "mup_muon", "width": widths[-1], "status": "failed", "steps": 0, "seconds": 999.0})
    run.mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(run / TRIALS_FILE, index=False)


def test_the_fitted_step_cost_recovers_the_known_one(tmp_path: Path) -> None:
    swept = compose(["model.depth=1", "train.steps=10"])
    _trials(tmp_path, [32, 64, 128])
    cost = step_cost(tmp_path, "mup_muon", swept)
    assert cost is not None
    assert cost.fixed == pytest.approx(FIXED, rel=0.05) and cost.per_flop == pytest.approx(PER_FLOP, rel=0.05)
    target = compose(["model.width=512", "model.depth=1", "train.steps=10"])
    estimate = verify_estimate(cost, target)
    step = FIXED + PER_FLOP * training_flops(target, tokens_per_step(target.train.batch_size, target.train.seq_len))
    assert estimate.seconds == pytest.approx(VERIFY_TRIALS * 10 * step, rel=0.05)


def test_the_suggested_width_is_the_widest_within_the_budget(tmp_path: Path) -> None:
    swept = compose(["model.depth=1", "train.steps=10"])
    _trials(tmp_path, [32, 64])
    cost = step_cost(tmp_path, "mup_muon", swept)
    assert cost is not None
    fits = [w for w in (2**k for k in range(7, 20)) if verify_estimate(cost, swept, w).seconds <= VERIFY_BUDGET_S]
    widest, too_wide = max(fits), 4 * max(fits)
    line = next_check(tmp_path, "mup_muon", swept, compose(["model.depth=1", "train.steps=10",
                                                             f"model.width={too_wide}"]))
    assert f"verifying at width {too_wide} takes" in line and f"verify --width {widest} --from" in line
    assert f"verify --width {too_wide} --from {tmp_path} measures" not in line
    assert step_cost(tmp_path, "sp_adamw", swept) is None
