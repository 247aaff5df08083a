"""The axis registry (``schema.TRANSFER_AXES``): a name or column it does not list gets a generic axis, and every
registered axis is a key of the spec and an axis of its points (which study keys hold), round-tripping through the
stored spec."""

from __future__ import annotations

import dataclasses

import pytest

from mutransfer.schema import TRANSFER_AXES, Axis, axis_named, axis_of_column, generic_axis
from mutransfer.sweep.plan.keys import StudyKey
from mutransfer.sweep.spec.sweep_spec import Point, SweepSpec, load_spec, shipped_specs, spec_from_dict, spec_keys


def test_a_name_the_registry_does_not_list_is_a_generic_axis() -> None:
    axis = axis_named("params")
    assert axis == Axis(name="params", config_key=None, column="params", plural="params", tag="params", option="")
    assert axis.log2 and axis == generic_axis("params") == axis_of_column("params")


@pytest.mark.parametrize("axis", TRANSFER_AXES, ids=lambda a: a.name)
def test_a_registered_axis_is_found_by_name_and_by_column(axis: Axis) -> None:
    assert axis_named(axis.name) is axis and axis_of_column(axis.column) is axis
    assert axis.config_key and axis.log2 and axis.example


def test_the_horizon_is_found_by_its_column_not_by_the_steps_a_trial_trained() -> None:
    assert axis_of_column("horizon").name == "steps" and axis_of_column("steps").config_key is None


def test_every_registered_axis_is_a_key_of_the_spec_and_an_axis_of_the_point_a_study_key_holds() -> None:
    assert {f.name: f.type for f in dataclasses.fields(StudyKey)}["point"] == "Point"
    point = Point(64)
    assert len(point) == len(TRANSFER_AXES) and point.width == 64
    for i, axis in enumerate(TRANSFER_AXES):
        assert axis.plural in spec_keys()
        if i:
            moved = point._replace(**{axis.name: 7})
            assert getattr(moved, axis.name) == 7 and moved[i] == 7 and getattr(point, axis.name) is None


def test_a_point_reads_back_through_pickle_and_refuses_an_axis_it_does_not_know() -> None:
    import pickle

    point = Point(32, 2, steps=300)
    assert pickle.loads(pickle.dumps(point)) == point and point.steps == 300 and point.batch is None
    assert repr(point).startswith("Point(width=32, depth=2, steps=300")
    with pytest.raises(TypeError, match="'heads' is not a registered axis"):
        Point(32, heads=4)
    with pytest.raises(AttributeError):
        point.heads


def _spec_sweeping(axis: Axis) -> tuple[str, SweepSpec]:
    """A shipped spec that sweeps ``axis`` (lists two or more of its values)."""
    for name in shipped_specs():
        spec = load_spec(name)
        if axis.name in spec.swept():
            return name, spec
    pytest.fail(f"no shipped spec sweeps {axis.name}")


@pytest.mark.parametrize("axis", TRANSFER_AXES, ids=lambda a: a.name)
def test_each_registered_axis_round_trips_through_the_stored_spec(axis: Axis) -> None:
    name, spec = _spec_sweeping(axis)
    data = spec.as_dict()
    assert list(data[axis.plural]) == list(spec.listed(axis.name)), name
    back = spec_from_dict(data)
    assert back.listed(axis.name) == spec.listed(axis.name)
    assert [getattr(point, axis.name) for point in back.points()] == [getattr(p, axis.name) for p in spec.points()]


def test_an_axis_a_spec_leaves_at_the_config_is_left_out_of_the_stored_spec_and_read_back_empty() -> None:
    spec = load_spec("default")
    data = spec.as_dict()
    for axis in TRANSFER_AXES[1:]:
        assert axis.plural not in data
        assert spec_from_dict(data).listed(axis.name) == ()


@pytest.mark.parametrize("name", shipped_specs())
def test_every_shipped_spec_is_its_stored_spec_read_back(name: str) -> None:
    spec = load_spec(name)
    assert spec_from_dict(spec.as_dict()) == spec
