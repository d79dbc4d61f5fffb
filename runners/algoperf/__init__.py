"""AlgoPerf submissions unchanged: the adapter (adapter.py), the AlgoPerf workload surface
(workload.py) and the `algoperf` / `absl` stand-ins (compat/, a sys.path root, not a package).

Beside runners.run: imports runners.api and plugins, never run, launch, procedures or cli."""
