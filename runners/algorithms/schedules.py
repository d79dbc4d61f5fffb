"""Learning-rate schedules laid over a workload's step hint, as pure functions of the step.

Each returns the learning rate for update step `t` (counting from 0). Applying one costs a few
float operations per step (the algorithm writes it into each param_group['lr']).
"""
from __future__ import annotations

import math

__all__ = ["warmup_steps", "cosine_warmup", "linear_warmup_decay"]


def warmup_steps(warmup_factor: float, step_hint: int) -> int:
    """W = floor(warmup_factor * step_hint): steps of linear warmup from 0 (AlgoPerf)."""
    return int(math.floor(warmup_factor * step_hint))


def cosine_warmup(t: int, lr: float, step_hint: int, warmup_factor: float) -> float:
    """AlgoPerf "cosine_warmup": lr*t/W for t < W, then cosine from lr to 0 at step_hint, then 0."""
    w = warmup_steps(warmup_factor, step_hint)
    if t < w:
        return lr * t / w
    if t >= step_hint:
        return 0.0
    return lr * 0.5 * (1.0 + math.cos(math.pi * (t - w) / max(step_hint - w, 1)))


def linear_warmup_decay(t: int, lr: float, step_hint: int, warmup_factor: float,
                        end_factor: float, decay_steps_factor: float) -> float:
    """lr*t/W for t < W, then linear from lr to end_factor*lr over D steps, then constant.

    D = decay_steps_factor * (step_hint - W): AlgoPerf's momentum baselines (polynomial decay, power
    1). A D of zero or less means the decay is immediate.
    """
    w = warmup_steps(warmup_factor, step_hint)
    if t < w:
        return lr * t / w
    decay = decay_steps_factor * (step_hint - w)
    frac = min((t - w) / decay, 1.0) if decay > 0 else 1.0
    return lr * (1.0 - (1.0 - end_factor) * frac)
