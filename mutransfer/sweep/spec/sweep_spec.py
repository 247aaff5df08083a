"""Sweep specifications: ``sweeps/*.yaml`` → a validated ``SweepSpec`` (plain data, no Optuna).

A spec names the setups to compare (label → config overrides), the widths and seeds, what to search
(by default log2 of the base learning rate ``optimizer.lr``) and overrides applied to every setup.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ...errors import UserError, did_you_mean
from ...files import load_yaml
from ...fingerprint import prune_spec, restore_spec
from ...schema import LR_KEY, TRANSFER_AXES, TrainConfig
from .search import (MAX_GRID_POINTS, MIN_GRID_POINTS, PRUNERS, SAMPLERS, SCALES, SearchSpec,
                     base_searches, check_grid, parse_search, search_name)
from .axes import (COMBINATIONS, FIRST_LOOK_WIDTHS, AxisValues, Point, axis_keys, combination, int_list,
                        listed_axes, varied_axes)
from .constants import ConstantsSpec, parse_constants
from .overrides import MODEL_DOCS, MODEL_KEYS, SETUP_KEYS, apply_overrides, spec_keys
from .trainer import TrainerSpec, check_trainer_spec, parse_trainer, trainer_from_dict
from ...tracking.spec import TrackerSpec, parse_log_section

__all__ = ["SearchSpec", "SetupSpec", "SweepSpec", "Point", "AxisValues", "spec_keys", "load_spec", "spec_from_dict", "spec_dir", "shipped_specs",
           "check_grid", "SAMPLERS", "PRUNERS", "SCALES", "COMBINATIONS", "MIN_GRID_POINTS", "MAX_GRID_POINTS"]


@dataclass(frozen=True)
class SetupSpec:
    label: str
    overrides: tuple[str, ...]
    search: tuple[SearchSpec, ...]
    trainer: Optional[TrainerSpec] = None
    """The training command of a spec with a ``trainer`` section: the spec's, with this setup's fields over it."""


@dataclass(frozen=True)
class SweepSpec:
    name: str
    setups: tuple[SetupSpec, ...]
    values: AxisValues
    """The values listed on each axis (``spec_axes.listed_axes``): the widths always, every other axis where the spec
    sweeps it."""
    seeds: tuple[int, ...] = (0,)
    overrides: tuple[str, ...] = ()
    coord_check: bool = False
    batch_trials: int | str = "auto"
    model: Optional[dict[str, Any]] = None
    trunks: bool = True
    """Under ``train.schedule: wsd``, one trunk per (learning rate, seed) for a ``steps`` axis, every horizon's decay
    branched off it (``train.trunk``); False: every horizon from scratch. How a sweep runs, not what it computes."""
    hold: str = ""
    """With a batch axis, what it holds fixed (``spec_axes.HOLDS``); empty without one. Under ``hold: tokens`` the
    token axis lists one budget or more."""
    axes: str | tuple[str, ...] = "one"
    """``COMBINATIONS``, or the plurals of the axes crossed with each other (``(batch_sizes, tokens)``)."""
    trainer: Optional[TrainerSpec] = None
    """The user's training command that runs each trial (``sweep.run.command_trainer``); None: the built-in loop."""
    constants: Optional[ConstantsSpec] = None
    """Per-role constants tuned with the learning rate at one width before the LR stage at every width
    (``spec_constants``); None: the shipped constants."""
    stop: bool = False
    """Stop a setup once its verdict is decided at a look (``sweep.run.stopping``); how a sweep runs, not what it
    computes: run again with ``stop=false`` it trains the rest of the design."""
    devices_per_trial: int = 1
    """The built-in trainer's ranks per trial (one process group each: N GPUs on CUDA, N processes on CPU;
    ``train.parallel``); a trainer command's GPUs are its ``trainer.devices_per_trial``. How a sweep runs."""
    log: Optional[TrackerSpec] = field(default=None, compare=False)
    """The spec's ``log:`` section: the tracker its trials are logged to (``--log`` overrides it). How a sweep
    runs, not what it computes: never part of the sweep's record."""
    source: str = field(default="", compare=False)

    @property
    def widths(self) -> tuple[int, ...]:
        return self.values["width"]

    def listed(self, axis: str) -> tuple[int, ...]:
        """The values the spec lists on ``axis`` (by name); () : the config's."""
        return self.values[axis]

    def trainer_for(self, label: str) -> TrainerSpec:
        """The training command of setup ``label`` (a spec with a ``trainer`` section)."""
        found = next(s.trainer for s in self.setups if s.label == label)
        assert found is not None, "trainer_for needs a spec with a trainer section"
        return found

    def branches(self, train: TrainConfig) -> bool:
        """Whether a trial trained one by one under ``train`` branches off a trunk (``train.trunk``): a horizon
        axis of two or more steps under ``schedule: wsd``, unless the spec turns trunks off. Stacked trials
        (``batch_trials`` > 1) and trials on several ranks (``devices_per_trial``) train from scratch."""
        return (self.trunks and len(self.listed("steps")) > 1 and train.schedule == "wsd" and self.trainer is None
                and self.devices_per_trial == 1)

    def swept(self) -> tuple[str, ...]:
        """The axes this spec varies: width always, the others when it lists two or more values."""
        return varied_axes(self.values.by_name())

    def _values(self) -> list[tuple[Optional[int], ...]]:
        """Each axis's values in ``TRANSFER_AXES`` order; (None,) for an axis the spec leaves at the config's."""
        return [values or (None,) for values in self.values.by_name().values()]

    def points(self) -> list[Point]:
        """The points studied: every combination of the crossed axes' values (``axes: one``: the widths alone;
        ``product``: every axis; a list: the axes it names) with the other axes at the base point (the smallest
        value of each), then every other value of each axis not crossed, through the base point."""
        values = self._values()
        crossed = {i for i, axis in enumerate(TRANSFER_AXES) if self.axes == "product" or axis.name == "width" and
                   self.axes == "one" or axis.plural in self.axes and not isinstance(self.axes, str)}
        base = Point(*(listed[0] for listed in values))
        grid = [Point(*combination) for combination in
                itertools.product(*(listed if i in crossed else listed[:1] for i, listed in enumerate(values)))]
        return grid + [base._replace(**{axis.name: value})
                       for i, (axis, listed) in enumerate(zip(TRANSFER_AXES, values)) if i not in crossed
                       for value in listed[1:]]

    def extra(self) -> Optional[dict[str, Any]]:
        """Config tree merged into every trial's config (a user model: ``{model: {factory, roles, factory_path}}``,
        ``in_block`` and ``blocks`` left out at their defaults, so that the overrides may set them)."""
        return {"model": prune_spec({"model": dict(self.model)}, one_axis=False)["model"]} if self.model else None

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``spec_from_dict``'s inverse), the keys added after earlier sweeps were recorded left out at
        their defaults (``fingerprint.spec_later_keys``), so those sweeps keep their fingerprint."""
        data = dataclasses.asdict(self)
        data.pop("source")
        data.pop("log")
        data.pop("values")
        data.update({axis.plural: self.listed(axis.name) for axis in TRANSFER_AXES})
        for part, owner in [(data, self), *zip(data["setups"], self.setups)]:
            part["trainer"] = owner.trainer.as_dict() if owner.trainer is not None else None
        return prune_spec(data, one_axis=len(self.swept()) == 1)


def spec_dir() -> Path:
    from ...config import packaged_dir

    return packaged_dir("sweeps")


def shipped_specs() -> list[str]:
    """The names of the specs in the ``sweeps/`` folder, sorted."""
    return sorted(p.stem for p in spec_dir().glob("*.yaml"))


def _read(spec: str) -> tuple[dict[str, Any], str]:
    path = Path(spec)
    if not path.suffix and not path.exists():
        path = spec_dir() / f"{spec}.yaml"
        if not path.is_file():
            raise UserError(f"no sweep spec named '{spec}'",
                            f"{did_you_mean(spec, shipped_specs())}give a YAML path or one of: {', '.join(shipped_specs())}")
    if not path.is_file():
        raise UserError(f"sweep spec file not found: {spec}", f"give a YAML path or one of: {', '.join(shipped_specs())}")
    data = load_yaml(path, "sweep spec")
    if not isinstance(data, dict):
        raise UserError(f"sweep spec {path} is not a YAML mapping", "see sweeps/default.yaml for the format")
    return data, str(path)


def _setups(raw: Any, base: tuple[SearchSpec, ...], trainer: Optional[TrainerSpec] = None) -> list[SetupSpec]:
    """Each setup's overrides, and its own searches where it narrows the spec's: a mapping narrows the learning
    rate's, a list of mappings with ``key`` narrows each key it names; with a ``trainer``, its own fields over
    the spec's."""
    if not isinstance(raw, dict):
        raise UserError("setups must map a label to a list of overrides", "e.g. setups: {mup_muon: [optimizer=muon]}")
    setups = []
    for label, body in raw.items():
        search, own_trainer = base, trainer
        if isinstance(body, dict):
            extra = sorted(set(body) - set(SETUP_KEYS), key=str)
            if extra:
                raise UserError(f"unknown key 'setups.{label}.{extra[0]}'",
                                f"{did_you_mean(str(extra[0]), SETUP_KEYS)}use {', '.join(SETUP_KEYS)}")
            if "search" in body:
                search = _narrowed(f"setups.{label}.search", body["search"], base)
            if "trainer" in body:
                if trainer is None:
                    raise UserError(f"setups.{label}.trainer needs a trainer section in the spec",
                                    "add trainer: {command: [...]} at the top level")
                own_trainer = parse_trainer(body["trainer"], Path(trainer.cwd), f"setups.{label}.trainer", trainer)
            body = body.get("overrides") or []
        if not isinstance(body, list) or not all(isinstance(x, str) and "=" in x for x in body):
            raise UserError(f"setups.{label} must be a list of key=value overrides", "e.g. [optimizer=muon]")
        setups.append(SetupSpec(label=str(label), overrides=tuple(body), search=search, trainer=own_trainer))
    return setups


