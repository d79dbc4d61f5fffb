"""Import and score speed on the real AlgoPerf v0.5 logs (3,700 runs), with the load average.

Each round imports the v0.5 external-tuning logs into a fresh temporary store and times:
  import      `import_algoperf(...)` in a fresh process (its module loaded before the clock)
  score       `workbench.open(store).score()` in another fresh process once the import is done:
              the run table read from the store, the cube, the scores, their intervals and the
              speedups (`workbench.results` loaded before the clock); `score again` is the
              median of five more `score()` calls, each on a newly opened store, in the same
              process
  CLI         `pacebench import-algoperf LOGS --store S --targets T` and `pacebench score --store S
              --json` as subprocesses, start-up included
  official    the official AlgoPerf scorer (`algoperf.scoring.score_submissions` of
              mlcommons/algorithmic-efficiency) on the same logs, as a subprocess, when it is
              installed in this interpreter's environment; when it is not, the output says so
              and no time is printed for it
Each checkout is byte-compiled first (`compileall`, as installing a package does), so that no
process of either pays for compiling modules that changed since they were last cached (with
PYTHONDONTWRITEBYTECODE set, a checkout with no cache would compile every module each time).
The CPU seconds (user + system of the process, its threads and its worker processes) are printed
beside the import's wall seconds: on a shared machine they move less with the load than the wall
seconds do.

    .venv/bin/python benchmarks/import_score.py [--logs DIR] [--targets FILE] [--rounds 3]
        [--baseline OLD_CHECKOUT]

`--logs` defaults to the tarball `algoperf/algoperf_v05_external_tuning_logs.tar.xz` under
$PACEBENCH_DATA (else ../shared/data beside the checkout), extracted into a temporary folder.
`--baseline` names another checkout of Pacebench (e.g. `git archive <commit> | tar -x -C DIR`):
its code is timed the same way, round by round alternating with this checkout's, so that machine
noise hits both alike, and the `score --json` outputs of the two are compared.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
V05 = "previous_leaderboards/algoperf_v05/logs/external_tuning"
TARBALL = "algoperf/algoperf_v05_external_tuning_logs.tar.xz"

# Run in fresh processes with PYTHONPATH set to the checkout being timed; each prints one JSON line.
IMPORT = """
import json, resource, sys, time
from workbench.importers.algoperf import import_algoperf
logs, store, targets = sys.argv[1:4]
def cpu():
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
c, t = cpu(), time.perf_counter()
report = import_algoperf(logs, store, targets)
print(json.dumps({"import": time.perf_counter() - t, "import_cpu": cpu() - c,
                  "imported": report.imported, "problems": len(report.problems)}))
"""
SCORE = """
import json, sys, time
import workbench, workbench.results
store = sys.argv[1]
t = time.perf_counter()
workbench.open(store).score()
first = time.perf_counter() - t
again = []
for _ in range(5):
    t = time.perf_counter()
    workbench.open(store).score()
    again.append(time.perf_counter() - t)
print(json.dumps({"score": first, "score_again": sorted(again)[2]}))
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _env(checkout: Path) -> dict[str, str]:
    """The environment that runs `checkout`'s code (the commands run in it, too: `python -c`
    puts the working folder first on the path)."""
    return {**os.environ, "PYTHONPATH": str(checkout)}


def _pacebench() -> list[str]:
    """The `pacebench` command as `python -m runners.cli`, which runs the checkout PYTHONPATH
    picks whatever its console entry point is called (the environment's `pacebench` script
    names the installed checkout's)."""
    return [sys.executable, "-m", "runners.cli"]


def in_process(checkout: Path, logs: Path, targets: Path, tmp: Path) -> dict[str, float]:
    """The import, then the score computation in a fresh process (_child)."""
    store = Path(tempfile.mkdtemp(dir=tmp)) / "store"
    return {**_child(checkout, IMPORT, str(logs), str(store), str(targets)),
            **_child(checkout, SCORE, str(store))}


