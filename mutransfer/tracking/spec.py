"""Which tracker a sweep logs to: ``--log mlflow|wandb`` or a spec's ``log:`` section (the tracking URI or
project, the entity, tags), checked before anything trains. Plain data."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional
from urllib.parse import urlparse

from ..errors import UserError, check_keys, did_you_mean

__all__ = ["TrackerSpec", "TRACKERS", "LOG_KEYS", "parse_log_section", "tracker_spec", "check_uri"]

TRACKERS = {"mlflow": "mlflow", "wandb": "wandb"}
"""Each tracker ``--log`` names and the package its extra installs (``pip install 'mutransfer[NAME]'``)."""
LOG_KEYS = ("tracker", "uri", "experiment", "project", "entity", "tags")
"""A spec's ``log:`` keys: the tracker, MLflow's tracking URI and experiment, W&B's project and entity, tags."""
MLFLOW_SCHEMES = ("file", "http", "https", "sqlite", "postgresql", "mysql", "mssql", "databricks")
"""The tracking-URI schemes MLflow's client takes (a plain path is a file store)."""
ENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class TrackerSpec:
    """Where a sweep's trials are logged: MLflow (``uri``, ``experiment``) or W&B (``experiment`` is the project,
    ``entity`` the team). ``experiment`` empty: the sweep's study prefix."""

    kind: str
    uri: str = ""
    """MLflow's tracking URI (empty: MLflow's own default, ``MLFLOW_TRACKING_URI``); W&B takes none."""
    experiment: str = ""
    entity: str = ""
    tags: dict[str, str] = field(default_factory=dict)

    def named(self, default: str) -> TrackerSpec:
        """The spec with ``default`` as its experiment (or project) when it names none."""
        return self if self.experiment else replace(self, experiment=default)

    def where(self) -> str:
        """``mlflow experiment X at URI`` / ``wandb project X``: for messages."""
        if self.kind == "mlflow":
            return f"mlflow experiment {self.experiment!r}" + (f" at {self.uri}" if self.uri else "")
        return f"wandb project {self.experiment!r}" + (f" ({self.entity})" if self.entity else "")


def check_uri(uri: str, where: str) -> str:
    """``uri`` as MLflow will take it; refused (one line) when malformed: an unknown scheme, a URL without a
    host, or a scheme with nothing after it."""
    if not uri:
        return uri
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if not scheme or (len(scheme) == 1 and uri[1:3] in (":\\", ":/")):  # a plain path (C:\ on Windows): a file store
        return uri
    hint = "give a URL like http://127.0.0.1:5000, sqlite:///mlflow.db or file:///path/mlruns"
    if scheme not in MLFLOW_SCHEMES:
        raise UserError(f"{where} {uri}: '{scheme}' is not a tracking URI scheme", f"{did_you_mean(scheme, MLFLOW_SCHEMES)}"
                        f"{hint}")
    if scheme in ("http", "https") and (not parsed.hostname or _bad_port(parsed)):
        raise UserError(f"{where} {uri} names no host and port that can be reached", hint)
    if scheme in ("file", "sqlite") and not (parsed.path or parsed.netloc):
        raise UserError(f"{where} {uri} names no path", hint)
    return uri


def _bad_port(parsed: Any) -> bool:
    try:
        parsed.port
    except ValueError:
        return True
    return False


def parse_log_section(raw: Any) -> Optional[TrackerSpec]:
    """A spec's ``log:`` section (``None``: none); one line naming the bad key or value."""
    if raw is None:
        return None
    example = "log: {tracker: mlflow, uri: http://127.0.0.1:5000, experiment: my_sweep}"
    data = check_keys(raw, "log", LOG_KEYS, example)
    kind = data.get("tracker")
    if kind not in TRACKERS:
        raise UserError(f"log.tracker={kind!r} is not a tracker", f"{did_you_mean(str(kind), TRACKERS)}use one of: "
                        f"{', '.join(TRACKERS)}")
    texts = {key: data.get(key) for key in ("uri", "experiment", "project", "entity")}
    for key, value in texts.items():
        if value is not None and not isinstance(value, str):
            raise UserError(f"log.{key}={value!r} is not text", f"e.g. {example}")
    tags = data.get("tags") or {}
    if not isinstance(tags, dict) or not all(isinstance(k, str) for k in tags):
        raise UserError(f"log.tags={tags!r} is not a mapping of names to values", "e.g. tags: {team: research}")
    wrong = [key for key in (("project", "entity") if kind == "mlflow" else ("uri", "experiment")) if texts[key]]
    if wrong:
        right = {"project": "experiment", "entity": "tags", "uri": "project", "experiment": "project"}[wrong[0]]
        raise UserError(f"log.{wrong[0]} is not a {kind} setting", f"use log.{right} for {kind}")
    entity = texts["entity"] or ""
    if entity and not ENTITY.match(entity):
        raise UserError(f"log.entity={entity!r} is not a W&B entity name", "use letters, digits, _, - and .")
    return TrackerSpec(kind=kind, uri=check_uri(texts["uri"] or "", "log.uri"),
                       experiment=texts["experiment"] or texts["project"] or "", entity=entity,
                       tags={str(k): str(v) for k, v in tags.items()})


def tracker_spec(option: Optional[str], section: Optional[TrackerSpec]) -> Optional[TrackerSpec]:
    """The tracker a command logs to: ``--log`` (``mlflow``, ``wandb`` or ``none``) over the spec's section; its
    package checked here, so a missing extra is refused before anything trains."""
    if option is not None:
        name = option.strip().lower()
        if name == "none":
            return None
        if name not in TRACKERS:
            raise UserError(f"--log {option} is not a tracker", f"{did_you_mean(name, TRACKERS)}use --log mlflow or "
                            "--log wandb")
        section = section if section is not None and section.kind == name else TrackerSpec(kind=name)
    if section is not None and importlib.util.find_spec(TRACKERS[section.kind]) is None:
        raise UserError(f"--log {section.kind} needs the {TRACKERS[section.kind]} package",
                        f"pip install 'mutransfer[{section.kind}]'")
    return section
