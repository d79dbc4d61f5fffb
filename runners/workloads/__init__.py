"""Build a catalog entry into a torch workload: a plain registry keyed by dataset and arch."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from runners.api import Workload
from runners.workloads.cifar10 import Cifar10Workload
from runners.workloads.digits import DigitsWorkload
from runners.workloads.ladder import LadderWorkload
from runners.workloads.mnist import MnistLikeWorkload
from runners.workloads.mnist1d import Mnist1dWorkload
from runners.workloads.shakespeare import ShakespeareCharWorkload
from runners.workloads.synthetic import SyntheticWorkload
from workbench.errors import UnknownNameError
from workbench.spec import WorkloadSpec

__all__ = ["WORKLOADS", "PLUGIN_BUILDERS", "build_workload"]

# "<spec.dataset>/<spec.model['arch']>" -> workload class, called as cls(spec, device, data_dir)
WORKLOADS: dict[str, type[Workload]] = {
    "digits/mlp": DigitsWorkload,
    "digits/cnn": DigitsWorkload,
    "mnist/simple_cnn": MnistLikeWorkload,
    "fashion_mnist/simple_cnn": MnistLikeWorkload,
    "mnist1d/mlp": Mnist1dWorkload,
    "mnist1d/cnn": Mnist1dWorkload,
    "cifar10/resnet9": Cifar10Workload,
    "tinyshakespeare/gpt": ShakespeareCharWorkload,
    "synthetic/mlp": SyntheticWorkload,
    "generated/gpt": LadderWorkload,
}

# Plug-in workloads loaded in this process (runners/plugins.py): catalog name -> factory, called
# as factory(spec, device, data_dir)
PLUGIN_BUILDERS: dict[str, Callable[..., Workload]] = {}


def build_workload(spec: WorkloadSpec, device: torch.device = torch.device("cpu"),
                   data_dir: str | Path | None = None) -> Workload:
    """The torch workload for catalog entry `spec`, its tensors on `device`.

    `data_dir` is where downloaded datasets are cached (see runners.data.data_root).
    """
    if spec.name in PLUGIN_BUILDERS:
        return PLUGIN_BUILDERS[spec.name](spec, torch.device(device), data_dir)
    key = f"{spec.dataset}/{spec.model.get('arch')}"
    try:
        builder = WORKLOADS[key]
    except KeyError:
        raise UnknownNameError(f"no builder for workload {spec.name!r} (dataset/arch {key!r}): "
                               f"known are {', '.join(WORKLOADS)}") from None
    return builder(spec, torch.device(device), data_dir)