def _child(checkout: Path, code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], env=_env(checkout), cwd=checkout,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def commands(checkout: Path, logs: Path, targets: Path, tmp: Path) -> tuple[dict, str]:
    """(seconds of the two commands, the output of `score --json`)."""
    store = Path(tempfile.mkdtemp(dir=tmp)) / "store"
    out = {}
    for name, args in (("cli import", ["import-algoperf", str(logs), "--store", str(store),
                                       "--targets", str(targets)]),
                       ("cli score", ["score", "--store", str(store), "--json"])):
        start = time.perf_counter()
        done = subprocess.run(_pacebench() + args, env=_env(checkout), cwd=checkout,
                              capture_output=True, text=True, check=True)
        out[name] = time.perf_counter() - start
    return out, done.stdout


OFFICIAL = "algoperf.scoring.score_submissions"


def official_scorer() -> str | None:
    """The file of the official AlgoPerf scorer's module when it is installed (not Pacebench's
    own `algoperf` stand-in, which has no scorer), else None."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(OFFICIAL)
    except ModuleNotFoundError:  # no `algoperf` package, or one without `scoring`
        return None
    return spec.origin if spec is not None and spec.origin else None


def time_official(logs: Path, tmp: Path) -> float:
    """Wall seconds of the official scorer over `logs` (its performance profiles included)."""
    out = Path(tempfile.mkdtemp(dir=tmp))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", OFFICIAL, f"--submission_directory={logs}",
                    f"--output_dir={out}", "--compute_performance_profiles"],
                   capture_output=True, text=True, check=True)
    return time.perf_counter() - start


def summary(values: list[float]) -> str:
    """Median (min to max, n) of a figure over the rounds."""
    return (f"{statistics.median(values):7.2f} s ({min(values):.2f} to {max(values):.2f}, "
            f"n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    data = Path(os.environ.get("PACEBENCH_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--logs", type=Path, help=f"the v0.5 folder (default: {TARBALL} "
                        "under the data folder, extracted into a temporary folder)")
    parser.add_argument("--targets", type=Path,
                        default=data / "algoperf" / "workload_targets_v05.json")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout to time alongside")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pacebench-bench-") as tmp:
        tmp = Path(tmp)
        logs = args.logs
        if logs is None:
            with tarfile.open(data / TARBALL) as tar:
                tar.extractall(tmp / "logs", filter="data")
            logs = tmp / "logs" / V05
        checkouts = {"this": REPO} | ({"baseline": args.baseline.resolve()}
                                      if args.baseline else {})
        print(f"{os.cpu_count()} CPUs; load average at start {load()}")
        official = official_scorer()
        print(f"official AlgoPerf scorer: {official}" if official else
              f"official AlgoPerf scorer: not installed here ({OFFICIAL} not importable), "
              "so it is not timed")
        for checkout in checkouts.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", "workbench", "runners"],
                           cwd=checkout, check=True)
        figures: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
        outputs: dict[str, str] = {}
        for round_ in range(args.rounds):
            for name, checkout in checkouts.items():
                got = in_process(checkout, logs, args.targets, tmp)
                assert got["problems"] == 0 and got["imported"] == 3700, got
                cli, outputs[name] = commands(checkout, logs, args.targets, tmp)
                if official and name == "this":
                    cli["official"] = time_official(logs, tmp)
                for key, value in {**got, **cli}.items():
                    if key not in ("imported", "problems"):
                        figures[name].setdefault(key, []).append(value)
                print(f"round {round_ + 1} {name:8s} import {got['import']:.2f} s "
                      f"(cpu {got['import_cpu']:.2f} s), score {got['score']:.3f} s, "
                      f"warm score {got['score_again']:.3f} s, "
                      f"cli import {cli['cli import']:.2f} s, cli score {cli['cli score']:.2f} s;"
                      f" load {load()}", flush=True)
        for name, checkout in checkouts.items():
            print(f"\n{name} ({checkout}):")
            for key, values in figures[name].items():
                print(f"  {key:12s} {summary(values)}")
        if "baseline" in outputs:
            same = json.loads(outputs["this"]) == json.loads(outputs["baseline"])
            print(f"\nscore --json identical to the baseline's: {same}")
        print(f"load average at end {load()}")


if __name__ == "__main__":
    main()
