"""Token sources for the language-model ladder: one interface over four kinds of data.

A TokenSource gives windows of block_size + 1 token ids (int64 tensors): an endless training
stream per run seed, and fixed evaluation windows per split. Every source says its vocabulary
size, how many distinct training tokens it holds (`tokens_available`: a run whose token budget
exceeds it sees tokens more than once, which the launcher records as `repeated_tokens`), and its
identity for the run's record (kind, seed or path, sha256).

- GeneratedSource: runners/data/corpus.py, each training window a fresh document (never a
  token twice), validation and test from their own streams.
- CharSource: tiny-Shakespeare characters, contiguous 90 / 5 / 5 % split, random windows.
- ByteSource: data "bytes:PATH", the bytes of a text file or of a folder's text files
  (vocabulary 256, no tokenizer), each file split 90 / 5 / 5 %, random windows
  (runners/data/text.py says which files are read and how hostile entries are handled).
- TokenFileSource: pre-tokenized files, memory-mapped, random windows, validation apart:
  * a nanoGPT folder: train.bin and val.bin, raw little-endian uint16 token ids;
  * llm.c / modded-nanogpt shards: a 256 x int32 header (magic 20240520, version 1, token
    count), then the uint16 tokens; a folder holding *train*.bin and *val*.bin shards (any
    name other than exactly train.bin / val.bin is read as a shard, its header checked).
  A bad magic, version, size or token id (>= vocab) is a one-line UserError. The vocabulary is
  GPT-2's (50,257) unless given.
"""
from __future__ import annotations

import abc
import hashlib
from pathlib import Path
from typing import Iterator

import numpy as np

from runners.data.corpus import GeneratedCorpus
from workbench.errors import UserError

__all__ = ["TokenSource", "GeneratedSource", "CharSource", "ByteSource", "TokenFileSource",
           "read_shard", "SHARD_MAGIC", "SHARD_VERSION", "HEADER_INTS", "GPT2_VOCAB",
           "token_source"]

SHARD_MAGIC = 20240520   # llm.c's magic number for GPT-2 token shards
SHARD_VERSION = 1        # the shard version holding uint16 tokens
HEADER_INTS = 256        # the header: 256 little-endian int32
GPT2_VOCAB = 50257       # GPT-2's vocabulary: the default for token files
EVAL_SEED = 1729         # fixed: every run scores the same evaluation windows


class TokenSource(abc.ABC):
    """Where a language model's tokens come from."""

    vocab_size: int
    tokens_available: int   # distinct training tokens

    @abc.abstractmethod
    def train_windows(self, batch_size: int, block_size: int, seed: int) -> Iterator[np.ndarray]:
        """Endless deterministic batches (batch_size, block_size + 1) of int64 token ids."""

    @abc.abstractmethod
    def eval_windows(self, split: str, count: int, block_size: int) -> np.ndarray:
        """Fixed windows (count, block_size + 1) of `split` ("train", "validation", "test")."""

    @abc.abstractmethod
    def identity(self) -> dict:
        """The data's description for a run's record: kind, seed or path, sha256."""

    def window_problem(self, block_size: int) -> str | None:
        """Why windows of block_size + 1 tokens cannot be drawn from every split, or None."""
        return None


class GeneratedSource(TokenSource):
    """The generated corpus: training window i of run seed s is train document i of stream s."""

    def __init__(self, corpus: GeneratedCorpus | None = None) -> None:
        self.corpus = corpus or GeneratedCorpus()
        self.vocab_size = self.corpus.vocab_size
        # documents are indexed by int64 per stream: no budget within reach repeats a token
        self.tokens_available = 2 ** 62

    def train_windows(self, batch_size: int, block_size: int, seed: int) -> Iterator[np.ndarray]:
        first = 0
        while True:
            yield self.corpus.documents("train", first, batch_size, block_size + 1, stream=seed)
            first += batch_size

    def eval_windows(self, split: str, count: int, block_size: int) -> np.ndarray:
        # "train" evals score fresh documents of stream 2**31 - 1, one no run seed trains on
        stream = 2 ** 31 - 1 if split == "train" else 0
        return self.corpus.documents(split, 0, count, block_size + 1, stream=stream)

    def identity(self) -> dict:
        return self.corpus.identity()


