"""MNIST-1D: generated offline from a seed (same seed, same arrays), split, cached and checked."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from runners.data import mnist1d as M

SMALL = {"num_samples": 200, "train_split": 0.5, "seed": 42}
SMALL_SHA256 = "97d5b1d126e2a6ce3db2e64c8f42c8f9f9ff544309e9ab0d19ed77b1b6cccbf5"
# The workloads' arrays (datasets/mnist1d.md states the same fingerprint)
FULL_SHA256 = "2375716b7696c1310288edf784c975cc5772f89898b3cce24bfb5e109f179915"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty data folder and repository cache; counts the generations."""
    monkeypatch.setattr(M, "_repo_cache", lambda: tmp_path / "repo-cache")
    calls = []
    real = M.generate

    def counting(overrides=M.GENERATION):
        calls.append(dict(overrides))
        return real(overrides)

    monkeypatch.setattr(M, "generate", counting)
    return tmp_path / "data", calls


def test_same_seed_same_arrays_other_seed_other_arrays():
    assert M.fingerprint(M.generate(SMALL)) == SMALL_SHA256
    assert M.fingerprint(M.generate(SMALL)) == SMALL_SHA256
    assert M.fingerprint(M.generate({**SMALL, "seed": 7})) != SMALL_SHA256


def test_generating_leaves_the_global_random_state_alone_and_never_downloads(monkeypatch):
    import mnist1d.data

    monkeypatch.setattr(mnist1d.data, "get_dataset", lambda *a, **k: pytest.fail("download"))
    np.random.seed(3)
    random.seed(3)
    expected = (np.random.rand(), random.random())
    np.random.seed(3)
    random.seed(3)
    M.generate(SMALL)
    assert (np.random.rand(), random.random()) == expected


def test_the_workloads_splits_sizes_and_fingerprint():
    splits = M.load_mnist1d_splits()
    assert {k: (x.shape, y.shape) for k, (x, y) in splits.items()} == {
        "train": ((10_000, 40), (10_000,)), "validation": ((5_000, 40), (5_000,)),
        "test": ((5_000, 40), (5_000,))}
    assert {x.dtype for x, _ in splits.values()} == {np.dtype("float32")}
    assert {y.dtype for _, y in splits.values()} == {np.dtype("int64")}
    for _, y in splits.values():
        assert set(np.unique(y)) == set(range(10))
    assert M.fingerprint(splits) == FULL_SHA256


def test_a_cache_hit_does_not_regenerate(cache):
    data_dir, calls = cache
    first = M.load_mnist1d_splits(data_dir, SMALL)
    arrays, sidecar = M.cache_paths(data_dir / M.FOLDER, SMALL)
    meta = json.loads(sidecar.read_text())
    assert meta["sha256"] == SMALL_SHA256 and meta["generation"]["seed"] == 42
    assert meta["generation"]["final_seq_length"] == 40  # the package defaults are recorded too
    assert meta["split_sizes"] == {"train": 100, "validation": 50, "test": 50}
    again = M.load_mnist1d_splits(data_dir, SMALL)
    assert len(calls) == 1
    assert M.fingerprint(again) == M.fingerprint(first)


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "other arrays", "bad sidecar",
                                    "other parameters"])
