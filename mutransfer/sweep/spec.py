"""Sweep specifications: ``sweeps/*.yaml`` → a validated ``SweepSpec`` (plain data, no Optuna).

A spec names the setups to compare (label → config overrides), the widths and seeds, what to search
(by default log2 of the base learning rate ``optimizer.lr``) and overrides applied to every setup.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence

import yaml

from ..errors import UserError, closest, did_you_mean
from ..files import load_yaml
from ..schema import LR_COLUMN, LR_KEY, Axis, axis_named
from ..yamldoc import YAMLBoundError, parse_yaml

__all__ = ["SearchSpec", "SetupSpec", "SweepSpec", "Point", "load_spec", "spec_from_dict", "spec_dir", "shipped_specs",
           "check_grid", "SAMPLERS", "PRUNERS", "SCALES", "COMBINATIONS", "MIN_GRID_POINTS", "MAX_GRID_POINTS"]

SAMPLERS = ("grid", "tpe", "gp", "refine")
SCALES = ("log2", "linear")
PRUNERS = ("none", "median", "halving")
SPEC_KEYS = ("name", "setups", "widths", "depths", "steps", "axes", "seeds", "search", "overrides", "coord_check",
             "batch_trials", "model")
COMBINATIONS = ("one", "product")
"""``axes: one`` sweeps each axis through the base point (the first value of every axis); ``product`` the full
grid."""
SEARCH_KEYS = ("key", "scale", "log2_min", "log2_max", "min", "max", "step", "sampler", "n_trials", "pruner", "extend",
               "extend_max", "noise_seeds")
MIN_GRID_POINTS = 3
MAX_GRID_POINTS = 1000
"""More grid points than this at one point is a mistake (a step written in the wrong units), not a sweep."""
"""Grid points a search needs (the same at every width): the best one and a neighbour either side of it."""


@dataclass(frozen=True)
class SearchSpec:
    """One searched hyperparameter. ``scale='log2'``: min/max/step are in log2 units of the value."""

    key: str = LR_KEY
    scale: str = "log2"
    min: float = -10.0
    max: float = -2.0
    step: float = 1.0
    sampler: str = "grid"
    n_trials: Optional[int] = None
    pruner: str = "none"
    extend: bool = True
    """Queue points one step past an edge of the grid while a width's best point sits on it."""
    extend_max: float = 4.0
    """How far (in search units: octaves for log2) the grid may grow past each end."""
    noise_seeds: int = 2
    """Extra seeds that re-train each width's fit window, so the seed-to-seed spread of the optimum is measured."""
    anchors: tuple[float, ...] = ()
    """Points trained with every seed (the study's and the noise probes') besides the grid: ``verify``'s
    predicted η* (not a YAML key). A search with anchors places its optimum from points on the grid only."""

    @property
    def column(self) -> str:
        return LR_COLUMN if self.key == LR_KEY else self.key

    def grid(self, step: Optional[float] = None) -> list[float]:
        """Grid points (in search units: log2 for a log2 scale) from min to max inclusive."""
        step = step or self.step
        count = int(math.floor((self.max - self.min) / step + 1e-9)) + 1
        return [round(self.min + i * step, 10) for i in range(count)]

    def value(self, x: float) -> float:
        return 2.0**x if self.scale == "log2" else x

    def budget(self) -> int:
        return self.n_trials if self.n_trials is not None else len(self.grid())

    def on_grid(self, x: float) -> bool:
        """Whether ``x`` lies on the grid's lattice (min + k·step, extensions included)."""
        k = (x - self.min) / self.step
        return abs(k - round(k)) < 1e-6


@dataclass(frozen=True)
class SetupSpec:
    label: str
    overrides: tuple[str, ...]
    search: tuple[SearchSpec, ...]


class Point(NamedTuple):
    """Where a study trains: its width, and its depth and horizon when the spec sweeps them (None: the config's)."""

    width: int
    depth: Optional[int] = None
    steps: Optional[int] = None


