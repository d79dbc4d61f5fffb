"""Throughput and MFU of a workload (the GPU-size transformer by default) on one device.

    .venv/bin/python benchmarks/throughput.py [--workload gpt_28m] [--device auto]
        [--precision bf16] [--compile [--compile-mode MODE]] [--steps 100] [--warmup 20] [--rounds 3]
        [--n-layer L --n-embd D --n-head H] [--profile]

The default workload is the ladder's 28 M rung (`pacebench ladder --list` names the others);
any catalog workload can be given. Two figures:
- steady state: after `--warmup` updates (compilation, allocator, autotuning), `--steps` updates
  of the runner's own AdamW, timed with the device synchronised before each clock reading, repeated
  `--rounds` times; tokens per second and MFU = FLOPs counted per step (runners/run/flops.py) x steps
  / seconds / the device's dense peak at the run's precision (runners/run/flops.py PEAK_FLOPS).
- whole run: one `runners.run.loop.run` of warmup + steps updates, evals off the clock and
  compilation on it, and the MFU, peak memory and energy it records in run.json.
For GPT workloads the analytic count is printed beside the measured one: 6 N FLOPs per token for
the N weights of the matrix multiplications plus 12 L T d per token for attention (the PaLM
paper's appendix B formula), T = context, d = width, L = layers.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.run.flops import mfu, peak_flops  # noqa: E402
from runners.run.loop import prepare, run  # noqa: E402
from runners.run.timing import DeviceClock  # noqa: E402
from workbench import catalog  # noqa: E402
from workbench.spec import COMPILE_MODES, Budget, ExecutionOptions, RunConfig  # noqa: E402
from workbench.store import open_store  # noqa: E402


def analytic_gpt_flops(model: torch.nn.Module, spec, batch_size: int) -> float | None:
    """6 N + 12 L T d FLOPs per token times tokens per step, for GPT models; None otherwise.
    A ladder rung's N includes its head, which is tied to the embedding (catalog.rung_counts)."""
    if spec.model.get("arch") != "gpt":
        return None
    if spec.model.get("ladder"):
        vocab = model.tok.weight.shape[0]
        return catalog.rung_counts(spec, vocab)["flops_per_token"] * batch_size * \
            int(spec.model["block_size"])
    n = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    layers, width, context = (int(spec.model[k]) for k in ("n_layer", "n_embd", "block_size"))
    return (6 * n + 12 * layers * context * width) * batch_size * context


def steady_state(config: RunConfig, warmup: int, steps: int, rounds: int) -> dict:
    """Seconds per round of `steps` updates after `warmup` updates, and the prepared run."""
    p = prepare(config)
    clock = DeviceClock(p.device)
    batches = p.workload.train_batches(p.batch_size, config.rng_seed)
    for step in range(warmup):
        p.algorithm.update(p.model, next(batches), step, p.workload)
    seconds, syncs = [], 0
    for r in range(rounds):
        start = clock.now()
        with _host_syncs(p.device) as caught:  # between the clock's readings only
            for i in range(steps):
                p.algorithm.update(p.model, next(batches), warmup + r * steps + i, p.workload)
        seconds.append(clock.now() - start)
        syncs += len(caught)
    return {"prepared": p, "seconds": seconds, "host_syncs": syncs}


