"""Runner overhead: the timed loop's training time against a bare PyTorch loop, side by side.

Both train the same model (same init), on the same preloaded data, with the same batch size,
optimizer (AdamW), learning-rate schedule and number of steps, on one thread. Rounds alternate
bare / runner so that machine noise hits both alike; the ratio of medians is printed.

    .venv/bin/python benchmarks/overhead.py [--workload digits_mlp] [--steps 2000] [--rounds 5]
        [--device cpu|cuda|auto] [--precision fp32|bf16] [--compile]

On a GPU the bare loop is the plainest compiled loop: `torch.compile(model)`, `torch.autocast`
for bf16, `torch.cuda.synchronize()` before each clock reading; the runner gets the same settings
through RunConfig. Compilation is left out of both sides: every runner run compiles cold on its
clock (runners/run/compilation.py) and its recorded `compile_seconds` are subtracted; the bare loop
compiles with one untimed forward and backward before its timer starts.

`runner/bare` uses the runner's own training clock (evals and logging are off the clock, as in
AlgoPerf) against a bare loop that also evaluates at the same cadence with its timer paused;
`runner wall-eval/bare` charges the runner everything except its evals (logging too);
`runner/bare-no-evals` compares with a bare loop that never evaluates.

`--boundary` prints instead what the runner does at each eval besides the eval, off the clock
but between two clocked stretches: appending the eval row (flushed; fsynced at most once a
second, workbench/store.py, against an fsync per row as before) and the machine's load
reading (runners/run/machine.py: a repeat within 0.2 s reads no file, against a full reading).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.algorithms import get_algorithm  # noqa: E402
from runners.algorithms.schedules import cosine_warmup  # noqa: E402
from runners.run.device import resolve_device  # noqa: E402
from runners.run.loop import run  # noqa: E402
from runners.run.timing import synchronize  # noqa: E402
from runners.workloads import build_workload  # noqa: E402
from workbench import catalog  # noqa: E402
from workbench.catalog import get_workload  # noqa: E402
from workbench.spec import Budget, ExecutionOptions, RunConfig  # noqa: E402
from workbench.store import open_store  # noqa: E402


def bare_loop(workload_name: str, steps: int, seed: int, with_evals: bool = True,
              device: torch.device = torch.device("cpu"), precision: str = "fp32",
              compile: bool = False) -> float:
    """Seconds for `steps` AdamW steps written as the plainest PyTorch loop.

    `with_evals`: evaluate the three splits at the workload's eval cadence with the timer paused,
    as the runner does. Evals are off both clocks, but they evict the training step's data from
    the CPU caches, so the steps after them run slower in either loop; pausing the bare timer for
    them isolates what the runner itself adds."""
    spec = get_workload(workload_name)
    workload = build_workload(spec, device=device)
    hp = get_algorithm("adamw").hparams
    rng_seed = RunConfig(workload_name, "adamw", seed=seed, study_name="overhead").rng_seed
    model = workload.init_model(rng_seed)
    forward = torch.compile(model) if compile else model
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    opt = torch.optim.AdamW(model.parameters(), lr=hp["learning_rate"], eps=1e-8,
                            betas=(1 - hp["one_minus_beta1"], hp["beta2"]),
                            weight_decay=hp["weight_decay"], foreach=True)
    inputs, targets = workload.splits["train"]
    n, bs, every = inputs.shape[0], spec.batch_size, spec.eval_every.steps
    gen = torch.Generator().manual_seed(rng_seed)
    perm, pos = torch.randperm(n, generator=gen).to(device), n
    if compile:  # compile before the timer (a runner run in between reset the compiled code)
        with autocast:
            forward(inputs[:bs]).float().sum().backward()
        opt.zero_grad(set_to_none=True)
    synchronize(device)
    start = time.perf_counter()
    for step in range(steps):
        if pos + bs > n:
            perm, pos = torch.randperm(n, generator=gen).to(device), 0
        idx = perm[pos:pos + bs]
        pos += bs
        for group in opt.param_groups:
            group["lr"] = cosine_warmup(step, hp["learning_rate"], spec.step_hint, hp["warmup_factor"])
        opt.zero_grad(set_to_none=True)
        with autocast:
            logits = forward(inputs.index_select(0, idx))
        loss = torch.nn.functional.cross_entropy(logits.float(), targets.index_select(0, idx))
        loss.backward()
        opt.step()
        if with_evals and (step + 1) % every == 0:
            synchronize(device)
            paused = time.perf_counter()
            with autocast:
                for split in ("train", "validation", "test"):
                    workload.evaluate(forward, split)
            synchronize(device)
            start += time.perf_counter() - paused
    synchronize(device)
    return time.perf_counter() - start


def runner_loop(workload_name: str, steps: int, seed: int, store_root: Path,
                **options) -> tuple[float, float]:
    """(training seconds on the runner's clock, wall seconds minus eval seconds) for one run,
    both without the run's recorded compilation.

    `options`: ExecutionOptions' device, precision and compile."""
    store = open_store(store_root, create=True)
    config = RunConfig(workload_name, "adamw", seed=seed, max_steps=steps, stop_on_target=False,
                       study_name="overhead", execution=ExecutionOptions(**options))
    doc = store.run_doc(run(config, store))
    if doc["steps"] != steps:
        raise RuntimeError(f"runner stopped at {doc['steps']} steps ({doc['stop_reason']})")
    compile_s = doc["compile_seconds"]
    return doc["train_seconds"] - compile_s, doc["wall_seconds"] - doc["eval_seconds"] - compile_s


def allow_steps(workload_name: str, steps: int) -> None:
    """Let the benchmark's runs go `steps` steps even past the workload's step budget."""
    spec = catalog.CATALOG[workload_name]
    budget = Budget(seconds=spec.budget.seconds, steps=max(steps, spec.budget.steps))
    catalog.CATALOG[workload_name] = dataclasses.replace(spec, budget=budget)


def boundary_costs(rows: int = 400) -> None:
    """Milliseconds per eval of the eval row's write and the load reading, each way."""
    from runners.run.machine import MachineMonitor

    row = json.dumps({"run_id": "x" * 40, "eval_index": 1, "step": 5, "train_seconds": 1.0,
                      "validation/accuracy": 0.5, "validation/loss": 0.7})
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parents[1]) as tmp:
        with open(Path(tmp) / "evals.jsonl", "a") as f:
            for label, sync in (("flush only", False), ("fsync per row", True)):
                start = time.perf_counter()
                for _ in range(rows):
                    f.write(row + "\n")
                    f.flush()
                    if sync:
                        os.fsync(f.fileno())
                print(f"eval row, {label:14s} {1e3 * (time.perf_counter() - start) / rows:.3f} ms")
    monitor = MachineMonitor()
    for label, full in (("repeat", False), ("full reading", True)):
        start = time.perf_counter()
        for _ in range(rows):
            monitor._loaded = monitor._loaded and not full
            monitor.read()
        print(f"load reading, {label:12s} {1e3 * (time.perf_counter() - start) / rows:.3f} ms")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="digits_mlp")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:<i> | auto")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--compile", action="store_true", help="torch.compile both loops")
    parser.add_argument("--boundary", action="store_true",
                        help="only the eval boundary's bookkeeping costs (see above)")
    args = parser.parse_args()
    if args.boundary:
        boundary_costs()
        return 0
    torch.set_num_threads(1)
    allow_steps(args.workload, args.steps)
    device = resolve_device(args.device)
    opts = {"device": device, "precision": args.precision, "compile": args.compile}
    run_opts = {**opts, "device": str(device)}
    bare, bare_no_eval, runner, runner_wall = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        bare_loop(args.workload, 50, 0, **opts)  # warm-up: allocator, kernels, data, compilation
        runner_loop(args.workload, 50, 0, Path(tmp) / "warm", **run_opts)
        for r in range(args.rounds):
            bare.append(bare_loop(args.workload, args.steps, r, **opts))
            bare_no_eval.append(bare_loop(args.workload, args.steps, r, with_evals=False, **opts))
            t, w = runner_loop(args.workload, args.steps, r, Path(tmp) / "store", **run_opts)
            runner.append(t)
            runner_wall.append(w)
            print(f"round {r}: bare {bare[-1]:.3f} s (no evals {bare_no_eval[-1]:.3f} s)  "
                  f"runner {t:.3f} s  (wall-eval {w:.3f} s)")
    b = statistics.median(bare)
    print(f"\n{args.workload}, {args.steps} steps, batch {get_workload(args.workload).batch_size}, "
          f"{device} ({args.precision}{', compiled' if args.compile else ''}), 1 thread, "
          f"{args.rounds} rounds (median; spread = min..max)")
    print(f"bare loop        {b:.3f} s  ({min(bare):.3f}..{max(bare):.3f})")
    print(f"runner (clock)   {statistics.median(runner):.3f} s  ({min(runner):.3f}..{max(runner):.3f})")
    print(f"bare, no evals   {statistics.median(bare_no_eval):.3f} s")
    print(f"runner/bare            = {statistics.median(runner) / b:.3f}")
    print(f"runner/bare-no-evals   = {statistics.median(runner) / statistics.median(bare_no_eval):.3f}"
          "  (includes the cache cost of evals, which any loop that evaluates pays)")
    print(f"runner wall-eval/bare  = {statistics.median(runner_wall) / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