def _narrowed(where: str, raw: Any, base: tuple[SearchSpec, ...]) -> tuple[SearchSpec, ...]:
    """The spec's searches with a setup's narrowing applied (``raw``: a mapping for the learning rate, or a list
    of mappings that each name the ``key`` they narrow)."""
    searched = [s.key for s in base]
    if isinstance(raw, dict) and LR_KEY not in searched:
        return base  # a mapping narrows the learning rate; a spec that searches something else keeps its search
    items = raw if isinstance(raw, list) else [{**raw, "key": LR_KEY} if isinstance(raw, dict) else raw]
    by_key: dict[str, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict) or "key" not in item:
            raise UserError(f"{where} lists {item!r}", "give mappings that name the key they narrow, e.g. "
                            "[{key: optimizer.weight_decay, log2_min: -8, log2_max: -2}]")
        by_key[str(item["key"])] = {k: v for k, v in item.items() if k != "key"}
    for key in by_key:
        if key not in searched:
            raise UserError(f"{where} narrows '{key}', which the spec's search does not list",
                            f"{did_you_mean(key, searched)}narrow one of: {', '.join(searched)}")
    return tuple(parse_search(where, by_key[s.key], s) if s.key in by_key else s for s in base)


def _model(model: Any, source: str) -> Optional[dict[str, Any]]:
    """The spec's ``model`` section (``MODEL_KEYS``) with ``factory_path`` made absolute: relative to the spec's
    folder, which is also where the factory's module is looked for when the spec names no folder; ``in_block``
    and ``blocks`` (``parametrize``'s) at their defaults where the spec leaves them out
    (``fingerprint.spec_later_keys``)."""
    if model is None:
        return None
    accepted = f"a model section holds {', '.join(MODEL_KEYS)} (see {MODEL_DOCS})"
    if not isinstance(model, dict):
        raise UserError(f"model={model!r} is not a mapping", accepted)
    unknown = sorted(set(model) - set(MODEL_KEYS), key=str)
    if unknown:
        raise UserError(f"unknown key 'model.{unknown[0]}' in sweep spec",
                        f"{did_you_mean(str(unknown[0]), MODEL_KEYS)}{accepted}")
    if not isinstance(model.get("roles"), dict) or ":" not in str(model.get("factory", "")):
        raise UserError("model needs factory: 'package.module:function' and roles: {pattern: role}", accepted)
    folder = model.get("factory_path", ".")
    if not isinstance(folder, str) or not folder:
        raise UserError(f"model.factory_path={folder!r} is not a folder", "give a folder, relative to the spec's")
    in_block, blocks = model.get("in_block", []), model.get("blocks", {})
    if not isinstance(in_block, list) or not all(isinstance(p, str) and p for p in in_block):
        raise UserError(f"model.in_block={in_block!r} is not a list of parameter-name patterns",
                        f"e.g. in_block: ['layers.*'] (see {MODEL_DOCS})")
    if not isinstance(blocks, dict) or not all(isinstance(p, str) and p and isinstance(k, int) and
                                               not isinstance(k, bool) for p, k in blocks.items()):
        raise UserError(f"model.blocks={blocks!r} must map parameter-name patterns to numbers of blocks",
                        f"e.g. blocks: {{'*qkv.weight': 3}} (see {MODEL_DOCS})")
    here = Path(source).resolve().parent
    section = {**model, "factory_path": str((here / folder).resolve())}
    return restore_spec({"model": section})["model"]


