"""The benchmark scripts run end to end on the CPU (their figures are for the README, not tests)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from locations import REPO

ROOT = REPO


def _script(name: str, *args: str) -> str:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.slow
def test_overhead_benchmark_takes_the_device_options():
    text = _script("overhead.py", "--workload", "synthetic", "--steps", "40", "--rounds", "1",
                   "--device", "cpu", "--precision", "bf16")
    assert "cpu (bf16), 1 thread" in text and "runner/bare" in text


@pytest.mark.slow
def test_compile_time_benchmark_prints_recorded_against_first_step_seconds():
    text = _script("compile_time.py", "--workload", "synthetic", "--runs", "1", "--steps", "11")
    assert "run 0: set-up" in text and "cache cold" in text
    assert "compile_seconds / (first - steady):" in text


@pytest.mark.slow
def test_throughput_benchmark_reports_flops_and_says_why_mfu_is_missing():
    text = _script("throughput.py", "--workload", "synthetic", "--device", "cpu",
                   "--precision", "fp32", "--steps", "5", "--warmup", "1", "--rounds", "1")
    assert "examples/s" in text and "counted (FlopCounterMode)" in text
    assert "MFU (steady)     n/a: no peak FLOP/s is known for device type 'cpu'" in text
    assert "whole run        6 steps" in text


@pytest.mark.slow
def test_worker_start_benchmark_compares_both_start_methods(monkeypatch, capsys):
    # in this process: its fork server may already be up (the benchmark's first round pays it)
    from runners.plugins import load_file

    module = load_file(ROOT / "benchmarks" / "worker_start.py", "worker_start")
    monkeypatch.setattr(sys, "argv", ["worker_start.py", "--trials", "1", "--rounds", "1"])
    assert module.main() == 0
    text = capsys.readouterr().out
    assert "spawn / forkserver = " in text and "forkserver" in text


@pytest.mark.slow
def test_verdicts_benchmark_calibrates_the_sequential_test_on_a_stores_trials(tmp_path):
    from workbench.testing import make_timing_store

    make_timing_store(tmp_path / "s", {"a": 1.0, "b": 1.0}, workloads=("mnist1d_mlp",),
                      studies=2, trials=3)
    text = _script("verdicts.py", "--sequential", "--store", str(tmp_path / "s"), "--pool",
                   "a", "--replicates", "3", "--max-studies", "4", "--trials", "2")
    assert "3 replicates; studies resampled from the trials of a" in text
    assert "no true difference: sequential test, false verdicts" in text
    assert "B 1.5x slower: sequential test, power" in text


def test_import_score_finds_the_official_scorer_only_when_it_is_installed(tmp_path, monkeypatch):
    """benchmarks/import_score.py times the official AlgoPerf scorer only where its module is
    importable; Pacebench's own `algoperf` stand-in (no scorer) does not count as it."""
    from runners.algoperf.adapter import COMPAT_DIR
    from runners.plugins import load_file

    bench = load_file(ROOT / "benchmarks" / "import_score.py", "import_score")
    monkeypatch.syspath_prepend(str(COMPAT_DIR))  # the stand-in
    assert bench.official_scorer() is None
    fake = tmp_path / "algoperf" / "scoring"
    fake.mkdir(parents=True)
    for folder in (fake.parent, fake):
        (folder / "__init__.py").write_text("")
    (fake / "score_submissions.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "algoperf" or m.startswith("algoperf.")]:
        monkeypatch.delitem(sys.modules, name)
    assert bench.official_scorer() == str(fake / "score_submissions.py")


def test_overhead_boundary_prints_each_bookkeeping_cost_both_ways():
    text = _script("overhead.py", "--boundary")
    for label in ("flush only", "fsync per row", "load reading, repeat", "full reading",
                  "load average"):
        assert label in text
