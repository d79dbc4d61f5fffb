"""Data-parallel runs: one trial trained by several processes with torch.distributed.

`pacebench study --nproc-per-node N` starts each trial under torchrun (runners/launch/study.py), which
runs N ranks of the worker; each rank builds a `DataParallel` from torchrun's environment (RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT) and hands it to runners.run.loop.run. What it changes:

- Data: every rank draws the same global batches as a single process would (same stream, same
  seed) and trains on its contiguous slice, rank r taking examples [r*B/N, (r+1)*B/N). So the
  global batch is the same sequence of examples as in one process, split across ranks, with no
  sampler state to keep in step. The batch size stays global (B must be a multiple of N).
- Gradients: the model is wrapped in DistributedDataParallel, which averages gradients across
  ranks during backward; with equal slices that average is the gradient of the global batch's
  mean loss, so the update equals the one-process update up to float summation order.
- Time: the loop's clock (SyncedClock) waits for every rank (a barrier) before each reading and
  uses rank 0's reading on all ranks, so training time covers the slowest rank and every rank
  takes the same time-based decisions (budget, eval cadence) at the same step.
- Records: only rank 0 writes (ParallelStore); logged losses and early-stop decisions are
  reduced or broadcast so that all ranks stop together.
- Backend: NCCL when the run's device is a GPU, gloo on CPU. AlgoPerf submissions' pytorch_setup()
  sees torchrun's LOCAL_RANK and reports DDP (runners/algoperf_compat/algoperf/pytorch_utils.py).
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterator, Mapping

import torch
import torch.distributed as dist

from runners.api import Batch, Workload
from runners.run.timing import synchronize
from workbench.errors import UserError

__all__ = ["DataParallel", "ShardedWorkload", "SyncedClock", "ParallelStore"]


def shard(batch: Batch, rank: int, world_size: int) -> Batch:
    """Rank `rank`'s contiguous slice of a global `batch` (every tensor split on dim 0)."""
    out = {}
    for key, value in batch.items():
        size = value.shape[0]
        if size % world_size:
            raise UserError(f"the global batch of {size} examples does not split evenly over "
                            f"{world_size} processes: use a batch size that is a multiple of "
                            f"{world_size} (--nproc-per-node)")
        step = size // world_size
        out[key] = value[rank * step:(rank + 1) * step]
    return out


class ShardedWorkload:
    """A workload whose training batches are this rank's slices of the global batches, and whose
    evals run on the plain model (every rank evaluates the same weights on the full splits)."""

    def __init__(self, inner: Workload, rank: int, world_size: int) -> None:
        self.inner, self.rank, self.world_size = inner, rank, world_size

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def train_batches(self, batch_size: int, seed: int) -> Iterator[Batch]:
        if batch_size % self.world_size:
            raise UserError(f"batch size {batch_size} does not split evenly over "
                            f"{self.world_size} processes: use a multiple of {self.world_size}")
        for batch in self.inner.train_batches(batch_size, seed):
            yield shard(batch, self.rank, self.world_size)

    def evaluate(self, model: torch.nn.Module, split: str) -> dict[str, float]:
        return self.inner.evaluate(getattr(model, "module", model), split)


class SyncedClock:
    """Seconds read on rank 0 once every rank has reached the reading (device work included);
    all ranks get the same value."""

    def __init__(self, device: torch.device, tensor_device: torch.device) -> None:
        self.device, self.tensor_device = device, tensor_device

    def now(self) -> float:
        synchronize(self.device)
        dist.barrier()
        value = torch.tensor([time.perf_counter()], dtype=torch.float64, device=self.tensor_device)
        dist.broadcast(value, src=0)
        return float(value.item())


class _NullWriter:
    """What ranks other than 0 write to: nothing (rank 0 records the run)."""

    def __init__(self, rank: int) -> None:
        self.run_id = f"rank-{rank}"
        self.doc: dict[str, Any] = {}

    def update(self, **fields: Any) -> None:
        pass

    def append_eval(self, row: Mapping[str, Any]) -> None:
        pass

    def append_train(self, row: Mapping[str, Any]) -> None:
        pass

    def finish(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> "_NullWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class ParallelStore:
    """The store as one rank sees it: rank 0 writes runs (their documents say how the run was
    split), other ranks write nothing; reads go to the real store on every rank."""

    def __init__(self, store: Any, rank: int, world_size: int, backend: str) -> None:
        self.store, self.rank = store, rank
        self.info = {"world_size": world_size, "backend": backend}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def new_run(self, doc: Mapping[str, Any], run_id: str | None = None):
        if self.rank != 0:
            return _NullWriter(self.rank)
        doc = {**doc, "data_parallel": self.info}
        if "hardware" in doc:
            doc["hardware"] = f"{doc['hardware']} x {self.info['world_size']} processes " \
                              f"({self.info['backend']})"
        return self.store.new_run(doc, run_id)


class DataParallel:
    """This process's rank in a torchrun data-parallel run (see the module doc)."""

    def __init__(self, device: str | torch.device | None = None) -> None:
        self.rank = int(os.environ["RANK"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.world_size = int(os.environ["WORLD_SIZE"])
        if device is None:
            device = f"cuda:{self.local_rank}" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.backend = "nccl" if self.device.type == "cuda" else "gloo"
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        if not dist.is_initialized():
            dist.init_process_group(self.backend)

    def wrap(self, workload: Workload, model: torch.nn.Module):
        """(this rank's workload, the model wrapped for gradient averaging)."""
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index] if self.device.type == "cuda" else None
        return (ShardedWorkload(workload, self.rank, self.world_size),
                DistributedDataParallel(model, device_ids=ids))

    def clock(self, device: torch.device) -> SyncedClock:
        return SyncedClock(device, self.device if self.backend == "nccl" else torch.device("cpu"))

    def mean(self, value: torch.Tensor | float) -> float:
        """The mean of a per-rank scalar (e.g. the minibatch loss) over all ranks."""
        t = torch.as_tensor(value, dtype=torch.float64).detach().reshape(1)
        t = t.to(self.device if self.backend == "nccl" else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return float(t.item()) / self.world_size

    def agree(self, decide: Callable[[dict], str | None]) -> Callable[[dict], str | None]:
        """A stop rule whose answer is rank 0's on every rank (rules may read the store, which
        the ranks see at different moments)."""
        def decided(row: dict) -> str | None:
            box = [decide(row) if self.rank == 0 else None]
            dist.broadcast_object_list(box, src=0)
            return box[0]
        return decided

    def store(self, store: Any) -> ParallelStore:
        return ParallelStore(store, self.rank, self.world_size, self.backend)

    def close(self) -> None:
        """Leave the process group once every rank is done with it (so that no rank tears
        down its communication threads while another still talks to it)."""
        if dist.is_initialized():
            try:
                dist.barrier()
            finally:
                dist.destroy_process_group()
