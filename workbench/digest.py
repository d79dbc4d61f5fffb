"""The one SHA-256 of a file's bytes: plug-ins, submissions, data files, tables and the modules
behind reuse keys are all identified by it."""
from __future__ import annotations

import hashlib
import os

__all__ = ["file_sha256"]


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of the bytes of the file at `path`, read in blocks (hashlib.file_digest)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
