"""Tiny-Shakespeare (Karpathy's char-rnn corpus): where it lives, fetching it, reading it."""
from __future__ import annotations

import errno
import os
import urllib.error
from pathlib import Path

from runners.data.download import download

__all__ = ["TINYSHAKESPEARE_URL", "TINYSHAKESPEARE_SHA256", "TINYSHAKESPEARE_BYTES",
           "data_root", "default_cache", "tinyshakespeare_path", "read_tinyshakespeare"]

TINYSHAKESPEARE_URL = ("https://raw.githubusercontent.com/karpathy/char-rnn/master/"
                       "data/tinyshakespeare/input.txt")
TINYSHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
TINYSHAKESPEARE_BYTES = 1_115_394
DATA_ENV = "PACEBENCH_DATA"  # environment variable naming the data folder


def data_root(data_dir: str | Path | None = None) -> Path:
    """The data folder: `data_dir`, else $PACEBENCH_DATA, else the repository's datasets/cache."""
    if data_dir is not None:
        return Path(data_dir)
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    return default_cache()


def default_cache() -> Path:
    """The repository's datasets/cache in a checkout; installed from a wheel (no checkout around
    the package), $XDG_CACHE_HOME/pacebench or ~/.cache/pacebench: never a folder inside
    site-packages (where `datasets` would shadow Hugging Face's package)."""
    import runners  # local import: only to locate the repository, no I/O
    root = Path(runners.__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        return root / "datasets" / "cache"
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "pacebench"


def tinyshakespeare_path(data_dir: str | Path | None = None, timeout: float = 60.0) -> Path:
    """`<data root>/tinyshakespeare/input.txt`, downloaded there (checksum verified) if absent."""
    path = data_root(data_dir) / "tinyshakespeare" / "input.txt"
    if not path.is_file():
        try:
            download(TINYSHAKESPEARE_URL, path, TINYSHAKESPEARE_SHA256, timeout=timeout)
        except urllib.error.URLError as err:  # offline, DNS, HTTP error: say what to do instead
            raise OSError(  # ENOENT with the path: the CLI says it in one environment line
                errno.ENOENT,
                f"tiny-Shakespeare is not there and downloading {TINYSHAKESPEARE_URL} failed "
                f"({err.reason}); copy input.txt (sha256 {TINYSHAKESPEARE_SHA256}) there, or point "
                f"${DATA_ENV} or data_dir at a folder holding tinyshakespeare/input.txt",
                str(path)) from err
    return path


def read_tinyshakespeare(data_dir: str | Path | None = None) -> str:
    """The whole corpus as one string (1,115,394 characters, 65 distinct)."""
    return tinyshakespeare_path(data_dir).read_text(encoding="utf-8")
