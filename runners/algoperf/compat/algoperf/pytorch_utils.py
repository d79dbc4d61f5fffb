"""`pytorch_setup()` for AlgoPerf PyTorch submissions run by Pacebench (one process per run, or
one per rank of a torchrun data-parallel run: `pacebench study --nproc-per-node N`)."""
from __future__ import annotations

import os
from typing import Tuple

import torch


def pytorch_setup() -> Tuple[bool, int, torch.device, int]:
    """(use_pytorch_ddp, rank, device, n_gpus) of this process.

    Data-parallel when torchrun set LOCAL_RANK; the device is that rank's GPU when CUDA is
    available, else the CPU.
    """
    use_ddp = "LOCAL_RANK" in os.environ
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    n_gpus = torch.cuda.device_count()
    device = torch.device(f"cuda:{rank}" if torch.cuda.is_available() else "cpu")
    return use_ddp, rank, device, n_gpus
