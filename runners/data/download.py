"""Fetching files over HTTP(S): only a complete, checksum-verified copy ever lands at its path."""
from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from workbench.digest import file_sha256

__all__ = ["ChecksumError", "download", "file_sha256", "RemoteFiles", "fetch_files"]

_CHUNK = 1 << 20  # bytes read per iteration, so that large files never sit in memory whole


class ChecksumError(OSError):
    """A downloaded file's sha256 differs from the expected one."""


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


@dataclass(frozen=True)
class RemoteFiles:
    """A dataset's files on one mirror: `base_url` + name, each with its sha256.

    `folder` is the dataset's folder under the data root, e.g. "mnist".
    """

    folder: str
    base_url: str                       # ends without "/"; a file's URL is base_url + "/" + name
    sha256: Mapping[str, str]           # file name -> hex sha256 of the file as served

    def with_mirror(self, base_url: str, sha256: Mapping[str, str] | None = None) -> "RemoteFiles":
        """The same files from another mirror (tests: a loopback server with generated files)."""
        return replace(self, base_url=base_url.rstrip("/"), sha256=dict(sha256 or self.sha256))


def fetch_files(files: RemoteFiles, root: str | Path, timeout: float = 60.0) -> dict[str, Path]:
    """{name: path} of every file of `files` under `root/files.folder`, downloading missing ones.

    A file already in the cache is used as it is (copy files there by hand on offline machines;
    `file_sha256` checks them). A download that fails says which URL, and what to do instead.
    """
    folder = Path(root) / files.folder
    paths = {}
    for name, sha in files.sha256.items():
        path = folder / name
        if not path.is_file():
            url = f"{files.base_url}/{name}"
            try:
                download(url, path, sha, timeout=timeout)
            except urllib.error.URLError as err:
                raise OSError(  # ENOENT with the path: the CLI says it in one line
                    errno.ENOENT,
                    f"{name} is not there and downloading {url} failed ({err.reason}); copy "
                    f"the file there (sha256 {sha}), or point $PACEBENCH_DATA or data_dir at a "
                    f"folder holding {files.folder}/{name}", str(path)) from err
        paths[name] = path
    return paths