@contextlib.contextmanager
def _host_syncs(device: torch.device):
    """The synchronising CUDA calls made inside the block (torch's sync debug mode, as warnings);
    always empty off CUDA, where there is nothing to wait for."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if device.type == "cuda":
            torch.cuda.set_sync_debug_mode("warn")
        try:
            yield caught
        finally:
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode("default")
    caught[:] = [w for w in caught if "synchroniz" in str(w.message)]


def print_kernel_profile(p, config: RunConfig, first_step: int, steps: int = 10) -> None:
    """The 15 CUDA kernels that took most device time over `steps` steady updates."""
    from torch.profiler import ProfilerActivity, profile
    batches = p.workload.train_batches(p.batch_size, config.rng_seed + 1)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            p.algorithm.update(p.model, next(batches), first_step + i, p.workload)
        torch.cuda.synchronize(p.device)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=60))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="gpt_28m")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="bf16")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--compile-mode", choices=COMPILE_MODES, default="default",
                        help="torch.compile's mode (with --compile)")
    parser.add_argument("--steps", type=int, default=100, help="timed updates per round")
    parser.add_argument("--warmup", type=int, default=20, help="untimed updates first")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (CPU)")
    parser.add_argument("--data-dir", help="dataset folder (default: $PACEBENCH_DATA or datasets/cache)")
    for key in ("n_layer", "n_embd", "n_head"):
        parser.add_argument("--" + key.replace("_", "-"), type=int, help="resize a GPT workload")
    parser.add_argument("--profile", action="store_true", help="top CUDA kernels of 10 steps")
    return parser


def _config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple:
    """(the run's RunConfig, its workload spec, the GPT knobs resized) from the arguments; the
    catalog entry is resized and its budget widened in place, for this process."""
    spec = catalog.get_workload(args.workload)
    resized = {k: getattr(args, k) for k in ("n_layer", "n_embd", "n_head") if getattr(args, k)}
    if resized:
        if spec.model.get("arch") != "gpt":
            parser.error(f"--n-layer/--n-embd/--n-head resize GPT workloads; {args.workload} is not one")
        spec = dataclasses.replace(spec, model={**spec.model, **resized})
    total = args.warmup + args.steps
    catalog.CATALOG[args.workload] = dataclasses.replace(  # let the whole run go `total` steps
        spec, budget=Budget(seconds=max(spec.budget.seconds, 3600.0),
                            steps=max(spec.budget.steps, total)))
    config = RunConfig(args.workload, "adamw", max_steps=total, stop_on_target=False,
                       study_name="throughput", execution=ExecutionOptions(
                           threads=args.threads, device=args.device, precision=args.precision,
                           compile=args.compile, compile_mode=args.compile_mode))
    return config, spec, resized


def _print_steady(args: argparse.Namespace, s: dict, spec, resized: dict) -> None:
    """The steady-state figures of steady_state's rounds."""
    p, seconds = s["prepared"], s["seconds"]
    flops = p.accelerator.flops_per_step
    peak, source = peak_flops(p.device, args.precision)
    per_step = [t / args.steps for t in seconds]
    tokens = p.batch_size * int(spec.model.get("block_size", 1))  # examples for non-GPT workloads
    med = statistics.median(per_step)
    print(f"{args.workload} on {p.accelerator.document()['device_name']} ({p.device}), "
          f"{args.precision}{f', compiled ({args.compile_mode})' if args.compile else ''}, "
          f"batch {p.batch_size}, "
          f"{args.threads} thread(s); {args.rounds} rounds of {args.steps} steps after "
          f"{args.warmup} warm-up steps (median; spread = min..max)")
    print(f"step time        {med * 1e3:.2f} ms  ({min(per_step) * 1e3:.2f}..{max(per_step) * 1e3:.2f})")
    print(f"host syncs       {s['host_syncs']} in the timed steps (torch.cuda sync debug mode)"
          if p.device.type == "cuda" else "host syncs       not measured off CUDA")
    print(f"throughput       {tokens / med:,.0f} tokens/s" if "block_size" in spec.model
          else f"throughput       {tokens / med:,.0f} examples/s")
    print(f"FLOPs per step   {flops:.4g} counted (FlopCounterMode)")
    analytic = analytic_gpt_flops(p.model, spec, p.batch_size)
    if analytic:
        print(f"                 {analytic:.4g} analytic (6N + 12LTd per token); "
              f"counted/analytic = {flops / analytic:.3f}")
    achieved = flops / med
    print(f"achieved         {achieved / 1e12:.3f} TFLOP/s")
    util = mfu(flops, 1, med, peak)
    print(f"MFU (steady)     {util:.1%}  vs {peak / 1e12:g} TFLOP/s: {source}" if util is not None
          else f"MFU (steady)     n/a: {source}")
    if resized:
        print(f"resized          {resized} ({sum(q.numel() for q in p.model.parameters()):,} "
              f"parameters)")


def _print_whole_run(config: RunConfig) -> None:
    """One whole run of `config` through the runner, and what its run.json records."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "store", create=True)
        doc = store.run_doc(run(config, store))
    print(f"whole run        {doc['steps']} steps in {doc['train_seconds']:.2f} training s "
          f"(compilation included), status {doc['status']}")
    print(f"MFU (run.json)   {doc['mfu']:.1%}" if doc["mfu"] is not None
          else f"MFU (run.json)   n/a: {doc['mfu_note']}")
    memory = doc["peak_memory_bytes"]
    print(f"peak memory      {memory / 2**30:.2f} GiB" if memory is not None
          else f"peak memory      n/a: {doc['peak_memory_note']}")
    print(f"energy           {doc['energy_joules']:.1f} J, {doc['mean_power_watts']:.0f} W mean"
          if doc["energy_joules"] is not None else f"energy           {doc['energy_source']}")


def main() -> int:
    parser = _parser()
    args = parser.parse_args()
    config, spec, resized = _config(args, parser)
    if args.data_dir:
        import os
        os.environ["PACEBENCH_DATA"] = args.data_dir
    s = steady_state(config, args.warmup, args.steps, args.rounds)
    _print_steady(args, s, spec, resized)
    if args.profile and s["prepared"].device.type == "cuda":
        print_kernel_profile(s["prepared"], config, args.warmup + args.rounds * args.steps)
    _print_whole_run(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
