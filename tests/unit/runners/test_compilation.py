"""Compilation accounted (runners/run/compilation.py): every compiling run gets a cold compiler cache of
its own, whatever ran before it in the process or on the machine, and records the seconds of
compilation in its training time; the shared cache is an explicit opt-in that records "warm"."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path

import pytest
import torch
from torch._dynamo.callback import CallbackArgs, CallbackTrigger

import runners.run.compilation as comp
from runners.run.compilation import FOLDER_PREFIX, INDUCTOR_ENV, SHARED_CACHE_ENV, TRITON_ENV, \
    Compilation
from runners.run.loop import run
from workbench import query
from workbench.spec import ExecutionOptions, RunConfig
from workbench.store import open_store


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Tiny models on 2 shared cores."""


@pytest.fixture()
def no_warm_up(monkeypatch, tmp_path):
    """No compiler warm-up, and this test's own temporary directory (compile folders land there)."""
    monkeypatch.setattr(comp, "warm_compiler", lambda device: None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(SHARED_CACHE_ENV, raising=False)
    return tmp_path


def _compile_starts(c: Compilation, seconds: list[float], events: list, monkeypatch) -> None:
    """Feed `c` the compiler's accounted seconds, one reading per event, and the events: its
    start, its close, and compile starts (trigger, grad mode of the compiling thread, whether the
    model is in train mode)."""
    model = torch.nn.Linear(2, 2)
    c._model = weakref.ref(model)
    readings = iter(seconds)
    monkeypatch.setattr(comp, "compiler_seconds", lambda: next(readings))
    for event in events:
        if event == "start":
            c.start()
        elif event == "close":
            c.close()
        else:
            trigger, grad, training = event
            model.train(training)
            with torch.set_grad_enabled(grad):
                c._on_compile_start(CallbackArgs(trigger, "0/0"))


def test_step_graphs_and_backwards_count_eval_graphs_do_not(monkeypatch):
    """Compiler-accounted seconds 0, 1, 1, 6, 8, 11, 15, 16 at these events: a compile before the
    clock (not counted), a training forward (5 s), its backward, compiled lazily in a thread where
    grad mode reads off (2 s), an eval graph: eval mode, no_grad (3 s, off the clock), an
    optimizer step compiled under no_grad in train mode (4 s), a recompiled forward (1 s, up to
    the close)."""
    c = Compilation(torch.device("cpu"))
    dynamo, backward = CallbackTrigger.DYNAMO, CallbackTrigger.LAZY_BACKWARD
    _compile_starts(c, [0.0, 1.0, 1.0, 6.0, 8.0, 11.0, 15.0, 16.0],
                    [(dynamo, True, True), "start", (dynamo, True, True),
                     (backward, False, True), (dynamo, False, False), (dynamo, False, True),
                     (dynamo, True, True), "close"], monkeypatch)
    assert c.seconds == pytest.approx(5.0 + 2.0 + 4.0 + 1.0)
    assert c.close() == c.seconds  # closing again changes nothing


def test_a_reset_of_the_counters_mid_run_loses_no_seconds(monkeypatch):
    c = Compilation(torch.device("cpu"))
    _compile_starts(c, [4.0, 4.0, 0.5], ["start", (CallbackTrigger.DYNAMO, True, True), "close"],
                    monkeypatch)
    assert c.seconds == pytest.approx(0.5)  # Dynamo was reset after the compile began


def test_a_private_folder_per_run_removed_after_it_and_variables_restored(no_warm_up):
    before = {k: os.environ.get(k) for k in (INDUCTOR_ENV, TRITON_ENV)}
    c = Compilation(torch.device("cpu"))
    c.open()
    assert c.cache == "cold" and c.folder.parent == no_warm_up and c.folder.is_dir()
    assert c.folder.name.startswith(f"{FOLDER_PREFIX}{os.getpid()}-")
    assert os.environ[INDUCTOR_ENV] == str(c.folder)
    assert os.environ[TRITON_ENV] == str(c.folder / "triton")
    (c.folder / "fxgraph").mkdir()
    c.close()
    assert not c.folder.exists()
    assert {k: os.environ.get(k) for k in (INDUCTOR_ENV, TRITON_ENV)} == before


def test_folders_of_killed_processes_are_swept_and_live_ones_kept(no_warm_up):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    orphan = no_warm_up / f"{FOLDER_PREFIX}{dead}-abc"
    live = no_warm_up / f"{FOLDER_PREFIX}{os.getppid()}-abc"
    for folder in (orphan, live):
        (folder / "fxgraph").mkdir(parents=True)
    c = Compilation(torch.device("cpu"))
    c.open()
    c.close()
    assert not orphan.exists() and live.exists()


def test_the_shared_cache_is_warm_once_it_holds_compiled_code_and_is_kept(no_warm_up,
                                                                          monkeypatch):
    shared = no_warm_up / "shared"
    (shared / "locks").mkdir(parents=True)
    (shared / "locks" / "x.lock").write_text("")
    monkeypatch.setenv(SHARED_CACHE_ENV, str(shared))
    c = Compilation(torch.device("cpu"))
    c.open()
    assert c.cache == "cold" and os.environ[INDUCTOR_ENV] == str(shared)
    (shared / "fxgraph" / "ab").mkdir(parents=True)
    (shared / "fxgraph" / "ab" / "graph").write_text("compiled")
    c.close()
    assert shared.is_dir()
    again = Compilation(torch.device("cpu"))
    again.open()
    again.close()
    assert again.cache == "warm"


def test_an_unusable_shared_cache_is_one_line_naming_the_variable(no_warm_up, monkeypatch):
    blocker = no_warm_up / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(SHARED_CACHE_ENV, str(blocker / "cache"))
    with pytest.raises(ValueError, match=f"^{SHARED_CACHE_ENV}=.*unset it for a private cold "
                                         "cache per run$"):
        Compilation(torch.device("cpu")).open()


# --- real compiles: two trials of one study in one process, the hard case -------------------------

def _fx_graph_cache() -> tuple[int, int]:
    counts = torch._dynamo.utils.counters["inductor"]
    return counts["fxgraph_cache_hit"], counts["fxgraph_cache_miss"]


def _run_folders() -> list[Path]:
    """This process's run compile folders (its warm-up folder is gone after the warm-up)."""
    return list(Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}{os.getpid()}-*"))


@pytest.mark.slow
def test_two_trials_in_one_process_both_compile_cold_and_alike(tmp_path, monkeypatch):
    monkeypatch.delenv(SHARED_CACHE_ENV, raising=False)
    store = open_store(tmp_path / "store", create=True)
    docs = []
    for trial in (0, 1):
        hits, misses = _fx_graph_cache()
        config = RunConfig("synthetic", "adamw", study_name="s", trial=trial, max_steps=3,
                           stop_on_target=False, execution=ExecutionOptions(compile=True))
        docs.append(store.run_doc(run(config, store)))
        # the second trial found nothing the first compiled: every graph missed the FX cache
        assert _fx_graph_cache()[0] == hits and _fx_graph_cache()[1] > misses
        assert _run_folders() == []
    first, second = (d["compile_seconds"] for d in docs)
    for doc in docs:
        assert doc["status"] == "complete" and doc["compile_cache"] == "cold"
        assert 0 < doc["compile_seconds"] <= doc["train_seconds"]
    print(f"compile seconds: trial 0 {first:.2f} s, trial 1 {second:.2f} s")
    assert 1 / 4 < first / second < 4, (first, second)  # same order on a noisy shared machine
    table = query.runs_frame(store).sort_values("trial")  # the run table reads both fields
    assert list(table.compile_cache) == ["cold", "cold"]
    assert list(table.compile_seconds) == pytest.approx([first, second])
