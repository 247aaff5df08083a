"""The typed result model (``analysis.result``): summary.json's first layout reads to what the analysis computes
today, the current layout round-trips, a newer layout is refused, and points keep their number type."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from mutransfer.analysis.result import SUMMARY_VERSION, Summary, point_key, point_value
from mutransfer.analysis.summary import summarize_run

ROOT = Path(__file__).resolve().parents[1]
BASELINES = Path(__file__).parent / "baselines"


def normalised(document: dict[str, Any]) -> Any:
    """As JSON reads it back (tuples as lists, keys as text)."""
    return json.loads(json.dumps(document))


def close(a: Any, b: Any) -> bool:
    """Equal documents, floats within a relative 1e-6: the regression computes its residuals directly now, where the
    first layout subtracted two near-equal quadratic forms (its lack-of-fit F lost digits near 0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return a == b


def without_grid_seeds(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (layout 2) with each point's ``grid_seeds`` and a law's ``points`` dropped: fields the first
    layout lacked."""
    for part in document["keys"].values():
        for setup in part["setups"].values():
            (setup.get("law") or {}).pop("points", None)
            for fit in setup["axes"].values():
                for point in fit["points"].values():
                    point.pop("grid_seeds", None)
    return document


@pytest.mark.parametrize("name", ["depth", "batch", "horizon", "weight_decay"])
def test_a_first_layout_summary_reads_to_what_the_analysis_computes_from_its_table(name: str) -> None:
    """tests/baselines/summary_v1/<name>.json was written by version 0.7 from docs/data/<name>/trials.csv."""
    old = json.loads((BASELINES / "summary_v1" / f"{name}.json").read_text(encoding="utf-8"))
    assert "version" not in old, "a first-layout document"
    read = without_grid_seeds(normalised(Summary.from_json(old).to_json()))
    computed = without_grid_seeds(normalised(summarize_run(ROOT / "docs" / "data" / name).to_json()))
    assert read["version"] == SUMMARY_VERSION
    assert close(read, computed)


def test_the_current_layout_round_trips_and_a_newer_one_is_refused() -> None:
    summary = summarize_run(BASELINES / "smoke")
    document = summary.to_json()
    assert document["version"] == SUMMARY_VERSION and summary.setups()
    assert Summary.from_json(document).to_json() == document
    assert Summary.from_json(normalised(document)) == summary
    with pytest.raises(ValueError):
        Summary.from_json({**document, "version": 99})


def test_a_point_keeps_its_number_type_through_its_key() -> None:
    assert point_key(64) == "64"
    assert point_value("64") == 64 and isinstance(point_value("64"), int)
    assert point_value(point_key(64)) == 64 and isinstance(point_value(point_key(64)), int)
    fractional = 1.3e8 + 0.5
    assert point_value(point_key(fractional)) == fractional
    assert isinstance(point_value(point_key(fractional)), float)


def test_an_axis_the_registry_lacks_with_fractional_values_needs_no_new_code() -> None:
    """A table of finished runs whose one axis is tokens per parameter (no config key sets it, values not whole):
    the analysis finds each point's optimum and the line through them, and the summary round-trips."""
    import numpy as np
    import pandas as pd

    from mutransfer.analysis.drift import SearchSettings
    from mutransfer.analysis.summary import summarize

    rng = np.random.default_rng(0)
    rows = []
    slope = -0.5
    for ratio in (2.5, 5.0, 10.0, 20.0):
        optimum = -6.0 + slope * np.log2(ratio / 2.5)
        for seed in (0, 1, 2):
            shift = rng.normal(0.0, 0.1)
            for x in np.arange(-11.0, -2.5, 1.0):
                rows.append({"setup": "s", "tokens_per_param": ratio, "seed": seed, "search_key": "optimizer.lr",
                             "log2_lr": x, "val_loss": 3.0 + 0.05 * (x - optimum - shift) ** 2 +
                             rng.normal(0.0, 0.005), "status": "ok"})
    summary = summarize(pd.DataFrame(rows), {"optimizer.lr": {"s": SearchSettings(step=1.0)}},
                        axes=["tokens_per_param"])
    fit = summary.setups()["s"].line
    assert fit.axis == "tokens_per_param" and list(fit.points) == [2.5, 5, 10, 20]
    assert isinstance(fit.points[2.5].point, float) and all(p.measured for p in fit.points.values())
    assert fit.slope_ci is not None and fit.slope_ci[0] < slope < fit.slope_ci[1]
    document = normalised(summary.to_json())
    assert list(document["keys"]["optimizer.lr"]["setups"]["s"]["axes"]["tokens_per_param"]["points"]) == \
        ["2.5", "5", "10", "20"]
    assert Summary.from_json(document) == summary
