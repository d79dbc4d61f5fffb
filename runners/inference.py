"""Inference latency at the end of a run, as DAWNBench measured it: one example at a time.

DAWNBench timed the classification of each validation example on its own (batch 1) and reported
the latency per example (research/peers.md 1.1). Here: the trained model in eval mode, no grad,
WARMUP_CALLS forward passes to settle caches and lazy initialisation, then REPEATS timed forward
passes of single validation examples (cycling through the first ones), each read with the
device-synchronised clock of runners/run/timing.py; the result is the median, in seconds. It runs
after training has stopped, so it is never on the training clock. workbench/costs.py turns it
into an inference cost per 10,000 examples.
"""
from __future__ import annotations

import statistics

import torch

from runners.api import Workload
from runners.run.timing import DeviceClock
from workbench.errors import UserError

__all__ = ["inference_latency", "validation_inputs", "measure_after_run", "WARMUP_CALLS",
           "REPEATS"]

WARMUP_CALLS = 5   # untimed forward passes before the timed ones
REPEATS = 50       # timed batch-1 forward passes; the median of them is reported


def validation_inputs(workload: Workload) -> torch.Tensor:
    """The model inputs of `workload`'s validation split, one example per leading index.

    Workloads built on TensorWorkload expose `eval_split`; the character-level language model
    exposes its fixed `eval_windows`. Another workload needs one of the two.
    """
    if hasattr(workload, "eval_split"):
        return workload.eval_split("validation")[0]
    windows = getattr(workload, "eval_windows", None)
    if isinstance(windows, dict) and "validation" in windows:
        return windows["validation"][0]
    raise UserError(f"workload {workload.spec.name!r} ({type(workload).__name__}) exposes no "
                    "validation inputs: give it eval_split(split) -> (inputs, targets) or "
                    "eval_windows {'validation': (inputs, targets)}")


def inference_latency(model: torch.nn.Module, inputs: torch.Tensor, device: torch.device,
                      repeats: int = REPEATS, warmup: int = WARMUP_CALLS) -> float:
    """Median seconds of one batch-1 forward pass of `model` over single rows of `inputs`.

    The model is put in eval mode under torch.no_grad() and its train/eval mode is restored.
    """
    if repeats < 1 or warmup < 0:
        raise UserError(f"need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
    if inputs.ndim < 1 or inputs.shape[0] < 1:
        raise UserError(f"need at least one input example, got inputs of shape "
                        f"{tuple(inputs.shape)}")
    clock = DeviceClock(device)
    n = inputs.shape[0]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for i in range(warmup):
                model(inputs[i % n:i % n + 1])
            seconds = []
            for i in range(repeats):
                example = inputs[i % n:i % n + 1]  # batch of one
                start = clock.now()
                model(example)
                seconds.append(clock.now() - start)
    finally:
        model.train(was_training)
    return statistics.median(seconds)


def measure_after_run(model: torch.nn.Module, workload: Workload, device: torch.device,
                      status: str) -> tuple[float | None, str | None]:
    """(latency in seconds, None) for a complete run; (None, reason) when the run did not
    complete or the measurement failed: a latency is never worth failing a trained run for."""
    if status != "complete":
        return None, f"not measured: the run ended {status}"
    try:
        return inference_latency(model, validation_inputs(workload), device), None
    except Exception as exc:  # noqa: BLE001 - recorded in run.json instead of failing the run
        return None, f"not measured: {type(exc).__name__}: {exc}"[:300]
