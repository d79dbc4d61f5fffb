"""The noise floor: how much one setting's time to target varies with the seed alone.

Rerun one algorithm with one set of hyperparameters under N seeds; the spread of the reruns' times
to target (median, interquartile range, coefficient of variation) is the noise floor of that
workload, and the share of reruns that reach the target is its reach rate. A difference between two
algorithms much smaller than the noise floor is luck until many studies say otherwise:
workbench.power's `min_detectable_speedup` (compare's model) says how large a speedup a given
number of studies can tell from it.

Also here, the reach-quantile rule that sets a target the tuned baseline reaches reliably
(runners/procedures/target_setting.py): the value that a fraction `quantile` of the reruns attain.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from workbench.errors import UserError

__all__ = ["NoiseFloor", "noise_floor", "reach_quantile_value"]


@dataclass(frozen=True)
class NoiseFloor:
    """Times to target of one setting rerun under `runs` seeds (seconds on the training clock)."""

    runs: int                 # reruns measured
    reached: int              # of them, how many reached the target
    median_s: float           # median time to target over the reruns that reached it
    q25_s: float              # first and third quartile (linear interpolation)
    q75_s: float
    cov: float                # coefficient of variation: sample std / mean (NaN below 2 reached)

    @property
    def reach_rate(self) -> float:
        return self.reached / self.runs if self.runs else math.nan

    @property
    def iqr_s(self) -> float:
        return self.q75_s - self.q25_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, NaN as None (the targets records and `pacebench noise --json`)."""
        out = {**asdict(self), "reach_rate": self.reach_rate, "iqr_s": self.iqr_s}
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in out.items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "NoiseFloor":
        def num(key: str) -> float:
            v = d.get(key)
            return math.nan if v is None else float(v)
        return cls(runs=int(d["runs"]), reached=int(d["reached"]), median_s=num("median_s"),
                   q25_s=num("q25_s"), q75_s=num("q75_s"), cov=num("cov"))

    def describe(self) -> str:
        """One line: 'CoV 12.3 %, median 4.1 s (IQR 0.5 s), reached 9 of 10'."""
        if not self.reached:
            return f"reached 0 of {self.runs}: no time to target"
        cov = "n/a (1 run reached)" if math.isnan(self.cov) else f"{100 * self.cov:.1f} %"
        return (f"CoV {cov}, median {self.median_s:.3g} s (IQR {self.iqr_s:.2g} s), "
                f"reached {self.reached} of {self.runs}")


def noise_floor(times: Sequence[float | None]) -> NoiseFloor:
    """The noise floor of reruns whose times to target are `times` (None or NaN: a miss)."""
    hit = sorted(float(t) for t in times if t is not None and math.isfinite(t))
    if not hit:
        return NoiseFloor(len(times), 0, math.nan, math.nan, math.nan, math.nan)
    if len(hit) == 1:
        q25 = q75 = hit[0]
    else:
        q25, _, q75 = statistics.quantiles(hit, n=4, method="inclusive")
    mean = statistics.fmean(hit)
    cov = statistics.stdev(hit) / mean if len(hit) > 1 and mean > 0 else math.nan
    return NoiseFloor(len(times), len(hit), statistics.median(hit), q25, q75, cov)


def reach_quantile_value(best: Sequence[float], direction: str, quantile: float) -> float:
    """The value that at least a fraction `quantile` of the reruns attain (their best values).

    With n reruns sorted from best to worst, the ceil(quantile * n)-th: 10 reruns at 0.9 give the
    second worst, which 9 of 10 reach. A NaN best (a rerun that diverged at once) is the worst.
    """
    if not 0 < quantile <= 1:
        raise UserError(f"reach quantile must be in (0, 1], got {quantile}")
    if direction not in ("min", "max"):
        raise UserError(f"direction must be 'min' or 'max', got {direction!r}")
    worst = -math.inf if direction == "max" else math.inf
    values = sorted((v if math.isfinite(v) else worst for v in best),
                    reverse=direction == "max")
    if not values:
        raise UserError("no reruns to set a target from")
    return values[math.ceil(quantile * len(values) - 1e-9) - 1]