def _devices_per_trial(value: Any, trainer: Optional[TrainerSpec], batch_trials: int | str) -> int:
    """The built-in trainer's ranks per trial: a positive integer, without a trainer section (a command's GPUs are
    its ``trainer.devices_per_trial``) and without stacked trials (one model per process group)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"devices_per_trial={value!r} is not a number of ranks", "give a positive integer, e.g. "
                        "devices_per_trial=2")
    if value > 1 and trainer is not None:
        raise UserError(f"devices_per_trial={value} sets the built-in trainer's ranks, but this spec runs your "
                        "command", "set trainer.devices_per_trial (its GPUs) instead")
    if value > 1 and batch_trials not in ("auto", 1):
        raise UserError(f"batch_trials={batch_trials} stacks trials in one model, which devices_per_trial={value} "
                        "spreads over ranks (FSDP shards one model)", "set batch_trials=1 (or auto)")
    return value


def _batch_trials(value: Any, setups: list[SetupSpec], model: Optional[dict[str, Any]]) -> int | str:
    if value != "auto" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UserError(f"batch_trials={value!r} is not a number of trials",
                        "give a positive integer (e.g. batch_trials=4) or auto")
    if value not in ("auto", 1):
        other = next((s.key for setup in setups for s in setup.search if s.key != LR_KEY), None)
        if model is not None or other is not None:
            what = "model.factory" if model is not None else f"search.key={other}"
            raise UserError(f"batch_trials={value} stacks learning-rate trials of the built-in GPT, not {what}",
                            "set batch_trials=1 (or auto)")
    return value


def _stop(value: Any, data: dict[str, Any]) -> bool:
    """``stop``: true or false; true needs the looks a width-only sweep of more than ``FIRST_LOOK_WIDTHS`` widths
    has (``sweep.plan.sweep_plan``)."""
    if value is True and data.get("constants") is not None:
        raise UserError("stop=true cannot stop a sweep that tunes constants: its looks judge the width slope of "
                        "the learning rate alone", "set stop=false")
    if not isinstance(value, bool):
        raise UserError(f"stop={value!r} is not true or false", "set stop=true (stop a setup once decided) or "
                        "stop=false (the default: train the whole design)")
    widths = data.get("widths")
    others = [key for key in axis_keys() if key != "widths" and isinstance(data.get(key), list) and len(data[key]) > 1]
    if value and (others or not isinstance(widths, list) or len(widths) <= FIRST_LOOK_WIDTHS):
        why = f"it also sweeps {others[0]}" if others else f"it has {len(widths) if isinstance(widths, list) else 0} widths"
        raise UserError(f"stop=true needs a sweep of widths alone with more than {FIRST_LOOK_WIDTHS} widths ({why}): "
                        f"the first look comes after {FIRST_LOOK_WIDTHS} widths",
                        "add widths (e.g. widths=[32,64,128,256]) or set stop=false")
    return value


def _refuse_shadowed(setups: Any, overrides: Sequence[str]) -> None:
    """A ``search.<bound>=`` override that every setup's own search sets again would change nothing: refused,
    naming the setups' keys to override instead."""
    if not isinstance(setups, dict) or not setups:
        return
    for word in overrides:
        key = word.split("=", 1)[0]
        if not key.startswith("search.") or key.count(".") != 1:
            continue
        name = key.split(".", 1)[1]
        owners = [label for label, body in setups.items() if isinstance(body, dict)
                  and isinstance(body.get("search"), dict) and name in body["search"]]
        if owners and len(owners) == len(setups):
            raise UserError(f"{word} changes nothing: every setup sets its own {name} "
                            f"({', '.join(f'setups.{label}.search.{name}' for label in owners)})",
                            f"override those instead, e.g. setups.{owners[0]}.search.{name}={word.split('=', 1)[-1]}")


