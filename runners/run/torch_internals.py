"""The parts of torch's insides that a run relies on, in one place (the run's torch adapter).

A run reads what torch does not publish: the compiler's own accounting of its seconds, its
compile events, its in-memory caches and CPU probe, and the FLOP counter's flag for formulas
that take an op's raw arguments. Each is written for the pinned torch (constraints.txt; TORCH)
and exercised by tests/test_torch_internals.py, which fails naming what changed when another
version behaves differently. Where torch has a public API it is used (torch.compiler.reset).
Where a reading could silently go wrong on another version (a renamed counter reads 0 seconds),
it raises TorchChanged instead.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

__all__ = ["TORCH", "TorchChanged", "COMPILE_PHASES", "FRAME_PHASE", "compile_phase_ns",
           "compiler_seconds", "reset_compiler", "clear_inductor_caches", "probe_cpu_vector_isa",
           "on_compile_start", "remove_compile_start", "listening", "is_lazy_backward",
           "raw_flop_formula"]

TORCH = "2.13"  # the minor version these internals were written and tested for

# The outermost phases torch 2.13 times (dynamo_timed) in cumulative_time_spent_ns; the other keys
# there are parts of these. Runtime autotuning happens at a kernel's first launch, after its compile
# (in the default mode; an autotune run inside a compile would be counted twice).
FRAME_PHASE = "entire_frame_compile"  # every compile has one: its absence means a renamed key
COMPILE_PHASES = (FRAME_PHASE, "entire_backward_compile",
                  "CachingAutotuner.benchmark_all_configs",
                  "CachingAutotuner.coordinate_descent_tuning",
                  "CachingAutotuner.combo_sequential_autotune")


class TorchChanged(RuntimeError):
    """This torch does not behave as the pinned one did, so a figure would be wrong: update
    runners/run/torch_internals.py (the message says what differs), or install the pinned torch."""


def _changed(what: str) -> TorchChanged:
    return TorchChanged(f"torch {torch.__version__}: {what} (runners/run/torch_internals.py "
                        f"was written for torch {TORCH}; install the version pinned in "
                        "constraints.txt, or update the adapter)")


def compile_phase_ns() -> dict[str, float]:
    """The nanoseconds torch has accounted to each of COMPILE_PHASES in this process since the
    compiler's last reset (phases that did not happen: 0). TorchChanged when torch accounted
    something but under none of the frame phase's name: a renamed key would read 0 seconds."""
    from torch._dynamo.utils import cumulative_time_spent_ns as spent

    if not isinstance(spent, dict):
        raise _changed("torch._dynamo.utils.cumulative_time_spent_ns is no dict")
    if spent and FRAME_PHASE not in spent:
        raise _changed(f"the compiler accounted {sorted(spent)[:5]}... but no {FRAME_PHASE!r}")
    return {phase: float(spent.get(phase, 0.0)) for phase in COMPILE_PHASES}


def compiler_seconds() -> float:
    """Seconds of compilation torch has accounted in this process since the compiler's last
    reset: the sum of the outermost phases (compile_phase_ns)."""
    return sum(compile_phase_ns().values()) / 1e9


def clear_inductor_caches() -> None:
    """Forget inductor's in-memory caches (compiled kernels, paths into a cache folder)."""
    from torch._inductor.utils import clear_caches

    clear_caches()


def reset_compiler() -> None:
    """Forget every compiled artifact held in memory: Dynamo's code and counters (the public
    torch.compiler.reset) and inductor's caches."""
    torch.compiler.reset()
    clear_inductor_caches()


def probe_cpu_vector_isa() -> Any:
    """Probe the CPU's vector instructions as inductor does at its first CPU compile (its result
    is cached on disk, in the inductor cache folder of the moment)."""
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    return pick_vec_isa()


def on_compile_start(callback: Callable[[Any], None]) -> None:
    """Call `callback(args)` at the start of each outermost compile (Dynamo's compile events);
    `args` goes to is_lazy_backward."""
    from torch._dynamo.callback import callback_handler

    callback_handler.register_start_callback(callback)


def listening(callback: Callable[[Any], None]) -> bool:
    """Whether `callback` is registered with on_compile_start."""
    from torch._dynamo.callback import callback_handler

    return callback in callback_handler.start_callbacks


def remove_compile_start(callback: Callable[[Any], None]) -> None:
    """Stop calling `callback` (registered with on_compile_start); nothing when it is not."""
    from torch._dynamo.callback import callback_handler

    if listening(callback):
        callback_handler.remove_start_callback(callback)


def is_lazy_backward(args: Any) -> bool:
    """Whether a compile-start event is a backward graph compiled lazily at its first backward
    (it runs in autograd's thread, where grad mode reads off)."""
    from torch._dynamo.callback import CallbackTrigger

    return args.callback_trigger is CallbackTrigger.LAZY_BACKWARD


def raw_flop_formula(op: Any) -> Callable[..., int]:
    """The FLOP counter's registered formula of `op`, marked for FlopCounterMode's
    custom_mapping as taking the op's raw arguments (`_get_raw`: the formula converts tensors
    to shapes itself, as torch's attention formulas do)."""
    from torch.utils import flop_counter

    try:
        formula = flop_counter.flop_registry[op]
    except KeyError:
        raise _changed(f"the FLOP counter has no formula for {op}") from None

    def count(*args, **kwargs) -> int:
        return formula(*args, **kwargs)
    count._get_raw = True  # read by FlopCounterMode.__init__ (torch/utils/flop_counter.py)
    return count
