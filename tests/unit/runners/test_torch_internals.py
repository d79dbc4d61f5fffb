"""torch's insides behind runners/run/torch_internals.py: each one exercised against the installed
torch, so that another version that behaves differently fails here, by name, rather than giving
a run 0 compile seconds or an MFU without its attention FLOPs."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from runners.run import torch_internals as T

from locations import REPO

ROOT = REPO


@pytest.fixture()
def fresh_compiler():
    T.reset_compiler()
    yield
    T.reset_compiler()


def _linear_relu(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.linear(x, w).relu().sum()


@pytest.mark.slow  # a real compile, forward and backward (seconds on 2 cores)
def test_the_compile_counters_and_events_are_what_compilation_reads(fresh_compiler):
    """A compiled forward and its lazily compiled backward: two start events (the second a lazy
    backward), both outermost phases accounted in nanoseconds, and the public reset zeroes them
    (Compilation settles a reset as a new start)."""
    assert T.compile_phase_ns() == dict.fromkeys(T.COMPILE_PHASES, 0.0)
    events: list[bool] = []

    def listen(args) -> None:
        events.append(T.is_lazy_backward(args))

    T.on_compile_start(listen)
    try:
        assert T.listening(listen)
        compiled = torch.compile(_linear_relu, backend="aot_eager")  # Dynamo + AOTAutograd
        compiled(torch.ones(4, 8), torch.ones(8, 8, requires_grad=True)).backward()
    finally:
        T.remove_compile_start(listen)
    assert not T.listening(listen)
    T.remove_compile_start(listen)  # once removed, a second removal is nothing
    assert events == [False, True]
    phases = T.compile_phase_ns()
    assert phases[T.FRAME_PHASE] > 0 and phases["entire_backward_compile"] > 0, phases
    assert T.compiler_seconds() == pytest.approx(sum(phases.values()) / 1e9)
    T.reset_compiler()
    assert T.compiler_seconds() == 0.0


def test_a_renamed_compile_counter_fails_loudly(monkeypatch):
    """What a renamed key would look like: torch accounted compile work, but under no name the
    adapter knows. It must raise, never read 0 seconds."""
    from torch._dynamo import utils

    monkeypatch.setattr(utils, "cumulative_time_spent_ns", {"whole_frame_compile": 5e9})
    with pytest.raises(T.TorchChanged, match="no 'entire_frame_compile'"):
        T.compiler_seconds()
    monkeypatch.setattr(utils, "cumulative_time_spent_ns", {})
    assert T.compiler_seconds() == 0.0  # nothing compiled yet: 0 is the truth


def test_the_gpu_autotuning_phases_are_still_timed_under_their_names():
    """The autotuning phases run on GPUs only; their names are read from torch's source, where
    each must still be a dynamo_timed key."""
    import importlib.util

    source = Path(importlib.util.find_spec("torch._inductor.runtime").submodule_search_locations[0])
    timed = set()
    for path in source.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dynamo_timed" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                timed.add(node.args[0].value)
    autotuning = [p for p in T.COMPILE_PHASES if p.startswith("CachingAutotuner.")]
    assert set(autotuning) <= timed, sorted(set(autotuning) - timed)


def test_the_cpu_attention_counts_with_the_cuda_formulas():
    """FlopCounterMode takes a formula marked raw as it is (the attention formulas read tensors):
    the CPU flash kernel then counts 2 matmuls forward (4 B H T^2 d) and 5 backward (the Q K^T
    recomputation included), as torch counts the CUDA kernel."""
    aten = torch.ops.aten
    mapping = {
        aten._scaled_dot_product_flash_attention_for_cpu:
            T.raw_flop_formula(aten._scaled_dot_product_flash_attention),
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            T.raw_flop_formula(aten._scaled_dot_product_flash_attention_backward)}
    b, h, t, d = 2, 3, 16, 8
    q, k, v = (torch.randn(b, h, t, d, requires_grad=True) for _ in range(3))
    counter = FlopCounterMode(display=False, custom_mapping=mapping)
    with counter:
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    forward = counter.get_total_flops()
    assert forward == 4 * b * h * t * t * d, counter.get_flop_counts()
    with counter:
        out.sum().backward()
    assert counter.get_total_flops() == pytest.approx(forward * 2.5), counter.get_flop_counts()
    with pytest.raises(T.TorchChanged, match="no formula for"):
        T.raw_flop_formula(aten.relu.default)


def test_compilation_and_flops_reach_torch_internals_only_through_the_adapter():
    """runners/run/compilation.py and runners/run/flops.py import no private torch module and set no
    private flag themselves."""
    for name in ("runners/run/compilation.py", "runners/run/flops.py"):
        tree = ast.parse((ROOT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
                assert "._" not in f".{node.module}", f"{name} imports {node.module}"
            if isinstance(node, ast.Attribute):
                assert not (node.attr.startswith("_") and not node.attr.startswith("__")
                            and isinstance(node.value, ast.Name)
                            and node.value.id in ("torch", "flop_counter")), \
                    f"{name} uses {node.value.id}.{node.attr}"