class _ArraySource(TokenSource):
    """Random windows from 1-D token arrays (memory-mapped or in memory), one per split."""

    splits: dict[str, np.ndarray]

    def window_problem(self, block_size: int) -> str | None:
        for split, ids in self.splits.items():
            if len(ids) < block_size + 2:
                return (f"the {split} tokens ({len(ids):,}) are fewer than one window of "
                        f"block_size + 1 = {block_size + 1}")
        return None

    def _check(self, block_size: int) -> None:
        problem = self.window_problem(block_size)
        if problem:
            raise UserError(f"{problem}: use a smaller block_size")

    def train_windows(self, batch_size: int, block_size: int, seed: int) -> Iterator[np.ndarray]:
        self._check(block_size)
        ids = self.splits["train"]
        rng = np.random.default_rng([seed, 0])
        offsets = np.arange(block_size + 1)
        while True:
            starts = rng.integers(0, len(ids) - block_size, batch_size)
            yield np.asarray(ids[starts[:, None] + offsets], dtype=np.int64)

    def eval_windows(self, split: str, count: int, block_size: int) -> np.ndarray:
        if split not in self.splits:
            raise UserError(f"unknown split {split!r}: valid are {', '.join(self.splits)}")
        self._check(block_size)
        ids = self.splits[split]
        rng = np.random.default_rng([EVAL_SEED, list(self.splits).index(split)])
        starts = rng.integers(0, len(ids) - block_size, count)
        return np.asarray(ids[starts[:, None] + np.arange(block_size + 1)], dtype=np.int64)


class CharSource(_ArraySource):
    """Characters of a text (tiny-Shakespeare): sorted-character vocabulary, 90 / 5 / 5 % split."""

    def __init__(self, text: str) -> None:
        self.vocab = sorted(set(text))
        self.vocab_size = len(self.vocab)
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        lut = np.zeros(int(codes.max()) + 1, dtype=np.int64)
        lut[[ord(ch) for ch in self.vocab]] = np.arange(self.vocab_size)
        ids = lut[codes]
        n_train, n_val = int(len(ids) * 0.90), int(len(ids) * 0.05)
        self.splits = {"train": ids[:n_train], "validation": ids[n_train:n_train + n_val],
                       "test": ids[n_train + n_val:]}
        self.tokens_available = n_train
        self._sha = hashlib.sha256(text.encode("utf-8")).hexdigest()

    def identity(self) -> dict:
        return {"kind": "shakespeare", "vocab_size": self.vocab_size, "sha256": self._sha}


def read_shard(path: Path, vocab_size: int = GPT2_VOCAB) -> np.ndarray:
    """The uint16 tokens of one llm.c shard, memory-mapped; a malformed one: one-line UserError."""
    size = path.stat().st_size
    if size < HEADER_INTS * 4:
        raise UserError(f"{path}: {size} bytes, shorter than the {HEADER_INTS * 4}-byte header "
                        "of an llm.c shard")
    header = np.fromfile(path, dtype="<i4", count=HEADER_INTS)
    if header[0] != SHARD_MAGIC:
        raise UserError(f"{path}: magic {int(header[0])}, not llm.c's {SHARD_MAGIC}: not a "
                        "token shard (a nanoGPT folder holds train.bin and val.bin only)")
    if header[1] != SHARD_VERSION:
        raise UserError(f"{path}: version {int(header[1])}; only version {SHARD_VERSION} "
                        "(uint16 tokens) is read")
    count = int(header[2])
    if count < 0 or size != HEADER_INTS * 4 + 2 * count:
        raise UserError(f"{path}: the header says {count} tokens ({HEADER_INTS * 4 + 2 * count} "
                        f"bytes with the header), the file has {size} bytes")
    return _checked(np.memmap(path, dtype="<u2", mode="r", offset=HEADER_INTS * 4,
                              shape=(count,)), path, vocab_size)


def _read_raw(path: Path, vocab_size: int) -> np.ndarray:
    """A nanoGPT .bin (train.bin, val.bin): raw uint16 tokens, memory-mapped."""
    size = path.stat().st_size
    if size % 2 or size == 0:
        raise UserError(f"{path}: {size} bytes, not a whole number (> 0) of uint16 tokens")
    return _checked(np.memmap(path, dtype="<u2", mode="r"), path, vocab_size)


def _read_file(path: Path, vocab_size: int) -> np.ndarray:
    """train.bin / val.bin are nanoGPT's raw files; any other name is an llm.c shard."""
    if path.name in ("train.bin", "val.bin"):
        return _read_raw(path, vocab_size)
    return read_shard(path, vocab_size)