def test_a_corrupted_cache_is_detected_and_regenerated(cache, damage, capsys):
    data_dir, calls = cache
    M.load_mnist1d_splits(data_dir, SMALL)
    arrays, sidecar = M.cache_paths(data_dir / M.FOLDER, SMALL)
    blob = bytearray(arrays.read_bytes())
    if damage == "flip a byte":
        blob[len(blob) // 2] ^= 0xFF
        arrays.write_bytes(bytes(blob))
    elif damage == "truncate":
        arrays.write_bytes(bytes(blob[:len(blob) // 3]))
    elif damage == "other arrays":  # a valid file holding other numbers
        other = M.generate({**SMALL, "seed": 7})
        calls.pop()  # not a generation of the cache
        np.savez(arrays, **{f"{s}_{p}": a for s in M.SPLITS for p, a in zip("xy", other[s])})
    elif damage == "bad sidecar":
        sidecar.write_text("{not json")
    else:
        meta = json.loads(sidecar.read_text())
        meta["generation"]["seed"] = 7
        sidecar.write_text(json.dumps(meta))
    splits = M.load_mnist1d_splits(data_dir, SMALL)
    assert M.fingerprint(splits) == SMALL_SHA256
    assert len(calls) == 2
    assert "regenerating" in capsys.readouterr().out
    assert M.fingerprint(M.load_mnist1d_splits(data_dir, SMALL)) == SMALL_SHA256
    assert len(calls) == 2  # repaired: the next read is a hit


def test_a_read_only_data_folder_is_read_and_the_cache_goes_to_the_repository(cache,
                                                                               monkeypatch):
    data_dir, calls = cache
    M.load_mnist1d_splits(data_dir, SMALL)
    shared = data_dir / M.FOLDER  # from now on read-only, as ../shared/data is
    real = M._writable
    monkeypatch.setattr(M, "_writable", lambda folder: folder != shared and real(folder))
    assert M.fingerprint(M.load_mnist1d_splits(data_dir, SMALL)) == SMALL_SHA256
    assert len(calls) == 1  # a read-only copy is a hit
    M.cache_paths(shared, SMALL)[0].unlink()
    assert M.fingerprint(M.load_mnist1d_splits(data_dir, SMALL)) == SMALL_SHA256
    assert len(calls) == 2
    assert M.cache_paths(M._repo_cache() / M.FOLDER, SMALL)[0].is_file()
    M.load_mnist1d_splits(data_dir, SMALL)
    assert len(calls) == 2  # found in the repository's cache


def test_pacebench_data_is_read_but_never_written(cache, monkeypatch, tmp_path):
    data_dir, calls = cache
    monkeypatch.setenv("PACEBENCH_DATA", str(tmp_path / "shared"))
    M.load_mnist1d_splits(None, SMALL)
    assert not (tmp_path / "shared").exists()
    assert M.cache_paths(M._repo_cache() / M.FOLDER, SMALL)[0].is_file()


def test_unknown_generation_parameters_are_named():
    with pytest.raises(ValueError, match="unknown MNIST-1D generation parameters.*'sed'"):
        M.generate({"sed": 1})


def test_mnist1d_workloads_build_and_train_a_step():
    import torch

    from runners.workloads import build_workload
    from workbench.catalog import get_workload, variants_of

    for name in ["mnist1d_mlp", *variants_of("mnist1d_mlp"), "mnist1d_cnn",
                 *variants_of("mnist1d_cnn")]:
        workload = build_workload(get_workload(name))
        model = workload.init_model(0)
        batch = next(workload.train_batches(32, 0))
        assert batch["inputs"].shape == (32, 40)
        loss = workload.loss(model, batch)
        loss.backward()
        assert torch.isfinite(loss)
        metrics = workload.evaluate(model, "validation")
        assert 0 <= metrics["accuracy"] <= 1


def test_evals_in_chunks_give_the_whole_splits_metrics():
    """The evals run 1,000 signals at a time (cheaper: the activations stay in cache); a model
    trained a little scores exactly as it does on each split in one pass. The train-split eval
    is the first 1,000 training signals; validation and test keep all 5,000."""
    import torch

    from runners.algorithms import get_algorithm
    from runners.workloads import build_workload
    from runners.workloads.mnist1d import EVAL_BATCH_SIZE, TRAIN_EVAL_SIZE
    from workbench.catalog import get_workload

    torch.set_num_threads(1)
    for name in ("mnist1d_mlp", "mnist1d_cnn"):
        workload = build_workload(get_workload(name))
        assert workload.eval_batch_size == EVAL_BATCH_SIZE == 1_000
        assert len(workload.eval_split("train")[0]) == TRAIN_EVAL_SIZE == 1_000
        assert [len(workload.eval_split(s)[0]) for s in ("validation", "test")] == [5000, 5000]
        model = workload.init_model(0)
        algorithm = get_algorithm("adamw", {"learning_rate": 3e-3})
        algorithm.init(model, workload)
        batches = workload.train_batches(128, 0)
        for step in range(30):
            algorithm.update(model, next(batches), step, workload)
        for split in ("train", "validation", "test"):
            chunked = workload.evaluate(model, split)
            workload.eval_batch_size = None  # the whole split in one forward pass
            assert workload.evaluate(model, split) == pytest.approx(chunked, abs=1e-6)
            workload.eval_batch_size = EVAL_BATCH_SIZE