@dataclass(frozen=True)
class SweepSpec:
    name: str
    setups: tuple[SetupSpec, ...]
    widths: tuple[int, ...]
    seeds: tuple[int, ...] = (0,)
    overrides: tuple[str, ...] = ()
    coord_check: bool = False
    batch_trials: int | str = "auto"
    model: Optional[dict[str, Any]] = None
    depths: tuple[int, ...] = ()
    """Depths (``model.depth``) to sweep besides the widths; empty: the config's depth."""
    steps: tuple[int, ...] = ()
    """Training horizons (``train.steps``) to sweep; empty: the config's. Warm-up and decay stay fractions."""
    axes: str = "one"
    source: str = field(default="", compare=False)

    def swept(self) -> tuple[str, ...]:
        """The axes this spec varies: width always, depth and steps when it lists them."""
        return ("width",) + (("depth",) if self.depths else ()) + (("steps",) if self.steps else ())

    def points(self) -> list[Point]:
        """The points studied. ``axes: one``: every width at the base depth and horizon, then every other depth
        and every other horizon through the base point (the smallest value of each axis); ``axes: product``:
        every combination."""
        depths, steps = self.depths or (None,), self.steps or (None,)
        if self.axes == "product":
            return [Point(w, d, t) for w in self.widths for d in depths for t in steps]
        base = Point(self.widths[0], depths[0], steps[0])
        return ([base._replace(width=w) for w in self.widths] + [base._replace(depth=d) for d in depths[1:]] +
                [base._replace(steps=t) for t in steps[1:]])

    def extra(self) -> Optional[dict[str, Any]]:
        """Config tree merged into every trial's config (a user model: ``{model: {factory, roles}}``)."""
        return {"model": self.model} if self.model else None

    def as_dict(self) -> dict[str, Any]:
        """Plain data; a search without anchors leaves the key out, so sweeps recorded before anchors existed
        keep their fingerprint."""
        data = dataclasses.asdict(self)
        data.pop("source")
        for key in ("depths", "steps"):
            if not data[key]:
                data.pop(key)
        if not (self.depths or self.steps):
            data.pop("axes")
        for setup in data["setups"]:
            for search in setup["search"]:
                if not search["anchors"]:
                    search.pop("anchors")
        return data


def spec_dir() -> Path:
    from ..config import packaged_dir

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


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Spec keys (``widths=[64,128]``, ``search.step=0.5``) change the spec; anything else is a config
    override appended to the spec's ``overrides`` (``train.steps=300``)."""
    data = json.loads(json.dumps(data))
    extra = data.get("overrides") or []
    if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
        raise UserError(f"overrides={extra!r} must be a list of key=value strings",
                        "e.g. overrides: [model.depth=2, train.steps=300]")
    extra = list(extra)
    for item in overrides:
        if item.startswith("-"):
            raise UserError(f"unknown option '{item}'", "see `mutransfer sweep --help`")
        if "=" not in item:
            raise UserError(f"override '{item}' has no '='", "write overrides as key=value, e.g. widths=[64,128]")
        key, raw = item.split("=", 1)
        head = key.split(".")[0]
        _refuse_near_spec_key(head)
        spec_key = head in SPEC_KEYS and key != "overrides" and (
            head != "model" or key == "model" or key.startswith(("model.factory", "model.roles")))
        if spec_key:
            try:
                value = parse_yaml(raw)
            except YAMLBoundError as exc:
                raise UserError(f"the value of '{key}': {exc.problem}", exc.fix) from None
            except yaml.YAMLError:
                raise UserError(f"cannot parse the value of '{item}'", "use YAML syntax, e.g. widths=[64,128]") from None
            _set_dotted(data, key, value)
        else:
            extra.append(item)
    data["overrides"] = extra
    return data


def _refuse_near_spec_key(head: str) -> None:
    """A CLI override whose first key is neither a spec key nor near a config group, but a search key
    (``step=0.5``) or near a spec key (``widht=[64]``), is a misplaced or misspelt spec key: refused here, naming
    the spec key, rather than later as an unknown config key."""
    from ..config import GROUPS

    if head in SPEC_KEYS or closest(head.lstrip("+~"), GROUPS):
        return
    match = f"search.{head}" if head in SEARCH_KEYS else closest(head, SPEC_KEYS)
    if match:
        raise UserError(f"unknown key '{head}'", f"did you mean the spec key '{match}'?")


