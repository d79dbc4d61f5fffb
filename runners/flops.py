"""Model FLOPs per training step, the device's peak FLOP/s, and model FLOPs utilisation (MFU).

FLOPs are counted, not estimated: one forward and backward pass of the workload's loss on a real
training batch runs under `torch.utils.flop_counter.FlopCounterMode`, which counts the matrix
multiplications, convolutions and attention kernels (2 FLOPs per multiply-add), the ops that
MLPerf's utilisation counts (research/peers.md 2.7); element-wise ops, norms and the optimizer's
update are not counted. It runs on a copy of the model, before the clock starts, so the run's own
model and batch-norm statistics are untouched. One difference from the strict MLPerf count: torch's
formula for the attention backward includes the recomputation of Q K^T that flash attention does
(2 T d FLOPs per token and layer, T = context, d = width), e.g. +2.3% for shakespeare_char.

MFU = counted FLOPs per step x steps / training seconds / the device's peak FLOP/s at the run's
precision. The training seconds are the run's clock (compilation included, as AlgoPerf counts it).
Peaks are the vendors' dense (no 2:4 sparsity) figures; a device missing from PEAK_FLOPS gets no
MFU, with a note saying why.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from runners.api import Workload
from runners.run.torch_internals import raw_flop_formula

__all__ = ["Peak", "PEAK_FLOPS", "peak_flops", "count_step_flops", "mfu"]


@dataclass(frozen=True)
class Peak:
    """Dense peak FLOP/s of one device model by precision, and where the figures come from."""

    pattern: str                 # regex matched against torch.cuda.get_device_name()
    flops: dict[str, float]      # precision ("bf16", "fp32") -> FLOP/s
    source: str


# fp32 is the non-tensor-core FP32 peak: PyTorch's default float32 matmuls do not use TF32.
# (cuDNN convolutions may use TF32 by default, so an fp32 CNN can show an MFU above its true one.)
PEAK_FLOPS: tuple[Peak, ...] = (
    Peak(r"^NVIDIA H200$", {"bf16": 989.4e12, "fp32": 66.9e12},
         "H200 SXM, dense: BF16 ~989 TFLOP/s (itkb.uw.cz, 'NVIDIA H200 vs B300', 2026-06, dense "
         "table; NVIDIA's 1,979 TFLOP/s counts 2:4 sparsity), FP32 66.9 TFLOP/s (hmc-tech.com "
         "H200 SXM page); same GH100 compute as the H100 SXM"),
    Peak(r"^NVIDIA H100 80GB HBM3$", {"bf16": 989.4e12, "fp32": 66.9e12},
         "H100 SXM, dense: BF16 989 TFLOP/s (research/peers.md 5.4), FP32 66.9 TFLOP/s "
         "(hmc-tech.com)"),
    # The PCIe and NVL boards run the same GH100 at lower clocks and power: about 3/4 and 5/6 of
    # the SXM's tensor throughput. NVIDIA's datasheets list the tensor figures with 2:4 sparsity
    # ("shown with sparsity; specifications 1/2 lower without sparsity"), halved here.
    Peak(r"^NVIDIA H100 PCIe$", {"bf16": 756.5e12, "fp32": 51.2e12},
         "H100 PCIe, dense: BF16 1,513 TFLOP/s with sparsity / 2, FP32 51 TFLOP/s (NVIDIA H100 "
         "datasheet, PCIe column, as tabulated by archive-lib.hpctech.co.jp/gpuproduct/nvidia-"
         "h100.html)"),
    Peak(r"^NVIDIA H100 NVL$", {"bf16": 835.5e12, "fp32": 60.0e12},
         "H100 NVL (per GPU), dense: BF16 1,671 TFLOP/s with sparsity / 2, FP32 60 TFLOP/s "
         "(NVIDIA H100 datasheet, H100 NVL column)"),
    Peak(r"^NVIDIA H200 NVL$", {"bf16": 835.5e12, "fp32": 60.0e12},
         "H200 NVL, dense: BF16 1,671 TFLOP/s with sparsity / 2, FP32 60 TFLOP/s (NVIDIA H200 "
         "datasheet, H200 NVL column)"),
    Peak(r"^NVIDIA L40S$", {"bf16": 362.05e12, "fp32": 91.6e12},
         "L40S, dense: BF16 733 TFLOP/s with sparsity / 2 (FP32 accumulate), FP32 91.6 TFLOP/s "
         "(NVIDIA L40S datasheet)"),
    Peak(r"^NVIDIA A100", {"bf16": 312e12, "fp32": 19.5e12},
         "A100, dense: BF16 312 TFLOP/s, FP32 19.5 TFLOP/s (NVIDIA A100 datasheet, as tabulated "
         "by glennklockwood.com/garden/processors/A100)"),
)


_aten = torch.ops.aten
# torch's counter has formulas for the CUDA attention kernels only; the CPU flash kernel has the
# same arithmetic, so it gets the same formulas (else CPU counts would miss all attention FLOPs)
_CPU_ATTENTION = {
    _aten._scaled_dot_product_flash_attention_for_cpu:
        raw_flop_formula(_aten._scaled_dot_product_flash_attention),
    _aten._scaled_dot_product_flash_attention_for_cpu_backward:
        raw_flop_formula(_aten._scaled_dot_product_flash_attention_backward),
}


def peak_flops(device: torch.device, precision: str) -> tuple[float | None, str]:
    """(peak FLOP/s of `device` at `precision`, its source) or (None, why there is none)."""
    if device.type != "cuda":
        return None, f"no peak FLOP/s is known for device type {device.type!r}: MFU not computed"
    name = torch.cuda.get_device_name(device)
    for peak in PEAK_FLOPS:
        if re.search(peak.pattern, name) and precision in peak.flops:
            return peak.flops[precision], peak.source
    return None, (f"{name!r} at {precision} is not in runners.run.flops.PEAK_FLOPS: MFU not computed "
                  "(add the device's dense peak with its source)")


def count_step_flops(model: torch.nn.Module, workload: Workload, batch_size: int,
                     seed: int) -> int:
    """FLOPs of one forward + backward of `workload.loss` on the first batch of a fresh stream.

    Runs on a deep copy of `model`, so the caller's model, its gradients and its batch-norm
    running statistics stay as they were. Pass an uncompiled model: the counter sees the ops
    that eager mode dispatches.
    """
    twin = copy.deepcopy(model)
    twin.train()
    batch = next(workload.train_batches(batch_size, seed))
    counter = FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION)
    with counter:
        workload.loss(twin, batch).backward()
    return int(counter.get_total_flops())


def mfu(flops_per_step: float | None, steps: int, train_seconds: float,
        peak: float | None) -> float | None:
    """Model FLOPs utilisation in [0, 1]; None when any input is missing or time is zero."""
    if not flops_per_step or peak is None or train_seconds <= 0:
        return None
    return flops_per_step * steps / train_seconds / peak
