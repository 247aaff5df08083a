"""Corpora and the seeded batch sampler. No downloads, ever.

``stdlib`` and ``text`` are bytes (vocabulary 256); ``tokens`` is a flat file of uint16 token ids in
nanoGPT's ``.bin`` format, memory-mapped, with ``data.vocab_size``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from ..errors import UserError
from ..files import file_sha256
from ..schema import DataConfig, TrainConfig
from .budget import tokens_read

__all__ = ["Corpus", "Corpora", "load_corpus", "stdlib_files", "vocab_size", "Batches", "fixed_batches", "BYTE_VOCAB",
           "epochs_warning", "check_validation_split"]

BYTE_VOCAB = 256

SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"})


@dataclass(frozen=True)
class Corpus:
    """Token ids split into a training part and a held-out validation tail."""

    train: Tensor | np.ndarray  # (N_train,) uint8 tensor, or a uint16 memmap for token files
    val: Tensor | np.ndarray  # (N_val,)
    vocab_size: int
    source: str
    size_bytes: int
    sha256: str

    def describe(self) -> dict[str, object]:
        return {"source": self.source, "size_bytes": self.size_bytes, "sha256": self.sha256,
                "vocab_size": self.vocab_size, "train_tokens": len(self.train), "val_tokens": len(self.val)}

    def headline(self) -> str:
        """One line naming the corpus for a run's header and the dry run: source, size, digest, split sizes."""
        return (f"corpus {self.source} · {_megabytes(self.size_bytes)} · sha256 {self.sha256[:12]} · "
                f"{len(self.train):,} train / {len(self.val):,} val tokens")


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def stdlib_files() -> list[Path]:
    """The interpreter's standard-library ``.py`` files, sorted, without site-packages and test packages."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(root).parts[:-1]))


@functools.lru_cache(maxsize=1)
def _stdlib_bytes() -> bytes:
    """The standard library's sources joined, read once per process (about 2,000 files; a sweep's header, its checks
    and its trainer each read the corpus)."""
    return b"".join(p.read_bytes() for p in stdlib_files())


def _read_bytes(cfg: DataConfig) -> tuple[bytes, str]:
    if cfg.kind == "stdlib":
        raw = _stdlib_bytes()
        if not raw:
            raise UserError("no standard-library sources found for data=stdlib", "use data=text data.path=FILE")
        return raw, f"stdlib:{sysconfig.get_paths()['stdlib']}"
    path = Path(str(cfg.path)).expanduser()
    if not path.is_file():
        raise UserError(f"data.path={cfg.path} does not exist or is not a file", "give the path of a text file")
    return path.read_bytes(), str(path.resolve())


def vocab_size(cfg: DataConfig) -> int:
    """The model's vocabulary, known from the data config without reading the data."""
    return int(cfg.vocab_size) if cfg.kind == "tokens" and cfg.vocab_size else BYTE_VOCAB


def _load_tokens(cfg: DataConfig, min_tokens: int) -> Corpus:
    path = Path(str(cfg.path)).expanduser()
    if not path.is_file():
        raise UserError(f"data.path={cfg.path} does not exist or is not a file", "give a uint16 .bin token file")
    if path.stat().st_size == 0:
        raise UserError(f"data file {path} is empty", "give a file with token ids in it")
    if path.stat().st_size % 2:
        raise UserError(f"data file {path} has an odd number of bytes", "give a flat file of uint16 token ids")
    ids = np.memmap(path, dtype=np.uint16, mode="r")
    vocab = vocab_size(cfg)
    top = int(ids.max())
    if top >= vocab:
        raise UserError(f"data file {path} holds token id {top} >= data.vocab_size={vocab}",
                        f"set data.vocab_size to at least {top + 1}")
    n_val = int(len(ids) * cfg.val_fraction)
    if n_val < min_tokens + 1 or len(ids) - n_val < min_tokens + 1:
        raise UserError(f"data file {path} is too short ({len(ids)} tokens) for sequences of {min_tokens} tokens",
                        "give a longer file or lower train.seq_len")
    return Corpus(train=ids[: len(ids) - n_val], val=ids[len(ids) - n_val :], vocab_size=vocab,
                  source=str(path.resolve()), size_bytes=path.stat().st_size, sha256=file_sha256(path))


class Corpora:
    """Corpora loaded once each: a corpus is its data config read at a sequence length (``load_corpus``)."""

    def __init__(self) -> None:
        self.loaded: dict[str, Corpus] = {}

    def get(self, data: DataConfig, seq_len: int) -> Corpus:
        key = json.dumps([dataclasses.asdict(data), seq_len], sort_keys=True)
        if key not in self.loaded:
            self.loaded[key] = load_corpus(data, seq_len)
        return self.loaded[key]