def load_spec(spec: str, overrides: Sequence[str] = ()) -> SweepSpec:
    """Read a spec by path or shipped name, apply CLI overrides and validate the result."""
    raw, source = _read(spec)
    data = apply_overrides(raw, overrides)
    unknown = sorted(set(data) - set(spec_keys()), key=str)
    if unknown:
        raise UserError(f"unknown key '{unknown[0]}' in sweep spec",
                        f"{did_you_mean(str(unknown[0]), spec_keys())}use only: {', '.join(spec_keys())}")
    for key in ("name", "setups", "widths"):
        if key not in data or data[key] in (None, "", [], {}):
            raise UserError(f"sweep spec {source} is missing '{key}'", "see sweeps/default.yaml for the format")
    if not isinstance(data["name"], str) or not data["name"].replace("-", "_").isidentifier():
        raise UserError(f"name={data['name']!r} must be a simple identifier", "use letters, digits, _ and -")
    base = base_searches(data.get("search") or {})
    for i, search in enumerate(base):
        if search.at == "optimum" and all(s.key != LR_KEY for s in base):
            raise UserError(f"{search_name(i, len(base))}: at: optimum needs the learning rate searched too",
                            f"add {{key: {LR_KEY}}} to search")
    _refuse_shadowed(data["setups"], overrides)
    trainer = (parse_trainer(data["trainer"], Path(source).resolve().parent) if data.get("trainer") is not None
               else None)
    setups = _setups(data["setups"], base, trainer)
    extra = data["overrides"]  # a list of key=value strings: ``apply_overrides`` checked it
    model = _model(data.get("model"), source)
    batch_trials = _batch_trials(data.get("batch_trials", "auto"), setups, model)
    trunks = data.get("trunks", True)
    if not isinstance(trunks, bool):
        raise UserError(f"trunks={trunks!r} is not true or false", "set trunks=true (the default) or trunks=false")
    stop = _stop(data.get("stop", False), data)
    devices = _devices_per_trial(data.get("devices_per_trial", 1), trainer, batch_trials)
    log = parse_log_section(data.get("log"))
    constants = parse_constants(data.get("constants"), int_list("widths", data["widths"], True),
                                [s.key for s in base])
    values, hold = listed_axes(data)
    batch_sizes = values["batch"]
    if batch_sizes and not any(o.startswith("train.eval_batch_size=") for o in extra):
        extra = [*extra, f"train.eval_batch_size={max(batch_sizes)}"]  # one set of validation windows for every batch
    axes = combination(data, varied_axes(values))
    if values["depth"] and model is not None:
        raise UserError("depths: a model.factory model is built at one depth", "remove depths from the spec")
    for setup in setups:
        for i, (search, shared) in enumerate(zip(setup.search, base)):
            check_grid(search_name(i, len(base)) if search is shared else f"setups.{setup.label}.search", search)
    if trainer is not None:
        check_trainer_spec(data, setups, extra, model, batch_trials)
    return SweepSpec(name=data["name"], setups=tuple(setups),
                     seeds=int_list("seeds", data.get("seeds", [0]), False), overrides=tuple(extra),
                     coord_check=bool(data.get("coord_check", False)), batch_trials=batch_trials, model=model,
                     trunks=trunks, hold=hold, axes=axes, source=source, trainer=trainer, stop=stop,
                     constants=constants, values=AxisValues.of(values), log=log, devices_per_trial=devices)


