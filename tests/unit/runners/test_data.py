"""Dataset access: verified downloads from a local HTTP server, the data folder, the real corpus."""
from __future__ import annotations

import hashlib
import http.server
import threading
from collections import Counter

import pytest

from runners.data import ChecksumError, download, file_sha256, tinyshakespeare_path
from runners.data.digits import SPLIT_SIZES, load_digits_splits
from runners.data.shakespeare import TINYSHAKESPEARE_BYTES, TINYSHAKESPEARE_SHA256, data_root

FIXTURE = b"First Citizen:\nBefore we proceed any further, hear me speak.\n" * 50
DIGITS_SPLIT_SHA256 = "087271239e00201f28b50a0e8b562a473aa58d5635cbfc611cfe4c1ec6a89ece"


@pytest.fixture
def server(tmp_path):
    """Serves `tmp_path/www` on 127.0.0.1 at a free port; yields the base URL."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "input.txt").write_bytes(FIXTURE)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(www), **kwargs)

        def log_message(self, *args):  # keep pytest output clean
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_download_with_the_right_checksum_lands_the_file(server, tmp_path):
    dest = tmp_path / "cache" / "sub" / "input.txt"
    sha = hashlib.sha256(FIXTURE).hexdigest()
    assert download(f"{server}/input.txt", dest, sha, timeout=10) == dest
    assert dest.read_bytes() == FIXTURE
    assert file_sha256(dest) == sha
    assert [p.name for p in dest.parent.iterdir()] == ["input.txt"]  # no temp file left


def test_checksum_mismatch_is_a_clear_error_and_leaves_no_file(server, tmp_path):
    dest = tmp_path / "cache" / "input.txt"
    url = f"{server}/input.txt"
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as err:
        download(url, dest, wrong, timeout=10)
    msg = str(err.value)
    assert url in msg and wrong in msg and hashlib.sha256(FIXTURE).hexdigest() in msg
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_tinyshakespeare_path_finds_an_existing_file_without_downloading(tmp_path):
    path = tmp_path / "tinyshakespeare" / "input.txt"
    path.parent.mkdir()
    path.write_text("hello")
    assert tinyshakespeare_path(tmp_path) == path  # no network here: it must not try


def test_data_root_prefers_argument_then_env_then_repo_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PACEBENCH_DATA", str(tmp_path / "env"))
    assert data_root(tmp_path / "arg") == tmp_path / "arg"
    assert data_root() == tmp_path / "env"
    monkeypatch.delenv("PACEBENCH_DATA")
    assert data_root().parts[-2:] == ("datasets", "cache")


def test_real_tinyshakespeare_via_env(monkeypatch, shared_data):
    monkeypatch.setenv("PACEBENCH_DATA", str(shared_data))
    path = tinyshakespeare_path()
    assert path.stat().st_size == TINYSHAKESPEARE_BYTES
    assert file_sha256(path) == TINYSHAKESPEARE_SHA256


def test_digits_split_is_fixed_and_disjoint():
    splits = load_digits_splits()
    assert {k: len(y) for k, (x, y) in splits.items()} == SPLIT_SIZES
    x, y = splits["train"]
    assert x.shape == (1197, 1, 8, 8) and x.dtype.name == "float32" and y.dtype.name == "int64"
    assert 0.0 <= x.min() and x.max() <= 1.0
    again = load_digits_splits()
    for k in splits:
        assert (splits[k][0] == again[k][0]).all() and (splits[k][1] == again[k][1]).all()
    # a partition: the three splits together hold every image exactly once
    from sklearn.datasets import load_digits
    full = Counter(r.tobytes() for r in (load_digits().data / 16.0).astype("float32"))
    parts = Counter(r.tobytes() for x, _ in splits.values() for r in x.reshape(len(x), -1))
    assert parts == full
    # the fingerprint that pins the split; if this changes, every published target is invalid
    assert y[:10].tolist() == [2, 8, 2, 6, 6, 7, 1, 9, 8, 5]
    assert splits["test"][1][:10].tolist() == [8, 8, 2, 2, 2, 9, 8, 8, 3, 6]
    digest = hashlib.sha256()
    for name in ("train", "validation", "test"):
        digest.update(splits[name][0].tobytes())
        digest.update(splits[name][1].tobytes())
    assert digest.hexdigest() == DIGITS_SPLIT_SHA256  # also stated in datasets/digits.md
