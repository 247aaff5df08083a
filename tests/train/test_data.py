from pathlib import Path

import pytest
import torch

from mutransfer.train.data import Batches, fixed_batches, load_corpus, stdlib_files
from mutransfer.errors import UserError
from mutransfer.schema import DataConfig


def test_stdlib_corpus_excludes_site_packages_and_tests() -> None:
    files = stdlib_files()
    assert files == sorted(files)
    parts = {part for path in files for part in path.parts}
    assert "site-packages" not in parts and "test" not in parts and "idle_test" not in parts
    assert any(path.name == "dataclasses.py" for path in files)


def test_stdlib_corpus_is_deterministic_and_split() -> None:
    first = load_corpus(DataConfig(kind="stdlib"), min_tokens=128)
    second = load_corpus(DataConfig(kind="stdlib"), min_tokens=128)
    assert first.sha256 == second.sha256 and len(first.sha256) == 64
    assert first.size_bytes > 5_000_000
    assert len(first.val) == int(first.size_bytes * 0.1)
    assert len(first.train) + len(first.val) == first.size_bytes
    assert first.vocab_size == 256


def test_batches_are_seeded(text_file: Path) -> None:
    corpus = load_corpus(DataConfig(kind="text", path=str(text_file)), min_tokens=32)
    a = Batches(corpus.train, 4, 32, seed=7, device=torch.device("cpu"))
    b = Batches(corpus.train, 4, 32, seed=7, device=torch.device("cpu"))
    c = Batches(corpus.train, 4, 32, seed=8, device=torch.device("cpu"))
    for _ in range(3):
        (xa, ya), (xb, yb), (xc, _) = a.next(), b.next(), c.next()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert not torch.equal(xa, xc)
        assert torch.equal(xa[:, 1:], ya[:, :-1])
    held_out = fixed_batches(corpus.val, 2, 32, n=3, seed=1, device=torch.device("cpu"))
    assert len(held_out) == 3 and held_out[0][0].shape == (2, 32)


@pytest.mark.parametrize("content", [b"", b"x" * 100])
def test_empty_or_short_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(content)
    with pytest.raises(UserError, match="empty|too short"):
        load_corpus(DataConfig(kind="text", path=str(path)), min_tokens=128)


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_corpus(DataConfig(kind="text", path=str(tmp_path / "nope.txt")), min_tokens=8)