def load_corpus(cfg: DataConfig, min_tokens: int) -> Corpus:
    """Read the corpus; both splits must hold at least ``min_tokens`` + 1 tokens (one training sequence)."""
    if cfg.kind == "tokens":
        return _load_tokens(cfg, min_tokens)
    raw, source = _read_bytes(cfg)
    if not raw:
        raise UserError(f"data file {source} is empty", "give a file with text in it")
    n_val = int(len(raw) * cfg.val_fraction)
    need = (min_tokens + 1)
    if n_val < need or len(raw) - n_val < need:
        raise UserError(f"data file {source} is too short ({len(raw)} bytes) for sequences of {min_tokens} tokens",
                        f"give at least {int(need / min(cfg.val_fraction, 1 - cfg.val_fraction)) + 1} bytes "
                        "or lower train.seq_len")
    tokens = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    return Corpus(train=tokens[: len(raw) - n_val], val=tokens[len(raw) - n_val :], vocab_size=BYTE_VOCAB, source=source,
                  size_bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest())


def epochs_warning(corpus: Corpus, train: TrainConfig) -> Optional[str]:
    """The warning for a run that reads more tokens than the training split holds (more than one epoch); None when
    it reads less."""
    read, held = tokens_read(train), len(corpus.train)
    if read <= held:
        return None
    return (f"train.steps={train.steps} × train.batch_size={train.batch_size} × train.seq_len={train.seq_len} reads "
            f"{read:,} tokens, {read / held:.1f} epochs of the training split ({held:,} tokens) of {corpus.source}; "
            "repeated tokens overfit and can move the optimal learning rate: give a larger corpus, or lower "
            "train.steps, train.batch_size or train.seq_len")


def eval_batch_size(train: TrainConfig) -> int:
    """Sequences per evaluation batch: ``train.eval_batch_size``, else the training batch size."""
    return train.batch_size if train.eval_batch_size is None else train.eval_batch_size


def check_validation_split(corpus: Corpus, data: DataConfig, train: TrainConfig) -> None:
    """Refuse a validation split smaller than one evaluation reads (``eval_batches`` × ``batch_size`` windows of
    ``seq_len`` + 1 tokens): its loss would average the same few tokens over and over."""
    held, total = len(corpus.val), len(corpus.train) + len(corpus.val)
    need = train.eval_batches * eval_batch_size(train) * (train.seq_len + 1)
    if held >= need:
        return
    fraction = (need + 1) / total  # + 1: the split is int(total × fraction) tokens
    sequences = (f"train.batch_size={train.batch_size}" if train.eval_batch_size is None else
                 f"train.eval_batch_size={train.eval_batch_size}")
    larger = f"raise data.val_fraction to {math.ceil(fraction * 100) / 100:g}, " if fraction <= 0.5 else ""
    raise UserError(f"the validation split of {corpus.source} holds {held:,} tokens (data.val_fraction="
                    f"{data.val_fraction:g} of {total:,}) but one evaluation reads {need:,} (train.eval_batches="
                    f"{train.eval_batches} × {sequences} × "
                    f"(train.seq_len={train.seq_len} + 1))",
                    f"{larger}lower train.eval_batches, or give a larger corpus")


def _gather(tokens: Tensor | np.ndarray, starts: Tensor, seq_len: int) -> tuple[Tensor, Tensor]:
    index = starts[:, None] + torch.arange(seq_len + 1)[None, :]  # (B, T+1)
    if isinstance(tokens, np.ndarray):
        window = torch.from_numpy(tokens[index.numpy()].astype(np.int64))
    else:
        window = tokens[index].long()
    return window[:, :-1], window[:, 1:]


class Batches:
    """Random (x, y) windows from a seeded generator: the same seed gives the same batches in the same order."""

    def __init__(self, tokens: Tensor | np.ndarray, batch_size: int, seq_len: int, seed: int, device: torch.device) -> None:
        self.tokens, self.batch_size, self.seq_len, self.device = tokens, batch_size, seq_len, device
        self.generator = torch.Generator().manual_seed(seed)

    def next(self) -> tuple[Tensor, Tensor]:
        high = len(self.tokens) - self.seq_len - 1
        starts = torch.randint(0, high + 1, (self.batch_size,), generator=self.generator)
        x, y = _gather(self.tokens, starts, self.seq_len)
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)


def fixed_batches(tokens: Tensor | np.ndarray, batch_size: int, seq_len: int, n: int, seed: int,
                  device: torch.device) -> list[tuple[Tensor, Tensor]]:
    """``n`` held-out batches, identical for every run with the same shapes and seed."""
    sampler = Batches(tokens, batch_size, seq_len, seed, device)
    return [sampler.next() for _ in range(n)]