def _number(where: str, value: Any, integer: bool = False, positive: bool = False) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not math.isfinite(value):
        raise UserError(f"{where}={value!r} must be a finite {'integer' if integer else 'number'}", "fix the spec")
    if positive and value <= 0:
        raise UserError(f"{where}={value} must be > 0", "fix the spec")
    return value


def _search(where: str, raw: Any, base: Optional[SearchSpec] = None) -> SearchSpec:
    if not isinstance(raw, dict):
        raise UserError(f"{where} must be a mapping", "e.g. search: {log2_min: -10, log2_max: -4, step: 1}")
    unknown = sorted(set(raw) - set(SEARCH_KEYS), key=str)
    if unknown:
        raise UserError(f"unknown key '{where}.{unknown[0]}'",
                        f"{did_you_mean(str(unknown[0]), SEARCH_KEYS)}use only: {', '.join(SEARCH_KEYS)}")
    values = dataclasses.asdict(base) if base else {}
    for src, dst in (("log2_min", "min"), ("log2_max", "max")):
        if src in raw:
            values[dst] = raw[src]
            values["scale"] = "log2"
    values.update({k: v for k, v in raw.items() if k not in ("log2_min", "log2_max")})
    spec = SearchSpec(**values)
    if not isinstance(spec.key, str) or "." not in spec.key:
        raise UserError(f"{where}.key={spec.key!r} must be a dotted config key", "e.g. optimizer.lr")
    if spec.scale not in SCALES:
        raise UserError(f"unknown {where}.scale '{spec.scale}'", f"{did_you_mean(str(spec.scale), SCALES)}choose one "
                        f"of: {', '.join(SCALES)}")
    if spec.sampler not in SAMPLERS:
        raise UserError(f"unknown sampler '{spec.sampler}'",
                        f"{did_you_mean(str(spec.sampler), SAMPLERS)}choose one of: {', '.join(SAMPLERS)}")
    if spec.pruner not in PRUNERS:
        raise UserError(f"unknown pruner '{spec.pruner}'",
                        f"{did_you_mean(str(spec.pruner), PRUNERS)}choose one of: {', '.join(PRUNERS)}")
    lo, hi = _number(f"{where}.min", spec.min), _number(f"{where}.max", spec.max)
    _number(f"{where}.step", spec.step, positive=True)
    if lo > hi:
        raise UserError(f"{where}: min {lo} > max {hi}", "swap them or widen the range")
    if spec.n_trials is not None:
        _number(f"{where}.n_trials", spec.n_trials, integer=True, positive=True)
    if not isinstance(spec.extend, bool):
        raise UserError(f"{where}.extend={spec.extend!r} must be true or false", "e.g. search.extend=false")
    _number(f"{where}.extend_max", spec.extend_max, positive=True)
    if spec.extend and spec.extend_max < spec.step - 1e-9:
        raise UserError(f"{where}.extend_max={spec.extend_max} is less than one grid step ({spec.step})",
                        f"give at least {spec.step:g}, or search.extend=false")
    _number(f"{where}.noise_seeds", spec.noise_seeds, integer=True)
    if spec.noise_seeds < 0:
        raise UserError(f"{where}.noise_seeds={spec.noise_seeds} must be >= 0", "e.g. search.noise_seeds=2 (0: none)")
    if spec.key == LR_KEY and spec.scale != "log2":
        raise UserError(f"{where}: the learning rate is searched in log2", "use log2_min / log2_max")
    return spec


