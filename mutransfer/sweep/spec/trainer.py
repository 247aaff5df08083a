"""A sweep spec's ``trainer`` section: each trial runs the user's own training command.

The command is an argv list (run without a shell; ``shell: true`` opts in for a string) whose ``{placeholders}``
are the trial's values (``PLACEHOLDERS``, every transfer axis, any config key by its dotted name). A setup may
carry its own ``trainer`` fields over the spec's: ``args`` replace the spec's extra arguments, ``env`` adds to
its environment, the others replace. ``command``, ``args`` and ``shell`` say what a trial computes and enter the
sweep's fingerprint; ``timeout``, ``env``, ``devices_per_trial``, ``retries`` and ``max_failures`` say how it runs
and do not. Plain data: no Optuna, no torch."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ...config import is_config_key
from ...errors import UserError, check_keys, did_you_mean
from ...schema import TRANSFER_AXES

__all__ = ["TrainerSpec", "parse_trainer", "TRAINER_KEYS", "PLACEHOLDERS", "MAX_FAILURES", "SCRIPT_SUFFIXES",
           "script_words", "check_scripts",
           "placeholders_in", "fill", "known_placeholder", "check_placeholders", "check_command", "trainer_from_dict",
           "check_trainer_spec"]

TRAINER_KEYS = ("command", "args", "shell", "cwd", "timeout", "env", "devices_per_trial", "retries", "max_failures",
                "progress")
PLACEHOLDERS = ("lr", "log2_lr", "setup", "seed", "trial_dir", "plan", "devices", "trial")
"""Placeholders besides the transfer axes and the config keys: the base learning rate and its log2, the setup's
label, the seed, the trial's folder, its plan file (``model.factory`` specs), its GPU ids and its number."""
MAX_FAILURES = 3
"""``trainer.max_failures``'s default."""
SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".pl", ".rb", ".jl", ".r", ".lua", ".js")
"""What a command's word ends with when it names a script the command runs (checked before any trial)."""
NOT_A_PATH_AFTER = ("-m", "-c")
"""Options whose next word is a module or inline code, not a file."""
_FIELD = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class TrainerSpec:
    """The user's training command and how to run it."""

    command: tuple[str, ...] | str
    args: tuple[str, ...] = ()
    """Extra arguments after the command (a setup's own ``args`` replace the spec's)."""
    shell: bool = False
    cwd: str = ""
    """The folder the command runs in, absolute (given relative to the spec's folder; default: that folder)."""
    timeout: Optional[float] = None
    """Seconds per trial; past it the trial's process group is killed and the trial fails."""
    env: tuple[tuple[str, str], ...] = ()
    devices_per_trial: int = 1
    """GPUs per trial: each worker gets its own group (``CUDA_VISIBLE_DEVICES``)."""
    retries: int = 0
    """Times a failed trial is run again before it counts as failed."""
    max_failures: int = MAX_FAILURES
    """Trials in a row (in finish order, across every worker) failing with the same last stderr line that stop the
    sweep (the spec's only: a setup cannot set it)."""
    progress: bool = False
    """Whether the trainer reports intermediate losses (``mutransfer.report``): what a pruner needs."""

    def templates(self) -> list[str]:
        """The command's words with their placeholders (a shell string is one word)."""
        head = [self.command] if isinstance(self.command, str) else list(self.command)
        return head + list(self.args)

    def environment(self) -> dict[str, str]:
        return dict(self.env)

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command if isinstance(self.command, str) else list(self.command),
                "args": list(self.args), "shell": self.shell, "cwd": self.cwd, "timeout": self.timeout,
                "env": dict(self.env),
                "devices_per_trial": self.devices_per_trial, "retries": self.retries,
                "max_failures": self.max_failures, "progress": self.progress}


def _words(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(x, (str, int, float)) for x in value):
        raise UserError(f"{where} must be a list of words", f"e.g. {where}: [python, train.py, --lr, '{{lr}}']")
    return tuple(str(x) for x in value)


