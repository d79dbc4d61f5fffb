"""SGD with heavy-ball (Polyak) momentum, linear warmup then linear decay (AlgoPerf baseline)."""
from __future__ import annotations

from runners.algorithms.sgd_nesterov import SGDNesterov

__all__ = ["HeavyBall"]


class HeavyBall(SGDNesterov):
    """Same hyperparameters and schedule as sgd_nesterov; plain momentum instead of Nesterov's."""

    name = "heavy_ball"
    search_space = "heavy_ball.json"
    nesterov = False