def check_grid(where: str, search: SearchSpec) -> None:
    """Refuse a search whose grid has fewer than ``MIN_GRID_POINTS`` points, naming its bounds and the values they
    stand for; a positive log2 bound below 1 (LR values written where exponents belong) gets the exponents. Steps
    are counted before a grid is built (a tiny step makes a huge one)."""
    steps = (search.max - search.min) / search.step + 1e-9
    if steps >= MAX_GRID_POINTS:
        raise UserError(f"{where}: step {search.step:g} from {search.min:g} to {search.max:g} gives more than "
                        f"{MAX_GRID_POINTS} grid points", "raise the step (log2 scales: 1 is one octave, e.g. step: 1)")
    if steps >= MIN_GRID_POINTS - 1:
        return
    count = len(search.grid())
    low, high = ("log2_min", "log2_max") if search.scale == "log2" else ("min", "max")
    name = "LR" if search.key == LR_KEY else search.key
    values = " … ".join(dict.fromkeys(f"{search.value(x):.3g}" for x in (search.min, search.max)))
    message = (f"{where}: {low}={search.min:g}, {high}={search.max:g} with step {search.step:g} gives {count} grid "
               f"point{'s' if count > 1 else ''} ({name} {values})")
    if search.scale == "log2" and 0 < search.min < 1:
        raise UserError(message, f"log2 bounds are exponents: for {name} {search.min:g} … {search.max:g} write "
                                 f"{low}: {math.log2(search.min):.3g}, {high}: {math.log2(search.max):.3g}")
    example = (f"step: {(search.max - search.min) / (MIN_GRID_POINTS - 1):g}" if search.max > search.min else
               f"{high}: {search.min + (MIN_GRID_POINTS - 1) * search.step:g}")
    raise UserError(message, f"a grid needs at least {MIN_GRID_POINTS} points to place an optimum: widen the bounds "
                             f"or lower the step, e.g. {example}")


def _int_list(where: str, value: Any, positive: bool) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise UserError(f"{where} must be a non-empty list of integers", f"e.g. {where}: [32, 64, 128]")
    for item in value:
        _number(where, item, integer=True, positive=positive)
        if not positive and item < 0:
            raise UserError(f"{where} has {item}; seeds must be >= 0", "fix the spec")
    if len(set(value)) != len(value):
        raise UserError(f"{where} lists a value twice: {value}", "remove the duplicate")
    return tuple(sorted(value)) if positive else tuple(value)


def _search_name(index: int, count: int) -> str:
    """How a message names one of the spec's searches: ``search``, or ``search[1]`` in a list."""
    return f"search[{index}]" if count > 1 else "search"


def _base_search(raw: Any) -> tuple[SearchSpec, ...]:
    searches = raw if isinstance(raw, list) else [raw]
    base = tuple(_search(_search_name(i, len(searches)), s) for i, s in enumerate(searches))
    if len({s.key for s in base}) != len(base):
        raise UserError("search lists a key twice", "search each key once")
    return base


def _setups(raw: Any, base: tuple[SearchSpec, ...]) -> list[SetupSpec]:
    """Each setup's overrides, and its own LR search where it narrows the spec's."""
    if not isinstance(raw, dict):
        raise UserError("setups must map a label to a list of overrides", "e.g. setups: {mup_muon: [optimizer=muon]}")
    setups = []
    for label, body in raw.items():
        search = base
        if isinstance(body, dict):
            extra = sorted(set(body) - {"overrides", "search"}, key=str)
            if extra:
                raise UserError(f"unknown key 'setups.{label}.{extra[0]}'",
                                f"{did_you_mean(str(extra[0]), ('overrides', 'search'))}use overrides and search")
            if "search" in body:
                search = tuple(_search(f"setups.{label}.search", body["search"], s) if s.key == LR_KEY else s
                               for s in base)
            body = body.get("overrides") or []
        if not isinstance(body, list) or not all(isinstance(x, str) and "=" in x for x in body):
            raise UserError(f"setups.{label} must be a list of key=value overrides", "e.g. [optimizer=muon]")
        setups.append(SetupSpec(label=str(label), overrides=tuple(body), search=search))
    return setups


def _axis(data: dict[str, Any], axis: Axis, example: str) -> tuple[int, ...]:
    """A second axis's values (``depths``, ``steps``): each ≥ 1, at least two to fit a slope, and not also set
    by an override."""
    if data.get(axis.plural) is None:
        return ()
    values = _int_list(axis.plural, data[axis.plural], True)
    if len(values) < 2:
        raise UserError(f"{axis.plural}={list(values)} names one value; an axis needs at least two",
                        f"e.g. {axis.plural}: {example}, or set it with overrides: [{axis.config_key}={values[0]}]")
    if any(o.startswith(f"{axis.config_key}=") for o in data.get("overrides") or []):
        raise UserError(f"the spec names {axis.plural} and also overrides {axis.config_key}",
                        f"remove the {axis.config_key} override")
    return values


