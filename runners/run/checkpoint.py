"""Checkpoints of a long run, so that a preempted run resumes where it was, with its time.

With `pacebench study --checkpoint-every MINUTES`, runners.run.loop saves the run's training state
at the first eval after every MINUTES of wall clock (off the clock, like the eval): model and
optimizer state, the torch RNG state and the run's position (RunPosition: the step, the eval
index and the accumulated training, eval and wall seconds), to the store's checkpoint path of the
trial (Store.checkpoint_path, written atomically). When the
trial runs again (`--resume` after its attempt was killed, OOM'd or lost with its node), the new
attempt loads it, copies the earlier attempt's eval and training-loss rows up to the saved step
into its own record (so the new attempt holds the whole curve), moves the data stream to the
same position and goes on from the saved step with the accumulated time; its run document
records `preemptions` (attempts resumed so far), `resumed_from` and `resumed_at_step`. On CPU
with the same thread count the resumed run trains exactly as an uninterrupted one would. The
file is deleted when the run ends.

Checkpoints are transient training state beside the records, not records: they hold tensors and
plain containers only and are read with torch.load(weights_only=True). Algorithms are
checkpointed through their torch optimizer (`algorithm.optimizer`, as every baseline in
runners/algorithms has, also under sparsity's MaskedAlgorithm); for others (e.g. AlgoPerf
submissions, whose optimizer_state is free-form) the run goes on without checkpoints and says so
in its log.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from workbench import query
from workbench.store import file_problem

__all__ = ["Checkpoint", "RunPosition"]


@dataclass(frozen=True)
class RunPosition:
    """Where a run stands: what a checkpoint saves beside the model and optimizer state, and
    where the training loop goes on from (all zero: a fresh run)."""

    step: int = 0                          # update steps done
    train_seconds: float = 0.0             # accumulated training time
    eval_seconds: float = 0.0              # accumulated evaluation time
    eval_index: int = 0                    # evals done (the next eval's index)
    last_eval_train_seconds: float = 0.0   # training time at the last eval (eval cadence)
    reached: bool = False                  # the validation target was met at an eval
    wall_seconds: float = 0.0              # wall clock since the training clock started


# Counter names of checkpoints written before RunPosition existed (still restored).
_RENAMED = {"train_s": "train_seconds", "eval_s": "eval_seconds",
            "last_eval_train_s": "last_eval_train_seconds", "wall_s": "wall_seconds"}


def _optimizer(algorithm: Any) -> torch.optim.Optimizer | None:
    """The algorithm's torch optimizer (looking through wrappers that hold a `base`), or None."""
    while algorithm is not None:
        opt = getattr(algorithm, "optimizer", None)
        if isinstance(opt, torch.optim.Optimizer):
            return opt
        algorithm = getattr(algorithm, "base", None)
    return None


class Checkpoint:
    """Saves and restores one trial's training state; `every_s` = seconds of wall clock between
    saves (0: at every eval); `writes`: False on ranks other than 0 of a data-parallel run."""

    def __init__(self, path: str | Path, every_s: float, writes: bool = True) -> None:
        self.path, self.every_s, self.writes = Path(path), float(every_s), writes
        self._last_save = time.monotonic()
        self._warned = False

    def restore(self, p: Any, writer: Any, batches: Any, store: Any) -> RunPosition:
        """Load the saved state into the prepared run `p` (model, optimizer, RNG), copy the earlier
        attempt's rows up to the saved step into `writer`, advance `batches` to the saved step.
        Returns the saved position, RunPosition() when there is nothing to resume."""
        if not self.path.exists():
            return RunPosition()
        problem = file_problem(self.path, self.path.parent.parent)  # <store>/checkpoints/<key>.pt
        if problem:  # a FIFO would block torch.load, a device never end: start afresh
            print(f"warning: checkpoint not restored: {problem}", file=sys.stderr)
            return RunPosition()
        optimizer = _optimizer(p.algorithm)
        if optimizer is None:
            return RunPosition()
        state = torch.load(self.path, weights_only=True)
        p.model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        c = {_RENAMED.get(k, k): v for k, v in state["counters"].items()}
        at = RunPosition(**{k: c[k] for k in RunPosition.__dataclass_fields__})
        for _ in range(at.step):  # the data stream is deterministic: replay its position
            next(batches)
        if self.writes:
            self._copy_rows(store, state["run_id"], at.step, writer)
            writer.update(preemptions=c["preemptions"] + 1, resumed_from=state["run_id"],
                          resumed_at_step=at.step)
        self.preemptions = c["preemptions"] + 1
        return at

    @staticmethod
    def _copy_rows(store: Any, run_id: str, step: int, writer: Any) -> None:
        """The earlier attempt's eval and training-loss rows up to `step`, into `writer`."""
        for frame, append in ((query.evals_frame(store, [run_id]), writer.append_eval),
                              (query.train_frame(store, [run_id]), writer.append_train)):
            if frame.empty:
                continue
            for row in frame[frame.step <= step].to_dict("records"):
                row.pop("run_id", None)
                append({k: v for k, v in row.items()
                        if not (isinstance(v, float) and math.isnan(v))})

    def maybe_save(self, p: Any, writer: Any, at: RunPosition) -> None:
        """Save the state after the eval at `at.step` when `every_s` has passed since the last
        save."""
        if time.monotonic() - self._last_save < self.every_s:
            return
        self._last_save = time.monotonic()
        optimizer = _optimizer(p.algorithm)
        if optimizer is None:
            if not self._warned:
                print(f"checkpoint: {type(p.algorithm).__name__} has no torch optimizer to save; "
                      "this run goes on without checkpoints", file=sys.stderr, flush=True)
                self._warned = True
            return
        if not self.writes:
            return
        counters = {**asdict(at), "reached": bool(at.reached),
                    "preemptions": getattr(self, "preemptions", 0)}
        state = {"model": p.model.state_dict(), "optimizer": optimizer.state_dict(),
                 "rng": torch.get_rng_state(), "counters": counters, "run_id": writer.run_id}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        torch.save(state, tmp)
        os.replace(tmp, self.path)

    def discard(self) -> None:
        """The run ended: its checkpoint is no longer needed."""
        if self.writes:
            self.path.unlink(missing_ok=True)
