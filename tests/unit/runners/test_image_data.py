"""MNIST, Fashion-MNIST and CIFAR-10: readers and downloads on generated files in the real formats,
served by a local HTTP server on loopback (this machine has no internet)."""
from __future__ import annotations

import gzip
import http.server
import pickle
import threading

import numpy as np
import pytest

from fake_datasets import cifar_batch_pickle, idx_bytes, write_cifar10_tarball, write_mnist_like
from runners.data import ChecksumError, load_cifar10_splits, load_mnist_like_splits, read_idx
from runners.data.cifar10 import CIFAR10, TARBALL, read_cifar10_tarball
from workbench.errors import UserError
from runners.data.mnist import FASHION_MNIST, MNIST, MNIST_LIKE


@pytest.fixture
def www(tmp_path):
    """(folder served, base URL) of a loopback HTTP server on a free port."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_idx_reader_roundtrips_every_type_gzipped_or_not(tmp_path):
    for array in (np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
                  np.array([-5, 70000, 3], dtype=np.int32),
                  np.linspace(0, 1, 6, dtype=np.float32).reshape(3, 2)):
        plain, packed = tmp_path / "a.idx", tmp_path / "a.idx.gz"
        plain.write_bytes(idx_bytes(array))
        packed.write_bytes(gzip.compress(idx_bytes(array)))
        for path in (plain, packed):
            back = read_idx(path)
            assert back.dtype == array.dtype.newbyteorder("=") and (back == array).all()


def test_idx_reader_rejects_bad_magic_and_truncation(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x00\x01\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(bad)
    short = tmp_path / "short"
    short.write_bytes(idx_bytes(np.zeros((4, 4), dtype=np.uint8))[:-3])
    with pytest.raises(ValueError, match="truncated"):
        read_idx(short)
    for name, raw in (("header", b"\x00\x00\x08\x03\x00\x00"),  # 3 sizes promised, none given
                      ("gzip", gzip.compress(idx_bytes(np.zeros((4, 4), np.uint8)))[:-9])):
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(UserError, match="truncated or corrupt"):  # bad input, not ours
            read_idx(tmp_path / name)


@pytest.mark.parametrize("dataset", ["mnist", "fashion_mnist"])
def test_mnist_like_download_from_a_mirror_then_cached_and_split(www, tmp_path, dataset):
    root, url = www
    sums = write_mnist_like(root, n_train=200, n_test=50)
    files = MNIST_LIKE[dataset].with_mirror(url, sums)
    cache = tmp_path / "cache"
    splits = load_mnist_like_splits(dataset, cache, files=files)
    assert sorted(p.name for p in (cache / files.folder).iterdir()) == sorted(sums)  # no temp files
    assert {k: len(y) for k, (_, y) in splits.items()} == {"train": 180, "validation": 20, "test": 50}
    x, y = splits["train"]
    assert x.shape == (180, 1, 28, 28) and x.dtype == np.float32 and y.dtype == np.int64
    assert 0.0 <= x.min() and x.max() <= 1.0
    # train and validation partition the official training set; the pixels are the file's /255
    raw = read_idx(root / "train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    got = np.concatenate([splits["train"][0], splits["validation"][0]])[:, 0]
    assert sorted(map(bytes, got.reshape(200, -1))) == sorted(map(bytes, raw.reshape(200, -1)))
    # a second load uses the cache: the server may be gone
    for f in root.iterdir():
        f.unlink()
    again = load_mnist_like_splits(dataset, cache, files=files)
    assert (again["validation"][1] == splits["validation"][1]).all()


def test_mnist_checksum_mismatch_keeps_the_cache_clean(www, tmp_path):
    root, url = www
    write_mnist_like(root)
    with pytest.raises(ChecksumError, match="expected sha256 440fcabf"):
        load_mnist_like_splits("mnist", tmp_path / "cache", files=MNIST.with_mirror(url))
    assert not any((tmp_path / "cache" / "mnist").iterdir())


def test_missing_file_and_no_server_says_where_to_put_it(tmp_path):
    offline = FASHION_MNIST.with_mirror("http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(OSError, match="fashion_mnist/train-images-idx3-ubyte.gz"):
        load_mnist_like_splits("fashion_mnist", tmp_path, files=offline)
    with pytest.raises(ValueError, match="valid are mnist, fashion_mnist"):
        load_mnist_like_splits("kmnist", tmp_path)


def test_official_checksums_are_distinct_sha256_hex():
    sums = [s for f in (MNIST, FASHION_MNIST, CIFAR10) for s in f.sha256.values()]
    assert len(set(sums)) == 9 and all(len(s) == 64 and int(s, 16) >= 0 for s in sums)


def test_cifar10_download_read_and_standardised_splits(www, tmp_path):
    root, url = www
    sha = write_cifar10_tarball(root / TARBALL, per_batch=20, n_test=30)
    splits = load_cifar10_splits(tmp_path / "cache", files=CIFAR10.with_mirror(url, {TARBALL: sha}))
    assert {k: len(y) for k, (_, y) in splits.items()} == {"train": 90, "validation": 10, "test": 30}
    x = splits["train"][0]
    assert x.shape == (90, 3, 32, 32) and x.dtype == np.float32
    np.testing.assert_allclose(x.mean(axis=(0, 2, 3)), 0.0, atol=1e-5)  # standardised on train
    np.testing.assert_allclose(x.std(axis=(0, 2, 3)), 1.0, atol=1e-4)
    raw = read_cifar10_tarball(tmp_path / "cache" / "cifar10" / TARBALL)
    assert raw["train"][0].shape == (100, 3, 32, 32) and raw["train"][0].dtype == np.uint8
    # labels in batch order: batch i holds (arange(20) + i) % 10
    assert raw["train"][1][:3].tolist() == [1, 2, 3] and raw["train"][1][20:23].tolist() == [2, 3, 4]
    assert raw["test"][1][:3].tolist() == [0, 1, 2]


def test_cifar10_pixel_layout_is_rgb_planes_row_major(tmp_path):
    data = np.zeros((1, 3072), dtype=np.uint8)
    data[0, 0] = 255            # red plane, row 0, col 0
    data[0, 1024 + 33] = 128    # green plane, row 1, col 1
    path = tmp_path / TARBALL
    write_cifar10_tarball(path, extra_pickle=cifar_batch_pickle(data, [7], "one image"))
    x, y = read_cifar10_tarball(path)["train"]
    assert x[0, 0, 0, 0] == 255 and x[0, 1, 1, 1] == 128 and y[0] == 7


def test_cifar10_refuses_a_pickle_that_names_other_globals(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("this must never run",))

    path = tmp_path / TARBALL
    write_cifar10_tarball(path, extra_pickle=pickle.dumps({b"data": Evil()}, protocol=2))
    with pytest.raises(UserError, match="print: only NumPy arrays"):  # bad input: one line
        read_cifar10_tarball(path)
    path.write_bytes(b"not a tarball")  # e.g. a wrong file copied into the data folder by hand
    with pytest.raises(UserError, match="not the CIFAR-10 python tarball"):
        read_cifar10_tarball(path)
