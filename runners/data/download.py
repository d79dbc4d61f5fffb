"""Fetching a file over HTTP(S): only a complete, checksum-verified copy ever lands at its path."""
from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

__all__ = ["ChecksumError", "download", "file_sha256"]

_CHUNK = 1 << 20  # bytes read per iteration, so that large files never sit in memory whole


class ChecksumError(OSError):
    """A downloaded file's sha256 differs from the expected one."""


def file_sha256(path: str | Path) -> str:
    """Hex sha256 digest of the file at `path`."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(url: str, dest: str | Path, sha256: str, timeout: float = 60.0) -> Path:
    """Fetch `url` to `dest`, verifying its sha256; returns `dest`.

    The bytes go to a temporary file next to `dest` and are renamed into place only when the
    checksum matches, so a crash or a bad download never leaves a partial or wrong file at `dest`.
    `timeout` is in seconds, per blocking socket operation (urllib's meaning).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
        actual = digest.hexdigest()
        if actual != sha256.lower():
            raise ChecksumError(
                f"checksum mismatch for {url}: expected sha256 {sha256.lower()}, got {actual}; "
                f"the downloaded file was deleted, nothing was written to {dest}")
        os.replace(tmp, dest)  # atomic on one filesystem: readers see no file or the whole file
    finally:
        tmp.unlink(missing_ok=True)
    return dest