def _combination(data: dict[str, Any], extra: bool) -> str:
    axes = data.get("axes", "one")
    if axes not in COMBINATIONS:
        raise UserError(f"axes={axes!r} is not a way to combine axes", f"choose one of: {', '.join(COMBINATIONS)}")
    if "axes" in data and not extra:
        raise UserError("axes is set but the spec names no second axis", "add depths: [2, 4, 8] or remove axes")
    return axes


def _model(model: Any) -> Optional[dict[str, Any]]:
    if model is not None and (not isinstance(model, dict) or set(model) - {"factory", "roles"} or
                              not isinstance(model.get("roles"), dict) or ":" not in str(model.get("factory", ""))):
        raise UserError("model must be {factory: 'package.module:function', roles: {pattern: role}}",
                        "see scripts/own_model_example.py")
    return model


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


def load_spec(spec: str, overrides: Sequence[str] = ()) -> SweepSpec:
    """Read a spec by path or shipped name, apply CLI overrides and validate the result."""
    raw, source = _read(spec)
    data = apply_overrides(raw, overrides)
    unknown = sorted(set(data) - set(SPEC_KEYS), key=str)
    if unknown:
        raise UserError(f"unknown key '{unknown[0]}' in sweep spec",
                        f"{did_you_mean(str(unknown[0]), SPEC_KEYS)}use only: {', '.join(SPEC_KEYS)}")
    for key in ("name", "setups", "widths"):
        if key not in data or data[key] in (None, "", [], {}):
            raise UserError(f"sweep spec {source} is missing '{key}'", "see sweeps/default.yaml for the format")
    if not isinstance(data["name"], str) or not data["name"].replace("-", "_").isidentifier():
        raise UserError(f"name={data['name']!r} must be a simple identifier", "use letters, digits, _ and -")
    base = _base_search(data.get("search") or {})
    setups = _setups(data["setups"], base)
    extra = data.get("overrides") or []
    if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
        raise UserError("overrides must be a list of key=value strings", "e.g. overrides: [train.steps=100]")
    model = _model(data.get("model"))
    batch_trials = _batch_trials(data.get("batch_trials", "auto"), setups, model)
    depths = _axis(data, axis_named("depth"), "[2, 4, 8]")
    steps = _axis(data, axis_named("steps"), "[150, 300, 600]")
    axes = _combination(data, bool(depths or steps))
    if depths and model is not None:
        raise UserError("depths: a model.factory model is built at one depth", "remove depths from the spec")
    for setup in setups:
        for i, (search, shared) in enumerate(zip(setup.search, base)):
            check_grid(_search_name(i, len(base)) if search is shared else f"setups.{setup.label}.search", search)
    return SweepSpec(name=data["name"], setups=tuple(setups), widths=_int_list("widths", data["widths"], True),
                     seeds=_int_list("seeds", data.get("seeds", [0]), False), overrides=tuple(extra),
                     coord_check=bool(data.get("coord_check", False)), batch_trials=batch_trials, model=model,
                     depths=depths, steps=steps, axes=axes, source=source)


def spec_from_dict(data: dict[str, Any]) -> SweepSpec:
    """The inverse of ``SweepSpec.as_dict`` (a spec stored with a sweep's studies)."""
    setups = tuple(SetupSpec(label=s["label"], overrides=tuple(s["overrides"]),
                             search=tuple(SearchSpec(**{**x, "anchors": tuple(x.get("anchors", ()))}) for x in s["search"]))
                   for s in data["setups"])
    return SweepSpec(name=data["name"], setups=setups, widths=tuple(data["widths"]), seeds=tuple(data["seeds"]),
                     overrides=tuple(data["overrides"]), coord_check=bool(data.get("coord_check", False)),
                     batch_trials=data.get("batch_trials", "auto"), model=data.get("model"),
                     depths=tuple(data.get("depths", ())), steps=tuple(data.get("steps", ())),
                     axes=data.get("axes", "one"))
