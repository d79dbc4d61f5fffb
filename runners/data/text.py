"""Bytes of text files as tokens: real language with no tokenizer (data `bytes:PATH`).

PATH is one file or a folder. A file given by name is read whatever its name; in a folder the
text files are those, at any depth, whose suffix is one of TEXT_SUFFIXES (case ignored), read in
the order of their paths relative to the folder ('/'-separated, sorted as text). Skipped there:
names starting with '.' (files and folders: .git and the like, silently), links to folders (not
followed), and, each with one warning line for them all, links that point out of the folder,
entries that are not regular files (FIFOs, sockets, devices), unreadable files, and binary
files (a NUL byte anywhere: the test git and grep use). A PATH that is missing, not a regular
file or folder, binary, or a folder without a text file is a one-line UserError.

Every byte is a token (vocabulary 256, whatever the encoding: UTF-8 text gives 1 to 4 tokens a
character). The split is per file and contiguous, as tiny-Shakespeare's: the first 90 % of each
file's bytes are training, the next 5 % validation, the last 5 % test (cuts at floor(0.90 n) and
floor(0.95 n)); each split joins its pieces in path order, and windows are drawn at random from
the joined bytes (runners/data/tokens.py). The identity's sha256 is, for a file, the sha256 of
its bytes (what `sha256sum` prints); for a folder, the sha256 over each file in order of its
relative path (UTF-8), a NUL byte, its size in bytes as decimal text, a NUL byte and its bytes.
The text is held in memory, one byte per token.
"""
from __future__ import annotations

import hashlib
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.errors import UserError
from workbench.store_files import file_kind

__all__ = ["TextBytes", "read_text_bytes", "TEXT_SUFFIXES", "SPLIT_CUTS", "text_files"]

TEXT_SUFFIXES = (".txt", ".text", ".md", ".rst", ".tex", ".csv", ".tsv", ".json", ".jsonl",
                 ".html", ".htm", ".xml")
SPLIT_CUTS = (0.90, 0.95)  # each file: [0, 90 %) train, [90 %, 95 %) validation, [95 %, 1] test
SHOWN = 3                  # skipped entries named in the warning (the rest are counted)


def _read_regular(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file (checked on the open descriptor, so a FIFO
    swapped in after a listing is never read); else OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO's open must not wait for a writer
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(f"not a regular file ({file_kind(mode)})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def _candidates(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(relative name, path) of every file of the folder with a text suffix, sorted, and the
    entries skipped on the way ("'name' (why)", the name escaped as Python writes it, so a name
    holding a line break stays on the warning's one line); hidden names and links to folders
    left out."""
    found, skipped = [], []
    inside = root.resolve()
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if name.startswith(".") or not name.lower().endswith(TEXT_SUFFIXES):
                continue
            if path.is_symlink():
                try:
                    target = path.resolve()
                except (OSError, RuntimeError):  # a loop of links (RuntimeError before 3.13)
                    skipped.append(f"{rel!r} (a link that resolves to nothing)")
                    continue
                if not target.is_relative_to(inside):
                    skipped.append(f"{rel!r} (a link out of the folder)")
                    continue
            found.append((rel, path))
    return sorted(found), skipped


def text_files(root: Path) -> tuple[list[tuple[str, bytes]], list[str]]:
    """[(relative name, bytes)] of the folder's text files in order, and what was skipped."""
    candidates, skipped = _candidates(root)
    texts = []
    for rel, path in candidates:
        try:
            data = _read_regular(path)
        except OSError as err:
            skipped.append(f"{rel!r} ({err.strerror or err})")
            continue
        if b"\0" in data:
            skipped.append(f"{rel!r} (binary: a NUL byte)")
            continue
        texts.append((rel, data))
    return texts, sorted(skipped)


def _warn_skipped(root: Path, skipped: list[str]) -> None:
    if skipped:
        more = f" and {len(skipped) - SHOWN} more" if len(skipped) > SHOWN else ""
        warnings.warn(f"bytes data {str(root)!r}: skipped {len(skipped)} entries: "
                      f"{'; '.join(skipped[:SHOWN])}{more}", stacklevel=4)


def _read_one(path: Path) -> list[tuple[str, bytes]]:
    try:
        data = _read_regular(path)
    except OSError as err:
        raise UserError(f"bytes data {str(path)!r}: cannot be read: {err.strerror or err} "
                        "(give a text file or a folder of text files)") from None
    if b"\0" in data:
        raise UserError(f"bytes data {str(path)!r} is binary (it holds a NUL byte): give a "
                        "text file or a folder of text files")
    return [(path.name, data)]


@dataclass(frozen=True)
class TextBytes:
    """The text of a file or folder as byte tokens, split (module docstring)."""

    path: Path                     # as given
    files: int                     # text files read
    bytes: int                     # their bytes, all splits
    splits: dict[str, np.ndarray]  # "train", "validation", "test": uint8 token ids
    sha256: str


def read_text_bytes(path: str | Path) -> TextBytes:
    """The bytes of text file `path`, or of the text files of folder `path`; a bad path is a
    one-line UserError, a bad entry of a folder a warning."""
    if not str(path) or "\0" in str(path):
        raise UserError(f"bad bytes data path {str(path)!r}: give bytes:PATH, PATH a text "
                        "file or a folder of text files")
    path = Path(path)
    if path.is_dir():
        texts, skipped = text_files(path)
        _warn_skipped(path, skipped)
        if not texts:
            raise UserError(f"bytes data {str(path)!r}: no text file in the folder (read are "
                            f"names ending {', '.join(TEXT_SUFFIXES)}, without a NUL byte)")
    elif path.exists():
        texts = _read_one(path)
    else:
        raise UserError(f"bytes data {str(path)!r} does not exist: give a text file or a "
                        "folder of text files")
    return TextBytes(path, len(texts), sum(len(data) for _, data in texts), _split(texts),
                     _sha256(texts, folder=path.is_dir()))


def _split(texts: list[tuple[str, bytes]]) -> dict[str, np.ndarray]:
    """Per file: its first 90 % train, next 5 % validation, last 5 % test; joined in order."""
    parts: dict[str, list[np.ndarray]] = {"train": [], "validation": [], "test": []}
    for _, data in texts:
        ids = np.frombuffer(data, dtype=np.uint8)
        a, b = (int(len(ids) * cut) for cut in SPLIT_CUTS)
        for split, piece in zip(parts, (ids[:a], ids[a:b], ids[b:])):
            parts[split].append(piece)
    return {split: np.concatenate(pieces) for split, pieces in parts.items()}


def _sha256(texts: list[tuple[str, bytes]], folder: bool) -> str:
    digest = hashlib.sha256()
    for rel, data in texts:
        if folder:
            digest.update(rel.encode("utf-8", "surrogateescape") + b"\0"
                          + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()
