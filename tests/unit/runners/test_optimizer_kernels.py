"""The update kernels of the built-in algorithms: fused (CUDA) and foreach (elsewhere) give the
plain per-tensor update, and the timed step path of our code never reads a tensor on the host."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from runners.algorithms import ALGORITHMS, get_algorithm
from runners.algorithms.base import kernel_options
from runners.algorithms.nadamw import NAdamWOptimizer
from runners.workloads import build_workload
from workbench.catalog import get_workload

from locations import REPO

ROOT = REPO


def _model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(7, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _train(make_optimizer, steps: int = 6, lr_schedule=(0.01, 0.02, 0.015, 0.01, 0.005, 0.002)):
    """The parameters after `steps` updates of `make_optimizer(params)`, lr changed each step."""
    model = _model()
    optimizer = make_optimizer(list(model.parameters()))
    data = torch.Generator().manual_seed(1)
    for step in range(steps):
        x = torch.randn(32, 7, generator=data)
        y = torch.randint(0, 3, (32,), generator=data)
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        for group in optimizer.param_groups:
            group["lr"] = lr_schedule[step]
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def _same(a, b, tol=1e-6):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, atol=tol, rtol=tol)


@pytest.mark.parametrize("kernels", [{"fused": True}, {"foreach": True}])
def test_torch_adamw_and_sgd_kernels_give_the_plain_update(kernels):
    adamw = dict(betas=(0.9, 0.99), eps=1e-8, weight_decay=0.05)
    plain = _train(lambda ps: torch.optim.AdamW(ps, lr=0.01, foreach=False, **adamw))
    _same(_train(lambda ps: torch.optim.AdamW(ps, lr=0.01, **adamw, **kernels)), plain)
    for nesterov in (True, False):
        sgd = dict(momentum=0.9, weight_decay=1e-4, nesterov=nesterov)
        plain = _train(lambda ps: torch.optim.SGD(ps, lr=0.01, foreach=False, **sgd))
        _same(_train(lambda ps: torch.optim.SGD(ps, lr=0.01, **sgd, **kernels)), plain)


class _PlainNAdamW(torch.optim.Optimizer):
    """NAdamW one tensor at a time, written from NAdamWOptimizer's docstring."""

    def __init__(self, params, lr, betas, eps, weight_decay):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                s = self.state[p]
                if not s:
                    s.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                s["t"] += 1
                t, grad = s["t"], p.grad
                s["m"] = b1 * s["m"] + (1 - b1) * grad
                s["v"] = b2 * s["v"] + (1 - b2) * grad * grad
                look = b1 * s["m"] + (1 - b1) * grad
                u = (look / (1 - b1 ** t)) / ((s["v"] / (1 - b2 ** t)).sqrt() + g["eps"])
                p.sub_(g["lr"] * (u + g["weight_decay"] * p))


def test_the_foreach_nadamw_is_the_plain_nadamw():
    args = dict(lr=0.01, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.05)
    _same(_train(lambda ps: NAdamWOptimizer(ps, **args)), _train(lambda ps: _PlainNAdamW(ps, **args)))


def test_kernels_are_fused_on_cuda_and_foreach_elsewhere():
    on = lambda kind: SimpleNamespace(device=torch.device(kind))  # noqa: E731 (no GPU needed)
    assert kernel_options([on("cuda"), on("cuda")])[1] == {"fused": True}
    assert kernel_options([on("cuda"), on("cpu")])[1] == {"foreach": True}  # mixed: not fusable
    assert kernel_options([on("cpu")])[1] == {"foreach": True}
    assert kernel_options(iter([on("cpu")]))[0] == [on("cpu")]  # a generator is read once, kept
    for name in ("adamw", "sgd_nesterov", "heavy_ball"):
        algorithm = get_algorithm(name)
        optimizer = algorithm.make_optimizer(_model().parameters())
        assert optimizer.defaults["foreach"] is True, name  # the CPU path, as targets were set


_HOST_READS = ("item", "tolist", "numpy", "cpu", "__float__", "__int__", "__bool__")


@pytest.mark.parametrize("workload", ["mnist1d_mlp", "shakespeare_char"])
def test_a_timed_step_of_our_code_reads_no_tensor_on_the_host(workload, monkeypatch):
    """Between boundaries the loop runs only `next(batches)` and `algorithm.update`: neither may
    read a tensor's value on the host (a device sync on a GPU). Counted here as calls made from
    our own files (torch's internals are torch's; on CUDA the fused kernels avoid them)."""
    built = build_workload(get_workload(workload))  # tiny-Shakespeare: ../shared/data
    reads: list[str] = []

    def counting(name):
        original = getattr(torch.Tensor, name)

        def read(self, *args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename
            if caller.startswith(str(ROOT / "runners")) or caller.startswith(str(ROOT / "workbench")):
                reads.append(f"{name} in {Path(caller).name}:{sys._getframe(1).f_lineno}")
            return original(self, *args, **kwargs)
        return read

    for name in sorted(ALGORITHMS):
        hparams = {"grad_clip": 1.0} if "grad_clip" in ALGORITHMS[name].defaults else {}
        algorithm = get_algorithm(name, hparams)
        model = built.init_model(0)
        algorithm.init(model, built)
        batches = built.train_batches(16, 0)
        algorithm.update(model, next(batches), 0, built)  # state created (allowed to read once)
        with monkeypatch.context() as m:
            for read in _HOST_READS:
                m.setattr(torch.Tensor, read, counting(read))
            for step in range(1, 4):
                algorithm.update(model, next(batches), step, built)
        assert not reads, f"{name} on {workload}: {reads}"
