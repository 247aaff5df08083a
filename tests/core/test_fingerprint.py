"""Sweep fingerprints stay what earlier versions recorded (``mutransfer.fingerprint``): every shipped spec's, some
overridden specs', and a run directory's recorded by an earlier version; later keys leave stored data only at
their defaults and come back when it is read."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mutransfer.config import compose, to_dict
from mutransfer.files import VERSION_KEY
from mutransfer.fingerprint import (DECAY_OFF, config_later_keys, fingerprint_of, later_defaults, restore,
                                    restore_spec, spec_later_keys)
from mutransfer.schema import TRANSFER_AXES
from mutransfer.sweep.spec.sweep_spec import load_spec, spec_from_dict
from mutransfer.sweep.plan.trial import setup_configs, sweep_record

BASELINES = Path(__file__).parents[1] / "baselines"
FINGERPRINTS: dict[str, str] = json.loads((BASELINES / "fingerprints.json").read_text())
"""``spec [override ...]`` → the fingerprint its sweep had before ``mutransfer.fingerprint`` existed."""


@pytest.mark.parametrize("words", sorted(FINGERPRINTS))
def test_the_fingerprint_of_a_sweep_is_the_one_recorded_before(words: str) -> None:
    name, *overrides = words.split()
    spec = load_spec(name, overrides)
    assert sweep_record(spec, setup_configs(spec))["fingerprint"] == FINGERPRINTS[words]


def test_every_shipped_spec_has_a_recorded_fingerprint() -> None:
    from mutransfer.sweep.spec.sweep_spec import shipped_specs

    assert set(shipped_specs()) <= set(FINGERPRINTS)


def test_a_run_directory_recorded_by_an_earlier_version_is_the_same_sweep() -> None:
    stored = yaml.safe_load((BASELINES / "smoke" / "config.yaml").read_text())
    record = {key: value for key, value in stored.items() if key not in ("fingerprint", VERSION_KEY)}
    assert fingerprint_of(record) == stored["fingerprint"]
    spec = load_spec("smoke")
    assert sweep_record(spec, setup_configs(spec))["fingerprint"] == stored["fingerprint"]


@pytest.mark.parametrize("overrides", [[], ["optimizer.weight_decay=0.1"], ["model.depth=3", "train.tokens=8192"]])
def test_a_config_read_back_gets_every_later_key_it_left_out(overrides: list[str]) -> None:
    cfg = compose(overrides)
    assert restore(to_dict(cfg), config_later_keys()) == dataclasses.asdict(cfg)


def test_a_factory_config_keeps_its_fused_weights_and_leaves_them_out_when_it_has_none() -> None:
    model = {"factory": "pkg.mod:make", "roles": {"*": "hidden"}, "in_block": ["layers.*"]}
    fused = compose([], {"model": {**model, "blocks": {"*qkv.weight": 3}}})
    assert to_dict(fused)["model"]["blocks"] == {"*qkv.weight": 3}
    assert restore(to_dict(fused), config_later_keys()) == dataclasses.asdict(fused)
    plain = compose([], {"model": model})
    assert "blocks" not in to_dict(plain)["model"] and to_dict(plain)["model"]["in_block"] == ["layers.*"]
    assert restore(to_dict(plain), config_later_keys()) == dataclasses.asdict(plain)


def test_the_decay_keys_leave_a_config_only_while_decay_is_off() -> None:
    decay_keys = later_defaults(config_later_keys(), DECAY_OFF)
    off, on = to_dict(compose([])), to_dict(compose(["optimizer.weight_decay=0.1"]))
    assert "decayed" not in off["optimizer"] and "wd" not in off["parametrization"]["roles"]["hidden"]
    assert on["optimizer"]["decayed"] == decay_keys["optimizer.decayed"]
    assert on["parametrization"]["roles"]["hidden"]["wd"] == 0.0


def test_a_later_key_away_from_its_default_stays() -> None:
    data = to_dict(compose(["train.cooldown_frac=0.3", "train.compile=off"]))
    assert data["train"]["cooldown_frac"] == 0.3 and data["train"]["compile"] == "off"
    assert "cooldown_frac" not in to_dict(compose([]))["train"]


@pytest.mark.parametrize("name", ["default", "weight_decay", "batch", "axes", "own_trainer"])
def test_a_stored_spec_read_back_gets_every_later_key_it_left_out(name: str) -> None:
    spec = load_spec(name)
    restored = restore_spec(spec.as_dict())
    assert {axis.plural for axis in TRANSFER_AXES} | {"hold", "axes", "trunks", "stop"} <= set(restored)
    assert spec_from_dict(restored) == spec
    paths = {key.path for key in spec_later_keys()}
    assert {"depths", "steps", "batch_sizes", "tokens", "hold", "axes", "trunks"} <= paths
    assert {"model.blocks", "model.in_block"} <= paths


def test_a_model_section_keeps_its_fingerprint_until_it_names_fused_weights_or_blocks() -> None:
    """A factory spec recorded before ``model.blocks`` and ``model.in_block`` existed (``own_trainer``) has the
    same fingerprint with them left out or given at their defaults, and a new one with fused weights."""
    before = FINGERPRINTS["own_trainer"]
    for words in ([], ["model.blocks={}", "model.in_block=[]"]):
        spec = load_spec("own_trainer", words)
        configs = setup_configs(spec)
        assert sweep_record(spec, configs)["fingerprint"] == before, words
        assert not {"blocks", "in_block"} & set(spec.as_dict()["model"])
        assert all(not {"blocks", "in_block"} & set(config["model"]) for config in configs.values())
    fused = load_spec("own_trainer", ["model.blocks={'*qkv.weight': 3}"])
    assert fused.as_dict()["model"]["blocks"] == {"*qkv.weight": 3}
    assert sweep_record(fused, setup_configs(fused))["fingerprint"] != before


def test_the_fingerprint_module_imports_no_torch_optuna_or_hydra() -> None:
    code = ("import sys, mutransfer.fingerprint; "
            "print(sorted(m for m in ('torch', 'optuna', 'hydra', 'omegaconf') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
