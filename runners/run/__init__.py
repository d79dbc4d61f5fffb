"""One run: the timed loop and what a run measures (timing, device, compilation, FLOPs, energy,
inference latency, machine speed, stall and early-stopping rules, checkpoints, reuse key).

Imports: runners.api, plugins, tuning, algorithms, workloads, data, algoperf and workbench; never
launch, procedures or cli (pyproject.toml's import-linter contracts)."""