def _count(where: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UserError(f"{where}={value!r} must be an integer >= {least}", f"e.g. {where.split('.')[-1]}: {least + 1}")
    return value


def parse_trainer(raw: Any, folder: Path, where: str = "trainer", base: Optional[TrainerSpec] = None) -> TrainerSpec:
    """The ``trainer`` mapping as a ``TrainerSpec`` (``folder``: the spec's, where a relative ``cwd`` starts);
    with ``base`` (the spec's), a setup's fields over it."""
    raw = check_keys(raw, where, TRAINER_KEYS, "trainer: {command: [python, train.py, --lr, '{lr}']}")
    fields: dict[str, Any] = base.__dict__.copy() if base is not None else {}
    if base is None and "command" not in raw:
        raise UserError(f"{where} needs a command", "e.g. command: [python, train.py, --lr, '{lr}']")
    shell = raw.get("shell", fields.get("shell", False))
    if not isinstance(shell, bool):
        raise UserError(f"{where}.shell={shell!r} is not true or false", "leave it out (an argv list, no shell)")
    fields["shell"] = shell
    if "command" in raw:
        command = raw["command"]
        if shell:
            if not isinstance(command, str) or not command.strip():
                raise UserError(f"{where}.command must be one string with shell: true", "e.g. command: 'bash run.sh'")
            fields["command"] = command
        else:
            if isinstance(command, str):
                raise UserError(f"{where}.command is a string", "give an argv list, e.g. [python, train.py], or "
                                "set shell: true to run the string through a shell")
            fields["command"] = _words(f"{where}.command", command)
    if "cwd" in raw or base is None:
        cwd = raw.get("cwd", ".")
        if not isinstance(cwd, str) or not cwd:
            raise UserError(f"{where}.cwd={cwd!r} is not a folder", "give a folder, relative to the spec's")
        path = (folder / cwd).resolve()
        if not path.is_dir():
            raise UserError(f"{where}.cwd: {path} is not a folder", "give an existing folder, relative to the spec's")
        fields["cwd"] = str(path)
    if "args" in raw:
        fields["args"] = _words(f"{where}.args", raw["args"]) if raw["args"] != [] else ()
    if "timeout" in raw and raw["timeout"] is not None:
        timeout = raw["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise UserError(f"{where}.timeout={timeout!r} is not a positive number of seconds", "e.g. timeout: 3600")
        fields["timeout"] = float(timeout)
    if "env" in raw:
        env = raw["env"]
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                                and not isinstance(v, bool) for k, v in env.items()):
            raise UserError(f"{where}.env must map names to strings", "e.g. env: {OMP_NUM_THREADS: '1'}")
        fields["env"] = tuple(sorted({**dict(fields.get("env", ())), **{k: str(v) for k, v in env.items()}}.items()))
    if "devices_per_trial" in raw:
        fields["devices_per_trial"] = _count(f"{where}.devices_per_trial", raw["devices_per_trial"], 0)
    if "retries" in raw:
        fields["retries"] = _count(f"{where}.retries", raw["retries"], 0)
    if "max_failures" in raw:
        if base is not None:
            raise UserError(f"{where}.max_failures: the limit is the sweep's, not a setup's",
                            "set trainer.max_failures at the spec's top level")
        fields["max_failures"] = _count(f"{where}.max_failures", raw["max_failures"], 1)
    if "progress" in raw:
        if not isinstance(raw["progress"], bool):
            raise UserError(f"{where}.progress={raw['progress']!r} is not true or false",
                            "true when the trainer reports intermediate losses with mutransfer.report")
        fields["progress"] = raw["progress"]
    return TrainerSpec(**fields)


def placeholders_in(template: str) -> list[str]:
    """The ``{name}`` fields of one word (``{{`` and ``}}`` are literal braces)."""
    return _FIELD.findall(template.replace("{{", "").replace("}}", ""))


def fill(template: str, values: Mapping[str, str]) -> str:
    """The word with each ``{name}`` replaced by its value."""
    parts = re.split(r"(\{\{|\}\})", template)
    return "".join({"{{": "{", "}}": "}"}.get(part) or _FIELD.sub(lambda m: values[m.group(1)], part)
                   for part in parts)


def known_placeholder(name: str) -> bool:
    return (name in PLACEHOLDERS or any(name in (axis.name, axis.column) for axis in TRANSFER_AXES)
            or is_config_key(name))


def check_placeholders(trainer: TrainerSpec, where: str, has_plan: bool) -> None:
    """Refuse a placeholder that names nothing (with the closest name), and ``{plan}`` without a plan."""
    names = [*PLACEHOLDERS, *(axis.name for axis in TRANSFER_AXES), *(axis.column for axis in TRANSFER_AXES)]
    for word in trainer.templates():
        for name in placeholders_in(word):
            if not known_placeholder(name):
                raise UserError(f"{where}: unknown placeholder '{{{name}}}'",
                                f"{did_you_mean(name, names)}use one of: "
                                f"{', '.join('{' + n + '}' for n in dict.fromkeys(names))}, or a config key such as "
                                "{optimizer.weight_decay}")
            if name == "plan" and not has_plan:
                raise UserError(f"{where}: {{plan}} needs model.factory and roles in the spec",
                                "add a model section, or leave {plan} out and use the numbers")


def check_command(trainer: TrainerSpec, where: str, folder: Path) -> None:
    """Refuse a command that cannot start: its program is not found (on PATH or beside the spec) or not
    executable, or a script it names is not found (``check_scripts``). A shell command is the shell's to
    resolve."""
    if trainer.shell:
        return
    program = str(trainer.command[0])
    if placeholders_in(program):
        raise UserError(f"{where}.command starts with a placeholder ({program})", "name the program itself first")
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else folder / program
        if not path.is_file():
            raise UserError(f"{where}.command: {program} is not found", f"looked for {path}; fix the path")
        if not shutil.which(str(path)):
            raise UserError(f"{where}.command: {program} is not executable", f"chmod +x {path}, or run it through "
                            "its interpreter, e.g. [bash, ...]")
    elif shutil.which(program) is None:
        raise UserError(f"{where}.command: '{program}' is not found on PATH", "install it, or give its path")
    check_scripts(trainer, where, folder)


def script_words(words: Sequence[str]) -> list[int]:
    """The indices of the words after the program that name a script (``SCRIPT_SUFFIXES``): not an option, not an
    option's ``=`` value, not a word with a placeholder, and not the word after ``-m`` or ``-c``."""
    found = []
    for i, word in enumerate(words[1:], start=1):
        if word.startswith("-") or "=" in word or placeholders_in(word) or words[i - 1] in NOT_A_PATH_AFTER:
            continue
        if word.lower().endswith(SCRIPT_SUFFIXES):
            found.append(i)
    return found


def check_scripts(trainer: TrainerSpec, where: str, folder: Path) -> None:
    """Refuse a script the command names (``script_words``) that is not a file, resolved against ``folder`` (the
    trainer's ``cwd``): one line naming the word and the path looked for, with the closest file's name there."""
    words = trainer.templates()
    head = 1 if isinstance(trainer.command, str) else len(trainer.command)
    for i in script_words(words):
        word = words[i]
        path = Path(word) if Path(word).is_absolute() else folder / word
        if path.is_file():
            continue
        part = "command" if i < head else "args"
        siblings = sorted(p.name for p in path.parent.iterdir()) if path.parent.is_dir() else []
        raise UserError(f"{where}.{part}: {word} is not found (looked for {path})",
                        f"{did_you_mean(path.name, siblings)}fix the name; a relative path starts at trainer.cwd "
                        f"({folder})")


def trainer_from_dict(data: Optional[Mapping[str, Any]]) -> Optional[TrainerSpec]:
    """``TrainerSpec.as_dict``'s inverse (a spec stored with a sweep); None stays None."""
    if data is None:
        return None
    command = data["command"]
    env = data.get("env") or {}
    return TrainerSpec(command=command if isinstance(command, str) else tuple(command),
                       args=tuple(data.get("args") or ()), shell=bool(data.get("shell", False)),
                       cwd=str(data.get("cwd", "")),
                       timeout=data.get("timeout"), env=tuple(sorted(dict(env).items())),
                       devices_per_trial=int(data.get("devices_per_trial", 1)), retries=int(data.get("retries", 0)),
                       max_failures=int(data.get("max_failures", MAX_FAILURES)),
                       progress=bool(data.get("progress", False)))


def check_trainer_spec(data: Mapping[str, Any], setups: Sequence[Any], overrides: Sequence[str],
                       model: Optional[Mapping[str, Any]], batch_trials: int | str) -> None:
    """What a user's trainer cannot do is refused in one line, not ignored: stacked trials, the coordinate check,
    ``train.compile``, trunks under a WSD schedule, a pruner without intermediate losses; and a command that cannot
    start or names an unknown placeholder."""
    if data.get("coord_check"):
        raise UserError("coord_check: true needs the built-in model, not a trainer command",
                        "set coord_check: false, or run mutransfer coord-check on the model itself")
    if batch_trials not in ("auto", 1):
        raise UserError(f"batch_trials={batch_trials} stacks trials in the built-in loop, not a trainer command",
                        "set batch_trials: 1 (or leave it out)")
    every = [*overrides, *(word for setup in setups for word in setup.overrides)]
    if any(word.split("=", 1)[0].lstrip("+") == "train.compile" for word in every):
        raise UserError("train.compile is the built-in loop's, not a trainer command's",
                        "remove train.compile from the overrides (compile inside your trainer)")
    wsd = any(word.replace(" ", "") == "train.schedule=wsd" for word in every)
    if wsd and len(data.get("steps") or ()) > 1 and data.get("trunks", True):
        raise UserError("trunks: true branches horizons off a trunk in the built-in loop, not a trainer command",
                        "set trunks: false (every horizon trains from scratch)")
    for setup in setups:
        body = data["setups"].get(setup.label) if isinstance(data.get("setups"), dict) else None
        where = f"setups.{setup.label}.trainer" if isinstance(body, dict) and "trainer" in body else "trainer"
        pruned = [s for s in setup.search if s.pruner != "none"]
        if pruned and not setup.trainer.progress:
            raise UserError(f"search.pruner={pruned[0].pruner} needs intermediate losses from the trainer",
                            "set trainer.progress: true and call mutransfer.report(step=..., val_loss=...) in it, or "
                            "set search.pruner: none")
        check_command(setup.trainer, where, Path(setup.trainer.cwd))
        check_placeholders(setup.trainer, where, has_plan=model is not None)