def _checked(ids: np.ndarray, path: Path, vocab_size: int) -> np.ndarray:
    """`ids` if every token id is < vocab_size (checked in chunks: the file stays mapped)."""
    for start in range(0, len(ids), 1 << 24):
        top = int(ids[start:start + (1 << 24)].max(initial=0))
        if top >= vocab_size:
            raise UserError(f"{path}: token id {top} is outside the vocabulary of {vocab_size} "
                            "(give the right vocab_size, or re-tokenize)")
    return ids


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class ByteSource(_ArraySource):
    """The bytes of a text file or of a folder's text files (runners/data/text.py: which files,
    the per-file 90 / 5 / 5 % split, the sha256), vocabulary 256."""

    vocab_size = 256

    def __init__(self, path: str | Path) -> None:
        from runners.data.text import read_text_bytes  # local: most sources never read text

        self.text = read_text_bytes(path)
        self.splits = self.text.splits
        self.tokens_available = len(self.splits["train"])

    def identity(self) -> dict:
        t = self.text
        return {"kind": "bytes", "path": str(t.path.resolve()), "files": t.files,
                "bytes": t.bytes, "vocab_size": self.vocab_size, "sha256": t.sha256}


class TokenFileSource(_ArraySource):
    """A folder of token files: nanoGPT's train.bin + val.bin, or llm.c shards (*train*.bin and
    *val*.bin). The test split is the validation split (these formats have no third file)."""

    def __init__(self, folder: str | Path, vocab_size: int = GPT2_VOCAB) -> None:
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or \
                not 2 <= vocab_size <= 65536:
            raise UserError(f"bad vocab_size {vocab_size!r} for token files: an integer in "
                            "2..65536 (uint16 token ids)")
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise UserError(f"token data {str(self.folder)!r} is not a folder: give a folder "
                            "holding train.bin and val.bin, or llm.c *train*.bin / *val*.bin shards")
        self.vocab_size = vocab_size
        found = {}
        for split, pattern in (("train", "*train*.bin"), ("validation", "*val*.bin")):
            files = sorted(self.folder.glob(pattern))
            if not files:
                raise UserError(f"{self.folder}: no {pattern} file (nanoGPT's train.bin / val.bin "
                                "or llm.c shards are read)")
            found[split] = files
        self.files = [f for files in found.values() for f in files]
        self.splits = {split: _concat([_read_file(f, vocab_size) for f in files])
                       for split, files in found.items()}
        self.splits["test"] = self.splits["validation"]
        self.tokens_available = len(self.splits["train"])
        self._identity: dict | None = None

    def identity(self) -> dict:
        """Read once per source: the sha256 covers every file's name and bytes (a 10 GB corpus
        takes tens of seconds, before the clock)."""
        if self._identity is None:
            self._identity = self._hash()
        return dict(self._identity)

    def _hash(self) -> dict:
        digest = hashlib.sha256()
        for f in self.files:
            digest.update(f.name.encode() + b"\0")
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        return {"kind": "token_files", "path": str(self.folder.resolve()),
                "files": [f.name for f in self.files], "vocab_size": self.vocab_size,
                "sha256": digest.hexdigest()}


def token_source(data: str, data_dir: str | Path | None = None, seed: int = 0,
                 vocab_size: int | None = None) -> TokenSource:
    """The source for knob `data`: "generated" (corpus seed `seed`), "shakespeare", "bytes:PATH"
    (the bytes of PATH's text files, runners/data/text.py), or a path to a folder of token files
    (vocabulary `vocab_size`, default GPT-2's)."""
    if data == "generated":
        return GeneratedSource(GeneratedCorpus(seed=seed))
    if data == "shakespeare":
        from runners.data.shakespeare import read_tinyshakespeare
        return CharSource(read_tinyshakespeare(data_dir))
    if not isinstance(data, str) or not data or "\0" in data:
        raise UserError(f"bad data {data!r}: valid are generated, shakespeare, bytes:PATH, or "
                        "a folder of token files")
    if data.startswith("bytes:"):
        if vocab_size not in (None, 256):
            raise UserError(f"bad vocab_size {vocab_size!r} for bytes data: its vocabulary is "
                            "the 256 byte values (leave vocab_size out)")
        return ByteSource(data[len("bytes:"):])
    return TokenFileSource(data, GPT2_VOCAB if vocab_size is None else vocab_size)
