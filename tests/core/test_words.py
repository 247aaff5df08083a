"""The tool's words as types (``mutransfer.words``): each writes the same bytes as its plain text through every
format a run directory or the screen uses, compares and hashes as its text, and reads back from a file."""

from __future__ import annotations

import csv
import io
import json
import pickle

import pandas as pd
import pytest
import yaml
from rich.console import Console

from mutransfer.files import dump_yaml
from mutransfer.words import DecayVerdict, Effect, TrialStatus, Verdict, Word

WORDS = [word for kind in (Verdict, TrialStatus, Effect, DecayVerdict) for word in kind]


def written(value: object) -> dict[str, bytes]:
    """``value`` through JSON, YAML, pandas' CSV, the csv module, f-strings, ``format`` and rich."""
    frame = pd.DataFrame({"status": [value, value]})
    rows = io.StringIO()
    csv.writer(rows).writerow([value, 1])
    screen = Console(file=io.StringIO(), width=80, color_system=None)
    screen.print(value, f"[{value}]", {"verdict": value})
    return {"json": json.dumps({"verdict": value, "list": [value]}).encode(),
            "yaml": dump_yaml({"verdict": value, "list": [value]}).encode(),
            "pandas csv": frame.to_csv(index=False).encode(),
            "csv": rows.getvalue().encode(),
            "f-string": f"{value} {value!s} {value:>14} {value:<14}|".encode(),
            "format": ("{} {:^16}".format(value, value) + "%s" % value).encode(),
            "rich": screen.file.getvalue().encode()}  # type: ignore[attr-defined]


@pytest.mark.parametrize("word", WORDS, ids=lambda w: f"{type(w).__name__}.{w.name}")
def test_a_word_writes_the_bytes_its_text_writes_everywhere(word: Word) -> None:
    assert written(word) == written(word.value)


@pytest.mark.parametrize("word", WORDS, ids=lambda w: f"{type(w).__name__}.{w.name}")
def test_a_word_is_its_text_as_a_key_and_reads_back_from_a_file(word: Word) -> None:
    assert word == word.value and hash(word) == hash(word.value)
    assert {word.value: 1}[word] == 1 and {word: 1}[word.value] == 1
    assert type(word)(json.loads(json.dumps(word))) is word
    assert yaml.safe_load(dump_yaml([word])) == [word.value]
    assert pd.Series([word.value, "other"]).isin([word]).tolist() == [True, False]
    assert pickle.loads(pickle.dumps(word)) is word


def test_the_vocabularies_are_the_texts_the_files_hold() -> None:
    assert [v.value for v in Verdict] == ["transfers", "drifts", "inconclusive"]
    assert {s.value for s in TrialStatus} == {"ok", "diverged", "failed", "pruned", "interrupted", "abandoned",
                                               "stopped"}
    assert [e.value for e in Effect] == ["matters", "no effect", "unmeasured"]
    assert [e.value for e in DecayVerdict] == ["effect", "no effect", "unmeasured"]
    with pytest.raises(ValueError):
        Verdict("transfer")


def test_a_trials_attributes_read_typed_and_a_misspelt_name_is_refused(tmp_path) -> None:  # noqa: ANN001
    """``TrialAttrs``: what the sweep writes on a trial reads back typed; a name that is not one of its fields is
    refused rather than written where nothing reads it."""
    import optuna

    from mutransfer.sweep.store.attrs import TrialAttrs

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'attrs.db'}")
    study.enqueue_trial({"x": 1.0}, user_attrs=TrialAttrs.queued(seed=3))
    trial = study.ask()
    TrialAttrs.write(trial, status=TrialStatus.FAILED, message="RuntimeError: boom", failure="boom", pid=12)
    with pytest.raises(TypeError, match="not a trial attribute: sed"):
        TrialAttrs.write(trial, sed=4)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    read = TrialAttrs.of(study.trials[0])
    assert (read.seed, read.grid, read.status, read.failure, read.pid, read.claimed) == (
        3, True, TrialStatus.FAILED, "boom", 12, True)
    assert not read.bookkeeping and type(read.status) is TrialStatus
    assert TrialAttrs.of(study.ask()).seed is None