def _constants_from_dict(data: Optional[dict[str, Any]]) -> Optional[ConstantsSpec]:
    if data is None:
        return None
    return ConstantsSpec(**{**data, "keys": tuple(data["keys"]), "recheck": tuple(data["recheck"])})


def spec_from_dict(data: dict[str, Any]) -> SweepSpec:
    """The inverse of ``SweepSpec.as_dict`` (a spec stored with a sweep's studies): the keys it leaves out at
    their defaults restored (``fingerprint.restore_spec``)."""
    data = restore_spec(data)
    setups = tuple(SetupSpec(label=s["label"], overrides=tuple(s["overrides"]),
                             search=tuple(SearchSpec(**{**x, "anchors": tuple(x["anchors"])}) for x in s["search"]),
                             trainer=trainer_from_dict(s["trainer"]))
                   for s in data["setups"])
    return SweepSpec(name=data["name"], setups=setups, seeds=tuple(data["seeds"]),
                     overrides=tuple(data["overrides"]), coord_check=bool(data.get("coord_check", False)),
                     batch_trials=data.get("batch_trials", "auto"), model=data.get("model"),
                     trunks=data["trunks"], hold=data["hold"], trainer=trainer_from_dict(data["trainer"]),
                     stop=bool(data.get("stop", False)), devices_per_trial=int(data.get("devices_per_trial", 1)),
                     constants=_constants_from_dict(data.get("constants")),
                     axes=tuple(data["axes"]) if isinstance(data["axes"], list) else data["axes"],
                     values=AxisValues.of({axis.name: data[axis.plural] for axis in TRANSFER_AXES}))
