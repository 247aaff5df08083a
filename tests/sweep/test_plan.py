"""The sweep's plan (``sweep.plan.sweep_plan``): built once from the spec, the same studies in the same tiers as the sweep
trained before the plan existed, and the waits as edges."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from mutransfer.schema import LR_KEY
from mutransfer.sweep.plan.sweep_plan import SweepPlan, Wait
from mutransfer.sweep.spec.sweep_spec import load_spec, shipped_specs

BASELINE = json.loads((Path(__file__).parents[1] / "baselines" / "plan.json").read_text(encoding="utf-8"))
"""Every shipped spec's study names, tiers and planned information as commit 1be432a listed them
(``keys.study_keys``, ``order.tiers``, ``order.information``), before the plan; with ``stop=true`` where allowed. A spec
added later (``moe``) is recorded as first planned."""


def names(keys: tuple) -> list[str]:
    return [key.name("p") for key in keys]


@pytest.mark.parametrize("name", shipped_specs())
def test_every_shipped_spec_plans_the_studies_and_tiers_it_did_before_the_plan(name: str) -> None:
    plan, before = SweepPlan.of(load_spec(name)), BASELINE[name]
    assert names(plan.studies) == before["studies"]
    assert [names(tier.keys) for tier in plan.tiers] == before["tiers"]
    assert list(plan.information) == pytest.approx(before["information"], abs=1e-12)
    assert plan.looks == () and not any(edge.wait == Wait.LOOK for edge in plan.edges)
    if "stop_tiers" in before:
        stopping = SweepPlan.of(load_spec(name, ["stop=true"]))
        assert [names(tier.keys) for tier in stopping.tiers] == before["stop_tiers"]
        assert len(stopping.looks) == len(stopping.tiers)


def test_a_sweep_that_stops_when_decided_waits_at_each_look_for_every_earlier_tier() -> None:
    plan = SweepPlan.of(load_spec("default", ["stop=true"]))
    first, second = plan.tiers
    assert [tier.widths() for tier in plan.tiers] == [(32, 64, 128), (256,)]
    for key in second.keys:
        assert plan.waits(key, Wait.LOOK) and plan.waits_for(key, Wait.LOOK) == first.keys
        assert plan.tier_of(key) == 1
    assert not any(plan.waits(key, Wait.LOOK) for key in first.keys)


def test_the_constants_rounds_come_first_and_each_stage_waits_for_the_ones_before() -> None:
    spec = load_spec("constants")
    plan = SweepPlan.of(spec)
    assert spec.constants is not None and plan.rounds
    for setup in spec.setups:
        stages = plan.stages(setup.label)
        assert [key.stage for key in stages] == list(range(len(spec.constants.stages())))
        for key in stages:
            assert plan.waits_for(key, Wait.EARLIER_STAGES) == stages[:key.stage]
            assert not plan.waits(key, Wait.ROUNDS)
    rest = [key for key in plan.studies if key.stage is None]
    assert rest and all(plan.waits_for(key, Wait.ROUNDS) == plan.stages(key.setup) for key in rest)
    rechecks = [key for key in rest if key.search.key in spec.constants.keys]
    assert rechecks
    for key in rechecks:
        waited = plan.waits_for(key, Wait.LR_OPTIMUM)
        assert waited and all(k.search.key == LR_KEY and k.point == key.point and k.setup == key.setup
                              and k.stage is None for k in waited)


def test_a_search_at_the_optimum_waits_for_every_seed_of_the_learning_rate_at_its_point() -> None:
    spec = load_spec("weight_decay")
    plan = SweepPlan.of(spec)
    second = [key for key in plan.studies if key.search.at == "optimum"]
    assert second
    for key in second:
        waited = plan.waits_for(key, Wait.LR_OPTIMUM)
        assert {k.seed for k in waited} == set(spec.seeds)
        assert all(k.search.key == LR_KEY and (k.setup, k.point) == (key.setup, key.point) for k in waited)
    assert not any(plan.waits(key, Wait.LR_OPTIMUM) for key in plan.studies if key.search.key == LR_KEY)


def test_a_plan_is_frozen_and_travels_to_a_worker_process_whole() -> None:
    plan = SweepPlan.of(load_spec("default", ["stop=true"]))
    with pytest.raises(AttributeError):
        plan.studies = ()  # type: ignore[misc]
    back = pickle.loads(pickle.dumps(plan))
    assert back == plan and back.tier_of(plan.tiers[1].keys[0]) == 1
    assert plan.by_point() and sum(map(len, plan.by_point().values())) == len(plan.studies)
