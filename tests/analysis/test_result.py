"""The typed result model (``analysis.result``): summary.json's first layout reads to what the analysis computes
today, the current layout round-trips, a newer layout is refused, and points keep their number type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mutransfer.analysis.result import SUMMARY_VERSION, Summary
from conftest import differences
from mutransfer.analysis.summary import summarize_run

ROOT = Path(__file__).resolve().parents[2]
BASELINES = Path(__file__).parents[1] / "baselines"


def normalised(document: dict[str, Any]) -> Any:
    """As JSON reads it back (tuples as lists, keys as text)."""
    return json.loads(json.dumps(document))


def close(a: Any, b: Any) -> bool:
    """Equal documents, floats within a relative 1e-6: the regression computes its residuals directly now, where the
    first layout subtracted two near-equal quadratic forms (its lack-of-fit F lost digits near 0)."""
    return not differences(a, b, rel_tol=1e-6)


ADDED_IN_3 = {"setup": ("primary", "fates", "backtest"),
              "law": ("slope_ci90", "verdicts", "censored", "censored_shift", "contradicted"), "fit": ("at",),
              "key": ("unfitted",)}
"""The keys layout 3 added to layout 2 (a sweep's numbers are otherwise the same)."""


def without_added(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the keys layout 3 added removed, and its version."""
    document = normalised(document)
    document.pop("version", None)
    for part in document["keys"].values():
        for name in ADDED_IN_3["key"]:
            part.pop(name, None)
        for setup in part["setups"].values():
            for name in ADDED_IN_3["setup"]:
                setup.pop(name, None)
            for name in ADDED_IN_3["law"]:
                (setup.get("law") or {}).pop(name, None)
            for fit in setup["axes"].values():
                for name in ADDED_IN_3["fit"]:
                    fit.pop(name, None)
    return document


def without_grid_seeds(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each point's ``grid_seeds`` and a law's ``points`` dropped (fields the first layout
    lacked), and the keys layout 3 added."""
    document = without_added(document)
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
    assert Summary.from_json(old).to_json()["version"] == SUMMARY_VERSION
    read = without_grid_seeds(normalised(Summary.from_json(old).to_json()))
    computed = without_grid_seeds(normalised(summarize_run(ROOT / "docs" / "data" / name).to_json()))
    assert close(read, computed)


KEPT_RUNS = sorted(path.parent for path in [*(ROOT / "docs" / "data").glob("**/trials.csv"),
                                            *BASELINES.glob("**/trials.csv")])
KEPT_IMPORTS = [path for path in KEPT_RUNS if (path / "config.yaml").is_file()
                and "kind: import" in (path / "config.yaml").read_text(encoding="utf-8")]


def _baseline_path(run_dir: Path) -> Path:
    name = str(run_dir.relative_to(ROOT)).removeprefix("docs/data/").replace("/", "_")
    return BASELINES / "summary_v2" / f"{name}.json"


def _baseline(run_dir: Path) -> dict[str, Any]:
    return json.loads(_baseline_path(run_dir).read_text(encoding="utf-8"))


KEPT_BEFORE_LAYOUT_3 = [p for p in KEPT_RUNS if p not in KEPT_IMPORTS and _baseline_path(p).is_file()]
"""The kept sweeps that commit 1c82fca summarised (layout 2); those kept since carry their own summary.json."""


@pytest.mark.parametrize("run_dir", KEPT_BEFORE_LAYOUT_3, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_kept_sweep_summarises_as_it_did_before_layout_3(run_dir: Path) -> None:
    """tests/baselines/summary_v2/<run>.json is every kept run's summary as commit 1c82fca computed it (layout 2):
    with the keys layout 3 added removed, today's analysis gives a sweep the same document."""
    before = _baseline(run_dir)
    now = summarize_run(run_dir).to_json()
    assert now["version"] == SUMMARY_VERSION
    assert differences(without_added(now), without_added(before)) == []
    assert Summary.from_json(before).to_json()["version"] == SUMMARY_VERSION


@pytest.mark.parametrize("run_dir", [p for p in KEPT_RUNS if p not in KEPT_IMPORTS and p not in KEPT_BEFORE_LAYOUT_3],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_a_sweep_kept_since_layout_3_summarises_as_its_own_summary(run_dir: Path) -> None:
    """A sweep kept after 1c82fca has no layout-2 baseline: today's analysis of its trials gives the summary.json
    its sweep wrote (the run's progress, ``status``, aside)."""
    kept = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    now = summarize_run(run_dir).to_json()
    assert kept["version"] == SUMMARY_VERSION
    assert differences(*({k: v for k, v in doc.items() if k != "status"} for doc in (normalised(now), kept))) == []


@pytest.mark.parametrize("run_dir", KEPT_IMPORTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_kept_import_changes_only_where_docs_import_md_lists(run_dir: Path) -> None:
    """An import over several axes is judged by its law, fitted by the censored likelihood with each slope's
    variance at least the sandwich's (CHANGELOG.md lists what moved): the same coefficients, verdicts and points;
    slope intervals no narrower, by at most 0.005."""
    before, now = without_added(_baseline(run_dir)), without_added(summarize_run(run_dir).to_json())
    for label, setup in now["keys"]["optimizer.lr"]["setups"].items():
        old = before["keys"]["optimizer.lr"]["setups"][label]
        law, was = setup.pop("law"), old.pop("law")
        assert differences(setup, old) == []
        assert law["coefficients"] == pytest.approx(was["coefficients"], rel=1e-9)
        for name, (low, high) in law["slope_ci"].items():
            old_low, old_high = was["slope_ci"][name]
            assert old_low - 0.005 <= low <= old_low + 1e-9 and old_high - 1e-9 <= high <= old_high + 0.005
        assert law.get("beta") == pytest.approx(was.get("beta"), rel=1e-9)
        moved = ("slope_ci", "covariance", "coefficients", "beta", "beta_ci")
        assert differences(*({k: v for k, v in doc.items() if k not in moved} for doc in (law, was))) == []


def test_differences_finds_a_changed_verdict_and_a_moved_number_but_not_the_last_bits() -> None:
    """The comparison the kept-run tests use: last-bit drift passes, a real change is named by its path."""
    kept = {"keys": {"lr": {"verdict": "transfers", "slope": -0.04, "ci": [0.1, 0.2]}}}
    assert differences(kept, {"keys": {"lr": {"verdict": "transfers", "slope": -0.04 * (1 + 1e-14),
                                              "ci": [0.1, 0.2]}}}) == []
    assert differences(kept, {"keys": {"lr": {"verdict": "drifts", "slope": -0.04, "ci": [0.1, 0.2]}}}) == [
        "/keys/lr/verdict: 'transfers' != 'drifts'"]
    assert sorted(differences(kept, {"keys": {"lr": {"verdict": "transfers", "slope": -0.0401, "ci": [0.1]}}})) == [
        "/keys/lr/ci: 2 items != 1", "/keys/lr/slope: -0.04 != -0.0401"]
