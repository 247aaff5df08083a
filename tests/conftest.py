"""Shared fixtures: a small real text corpus and an in-process CLI runner."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mutransfer.cli import app


@pytest.fixture(scope="session")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~300 KB of real Python source (a few stdlib modules), written once per session."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = ("argparse.py", "dataclasses.py", "typing.py", "inspect.py", "functools.py")
    path = tmp_path_factory.mktemp("data") / "corpus.txt"
    path.write_bytes(b"".join((stdlib / name).read_bytes() for name in names))
    return path


@pytest.fixture(scope="session")
def tiny(text_file: Path) -> list[str]:
    """Overrides for a model and run small enough for a unit test (a second or two)."""
    return ["model.width=32", "model.depth=1", "parametrization.base_width=32", "train.steps=6",
            "train.batch_size=4", "train.seq_len=32", "train.eval_batches=2", "train.eval_every=3",
            "data=text", f"data.path={text_file}"]


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str):  # noqa: ANN201 - click's Result
    return runner.invoke(app, list(args), catch_exceptions=False)
