"""How a run uses its device: which device, bf16 autocast, torch.compile, channels-last, and the
per-run accounting that comes with it (peak memory, FLOPs and MFU, energy).

The model is changed in place, so the optimizer, the AlgoPerf adapter and checkpoints see the same
parameters under the same names: the model's class is swapped for a subclass whose forward converts
4-D inputs to channels-last and runs under `torch.autocast(bfloat16)`, returning float32 outputs
(losses and metrics are then computed in float32), and that forward is `torch.compile`d. The
compilation happens on the first call, that is on the clock (AlgoPerf counts compilation as
training time); each compiling run gets a cold compiler of its own and records the seconds of
compilation in its training time (runners/run/compilation.py). `nn.Module.compile()` is not used: in
torch 2.13 Dynamo skips the module's `_call_impl` frame it compiles (it is in Dynamo's skip
files), so nothing would be compiled.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from runners.api import Workload
from runners.run.compilation import Compilation
from runners.run.energy import EnergyMeter
from runners.run.flops import count_step_flops, mfu, peak_flops
from workbench.errors import UserError
from workbench.spec import PRECISIONS

__all__ = ["resolve_device", "adapt_model", "Accelerator"]


def resolve_device(name: str | torch.device) -> torch.device:
    """torch.device for "cpu", "cuda", "cuda:<i>" or "auto" (CUDA when present, else CPU)."""
    if isinstance(name, torch.device):
        name = str(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise UserError(f"device {name!r} asked for, but torch {torch.__version__} sees no "
                            "CUDA device here: use --device cpu, or auto")
        device = torch.device(name)
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UserError(f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s)")
        return device
    raise UserError(f"unknown device {name!r}: valid are cpu, cuda, cuda:<index>, auto")


def _has_conv(model: nn.Module) -> bool:
    return any(isinstance(m, nn.Conv2d) for m in model.modules())


def adapt_model(model: nn.Module, device: torch.device, precision: str = "fp32",
                channels_last: bool = False, compile: bool = False,
                compile_mode: str = "default") -> nn.Module:
    """Make `model` (in place) run its forward in `precision`, channels-last (conv models only)
    and compiled. Returns the same object; with none of the three it is left exactly as it was.
    """
    if precision not in PRECISIONS:
        raise UserError(f"unknown precision {precision!r}: valid are {', '.join(PRECISIONS)}")
    channels_last = channels_last and _has_conv(model)
    bf16 = precision == "bf16"
    if not (bf16 or channels_last or compile):
        return model
    if channels_last:
        model.to(memory_format=torch.channels_last)  # parameters keep their identity
    model.__class__ = _adapted_class(type(model), device.type, bf16, channels_last, compile,
                                     compile_mode)
    return model


# One subclass per (class, settings) without compilation, reused by runs in one process. A compiled
# class is never reused: its compiled code would be a warm cache for the next run (each run compiles
# its own, cold: runners/run/compilation.py).
_ADAPTED: dict[tuple, type] = {}


def _adapted_class(base: type, device_type: str, bf16: bool, channels_last: bool,
                   compile: bool, compile_mode: str = "default") -> type:
    """The subclass of `base` whose forward applies the settings (see the module docstring)."""
    key = (base, device_type, bf16, channels_last, compile)
    if key in _ADAPTED:
        return _ADAPTED[key]

    def forward(self, *args, **kwargs):
        if channels_last:
            args = tuple(a.contiguous(memory_format=torch.channels_last)
                         if isinstance(a, torch.Tensor) and a.dim() == 4 else a for a in args)
        if not bf16:
            return base.forward(self, *args, **kwargs)
        with torch.autocast(device_type, dtype=torch.bfloat16):
            out = base.forward(self, *args, **kwargs)
        return out.float() if isinstance(out, torch.Tensor) and out.is_floating_point() else out

    tag = "+".join(t for t, on in (("bf16", bf16), ("channels_last", channels_last),
                                    ("compiled", compile)) if on)
    adapted = type(base.__name__, (base,), {
        "forward": (forward if not compile else torch.compile(forward) if compile_mode == "default"
                    else torch.compile(forward, mode=compile_mode)), "__module__": base.__module__,
        "__qualname__": f"{base.__qualname__}[{tag}]", "__doc__": base.__doc__})
    if not compile:
        _ADAPTED[key] = adapted
    return adapted


@dataclass
class Accelerator:
    """A run's device settings, and the measurements that come with them."""

    device: torch.device
    precision: str = "fp32"
    compile: bool = False
    channels_last: bool = False
    compile_mode: str = "default"       # torch.compile's mode (workbench.spec.COMPILE_MODES)
    flops_per_step: int | None = None   # counted on one training step (runners/run/flops.py)
    flops_note: str | None = None       # why flops_per_step is missing, when it is
    energy: EnergyMeter | None = field(default=None, repr=False)
    compilation: Compilation | None = field(default=None, repr=False)  # with compile only

    def prepare(self, model: nn.Module, workload: Workload, batch_size: int,
                seed: int) -> nn.Module:
        """Before the clock: a cold compiler of the run's own (with compile), the model's FLOPs
        per step, then the model adapted (compiled lazily, on the clock)."""
        if self.compile:
            self.compilation = Compilation(self.device)
            self.compilation.open(model)  # same object once adapted: its mode marks evals
        twin = adapt_model(copy.deepcopy(model), self.device, self.precision, self.channels_last)
        try:
            self.flops_per_step = count_step_flops(twin, workload, batch_size, seed)
        except Exception as err:  # an exotic op the counter cannot trace: run anyway, say so
            self.flops_per_step, self.flops_note = None, f"{type(err).__name__}: {err}"[:300]
        del twin
        model = adapt_model(model, self.device, self.precision, self.channels_last, self.compile,
                            self.compile_mode)
        self.energy = EnergyMeter(self.device)
        return model

    def document(self) -> dict[str, Any]:
        """Top-level run.json fields known when the run starts."""
        peak, source = peak_flops(self.device, self.precision)
        name = (torch.cuda.get_device_name(self.device) if self.device.type == "cuda"
                else self.device.type)
        return {"device": str(self.device), "device_name": name, "precision": self.precision,
                "compile": self.compile, "compile_mode": self.compile_mode if self.compile else None,
                "channels_last": self.channels_last,
                "flops_per_step": self.flops_per_step, "peak_flops_per_second": peak,
                "peak_flops_source": source,
                "compile_cache": self.compilation.cache if self.compilation else None}

    def start(self) -> None:
        """At the clock's start: zero the peak-memory counter, start the energy meter, count
        compilation from here."""
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        if self.energy:
            self.energy.start()
        if self.compilation:
            self.compilation.start()

    def finish(self, steps: int, train_seconds: float) -> dict[str, Any]:
        """Top-level run.json fields of the run's end: compile seconds, peak memory, MFU,
        energy."""
        if self.energy:
            self.energy.stop()
        compile_s = self.compilation.close() if self.compilation else 0.0
        peak, why = peak_flops(self.device, self.precision)
        util = mfu(self.flops_per_step, steps, train_seconds, peak)
        note = None if util is not None else (
            why if peak is None else f"FLOPs per step unknown ({self.flops_note})"
            if not self.flops_per_step else "no training time recorded")
        memory = (torch.cuda.max_memory_allocated(self.device)
                  if self.device.type == "cuda" else None)
        energy = self.energy.summary() if self.energy else EnergyMeter(self.device).summary()
        return {"compile_seconds": compile_s, "peak_memory_bytes": memory,
                "peak_memory_note": None if memory is not None else
                f"not recorded on {self.device.type}: torch tracks device memory on CUDA only",
                "model_flops": self.flops_per_step * steps if self.flops_per_step else None,
                "mfu": util, "mfu_note": note, **energy}
