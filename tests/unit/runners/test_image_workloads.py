"""MNIST, Fashion-MNIST and CIFAR-10 workloads, built on small generated files in the real formats
placed in a data folder (so no download is attempted)."""
from __future__ import annotations

import pytest
import torch

from fake_datasets import write_cifar10_tarball, write_mnist_like
from workbench import query
from runners.workloads import build_workload
from runners.workloads.cifar10 import flip_crop
from workbench.catalog import CATALOG, get_workload

IMAGE_WORKLOADS = [n for n, w in CATALOG.items() if w.dataset in ("mnist", "fashion_mnist", "cifar10")]


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Small convolutions on 2 shared cores: one torch thread."""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data root holding generated mnist/, fashion_mnist/ and cifar10/ files."""
    root = tmp_path_factory.mktemp("data")
    write_mnist_like(root / "mnist", n_train=300, n_test=40, seed=1)
    write_mnist_like(root / "fashion_mnist", n_train=300, n_test=40, seed=2)
    write_cifar10_tarball(root / "cifar10" / "cifar-10-python.tar.gz", per_batch=40, n_test=40)
    return root


def test_the_image_workloads_are_in_the_catalog():
    assert {"mnist_cnn", "fashion_mnist_cnn", "cifar10_resnet"} <= set(IMAGE_WORKLOADS)
    assert len(IMAGE_WORKLOADS) == 9  # three bases, two variants each


@pytest.mark.parametrize("name", IMAGE_WORKLOADS)
def test_builds_trains_a_step_and_evaluates(name, data_dir):
    spec = get_workload(name)
    w = build_workload(spec, data_dir=data_dir)
    model = w.init_model(0)
    batch = next(w.train_batches(16, 0))
    side = 32 if spec.dataset == "cifar10" else 28
    channels = 3 if spec.dataset == "cifar10" else 1
    assert batch["inputs"].shape == (16, channels, side, side)
    loss = w.loss(model, batch)
    assert loss.shape == () and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    for split in ("train", "validation", "test"):
        metrics = w.evaluate(model, split)
        assert 0.0 <= metrics["accuracy"] <= 1.0 and model.training


def test_split_sizes_follow_the_files(data_dir):
    w = build_workload(get_workload("mnist_cnn"), data_dir=data_dir)
    assert w.num_train_examples == 270                       # 90% of 300
    assert w.eval_split("validation")[0].shape[0] == 30 and w.eval_split("test")[0].shape[0] == 40
    c = build_workload(get_workload("cifar10_resnet"), data_dir=data_dir)
    assert c.num_train_examples == 180 and c.eval_split("validation")[0].shape[0] == 20


def test_chunked_eval_equals_one_pass(data_dir):
    w = build_workload(get_workload("cifar10_resnet_no_norm"), data_dir=data_dir)
    model = w.init_model(3)
    whole = w.evaluate(model, "test")
    w.eval_batch_size = 7                                    # 40 images in 6 chunks
    chunked = w.evaluate(model, "test")
    assert chunked["accuracy"] == whole["accuracy"]
    assert chunked["loss"] == pytest.approx(whole["loss"], rel=1e-5)


def test_same_seed_same_batches_and_init(data_dir):
    spec = get_workload("cifar10_resnet")
    w = build_workload(spec, data_dir=data_dir)
    a, b = next(w.train_batches(8, 5)), next(w.train_batches(8, 5))
    assert torch.equal(a["inputs"], b["inputs"]) and torch.equal(a["targets"], b["targets"])
    assert not torch.equal(a["inputs"], next(w.train_batches(8, 6))["inputs"])
    p, q = w.init_model(1), w.init_model(1)
    assert all(torch.equal(x, y) for x, y in zip(p.parameters(), q.parameters()))


def test_flip_crop_moves_pixels_only_within_the_padding():
    images = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).reshape(2, 3, 32, 32)
    out = flip_crop(images, torch.Generator().manual_seed(0))
    assert out.shape == images.shape and out.is_contiguous()
    # zero padding would bring in zeros; reflection keeps every output value one of the image's
    assert set(out[0].unique().tolist()) <= set(images[0].unique().tolist())
    # with no room to move, only flips remain: each image is itself or its mirror
    still = flip_crop(images, torch.Generator().manual_seed(1), pad=0)
    for i in range(2):
        assert torch.equal(still[i], images[i]) or torch.equal(still[i], images[i].flip(-1))


def test_a_few_steps_fit_a_fixed_batch(data_dir):
    """Gradients point the right way: 30 Adam steps on one batch cut its loss."""
    spec = get_workload("mnist_cnn")
    w = build_workload(spec, data_dir=data_dir)
    model = w.init_model(0)
    batch = next(w.train_batches(32, 0))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with torch.no_grad():
        first = float(w.loss(model, batch))
    for _ in range(30):
        opt.zero_grad(set_to_none=True)
        w.loss(model, batch).backward()
        opt.step()
    with torch.no_grad():
        assert float(w.loss(model, batch)) < 0.5 * first


def test_a_timed_run_on_generated_mnist_records_evals(data_dir, tmp_path):
    """The runner end to end: data_dir reaches the builder; bf16 + channels-last on the CPU."""
    from runners.run.loop import run
    from workbench.spec import ExecutionOptions, RunConfig
    from workbench.store import open_store

    store = open_store(tmp_path / "store", create=True)
    cfg = RunConfig("fashion_mnist_cnn", "adamw", max_steps=6, eval_every=3, batch_size=16,
                    stop_on_target=False,
                    execution=ExecutionOptions(precision="bf16", channels_last=True))
    doc = store.run_doc(run(cfg, store, data_dir=data_dir))
    assert doc["status"] == "complete" and doc["steps"] == 6 and doc["flops_per_step"] > 0
    evals = query.evals_frame(store, [doc["run_id"]])
    assert list(evals.step) == [3, 6] and evals["validation/accuracy"].between(0, 1).all()
