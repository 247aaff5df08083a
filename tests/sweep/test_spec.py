from pathlib import Path

import pytest

from mutransfer.errors import UserError
from mutransfer.schema import LR_KEY
from mutransfer.sweep.spec.sweep_spec import load_spec, shipped_specs, spec_dir
from mutransfer.sweep.plan.trial import sweep_record


@pytest.mark.parametrize("name", ["default", "smoke", "gpu", "factorial"])
def test_shipped_specs_load(name: str) -> None:
    spec = load_spec(name)
    assert spec.name == name
    labels = ["sp_adamw", "mup_adamw", "sp_muon", "mup_muon"] if name == "factorial" else ["sp_adamw", "mup_muon"]
    assert [s.label for s in spec.setups] == labels
    assert all(s.search[0].key == LR_KEY and s.search[0].sampler == "grid" for s in spec.setups)
    assert len(spec.setups[0].search[0].grid()) >= (5 if name in ("default", "factorial") else 3)


def test_default_spec_grids_are_per_setup() -> None:
    spec = load_spec("default")
    sp, mup = (s.search[0] for s in spec.setups)
    assert sp.grid() == [float(x) for x in range(-11, -6)]
    assert mup.grid() == [float(x) for x in range(-6, -1)]
    assert spec.widths == (32, 64, 128, 256) and sp.noise_seeds == mup.noise_seeds == 1


def test_overrides_split_between_spec_and_config() -> None:
    spec = load_spec("smoke", ["widths=[128,64]", "train.steps=7", "seeds=[0,1,2]", "search.step=1"])
    assert spec.widths == (64, 128) and spec.seeds == (0, 1, 2)
    assert spec.overrides[-1] == "train.steps=7"
    assert spec.setups[0].search[0].step == 1.0
    assert sweep_record(load_spec("smoke"), {})["fingerprint"] != sweep_record(spec, {})["fingerprint"]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return str(path)


GOOD = "name: t\nsetups: {a: [optimizer=adamw]}\nwidths: [32]\nsearch: {log2_min: -4, log2_max: -2, step: 1}\n"


@pytest.mark.parametrize("text, overrides, needle", [
    ("name: t\nwidths: [32]\n", [], "missing 'setups'"),
    ("setups: {a: []}\nwidths: [32]\n", [], "missing 'name'"),
    ("name: t\nsetups: {a: []}\n", [], "missing 'widths'"),
    ("name: [t\n", [], "not valid YAML"),
    ("- a\n- b\n", [], "not a YAML mapping"),
    (GOOD, ["search.log2_min=0"], "min 0 > max -2"),
    (GOOD, ["search.step=0"], "step=0"),
    (GOOD, ["search.sampler=magic"], "unknown sampler 'magic'"),
    (GOOD, ["search.pruner=magic"], "unknown pruner 'magic'"),
    (GOOD, ["widths=[0]"], "widths=0"),
    (GOOD, ["widths=[-32]"], "widths=-32"),
    (GOOD, ["widths=[]"], "missing 'widths'"),
    (GOOD, ["widths=abc"], "widths must be a non-empty list"),
    (GOOD, ["seeds=[-1]"], "seeds"),
    (GOOD, ["search.n_trials=0"], "n_trials=0"),
    (GOOD, ["batch_trials=0"], "batch_trials=0"),
    (GOOD, ["batch_trials=many"], "positive integer"),
    (GOOD, ["search.typo=1"], "search.typo"),
    (GOOD + "extra: 1\n", [], "unknown key 'extra'"),
    (GOOD, ["widths"], "has no '='"),
])
def test_bad_specs(tmp_path: Path, text: str, overrides: list[str], needle: str) -> None:
    with pytest.raises(UserError) as info:
        load_spec(write(tmp_path, text), overrides)
    assert needle in info.value.one_line()
    assert "\n" not in info.value.one_line()


def test_missing_spec_names_the_shipped_ones(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=", ".join(shipped_specs())):
        load_spec("nonexistent")
    assert {"default", "smoke", "horizon", "seeds"} <= set(shipped_specs())
    with pytest.raises(UserError, match="not found"):
        load_spec(str(tmp_path / "missing.yaml"))


def test_model_config_overrides_stay_config_overrides() -> None:
    spec = load_spec("smoke", ["model.depth=3", "model.factory=pkg.mod:make", "model.roles={'*': hidden}",
                               "model.blocks={'*qkv.weight': 3}"])
    assert "model.depth=3" in spec.overrides and not any(o.startswith("model.blocks") for o in spec.overrides)
    assert spec.model == {"factory": "pkg.mod:make", "roles": {"*": "hidden"}, "blocks": {"*qkv.weight": 3},
                          "in_block": [], "factory_path": str(spec_dir().resolve())}
    assert spec.extra() == {"model": {key: value for key, value in spec.model.items() if key != "in_block"}}


def test_anchors_round_trip_and_stay_out_of_plain_specs() -> None:
    """A spec without anchors records exactly what it recorded before anchors existed (old sweeps keep their
    fingerprint); one with anchors survives the round trip through its record."""
    from dataclasses import replace

    from mutransfer.sweep.spec.sweep_spec import load_spec, spec_from_dict

    spec = load_spec("default")
    assert all("anchors" not in s for setup in spec.as_dict()["setups"] for s in setup["search"])
    anchored = replace(spec, setups=tuple(replace(s, search=tuple(replace(x, anchors=(-4.15,)) for x in s.search))
                                          for s in spec.setups))
    back = spec_from_dict(anchored.as_dict())
    assert back.setups == anchored.setups and hash(back.setups[0].search[0])
