"""A compiling run's compiler: a cold cache of its own, and the seconds it compiled on the clock.

Compilation is training time (AlgoPerf counts it), so a run must never profit from compiled code
that another run left behind, on disk or in the process. Before the clock, each `--compile` run:
1. once per process and device type, compiles and runs a throwaway two-op function in a folder it
   then deletes (`warm_compiler`): torch's once-per-process set-up (importing the compiler,
   probing the CPU's vector instructions, starting compile workers) would otherwise be paid by the
   first run of a process only (10 to 30 s on a 2-core CPU, more than a small model's compile).
   Two things of torch's own, the same for every model, stay where torch keeps them, once per
   machine user: the results of the CPU probes (built in TORCHINDUCTOR_CACHE_DIR at the warm-up,
   before it points elsewhere) and the precompiled C++ header that CPU kernels include
   (`codecache._HEADER_DIR`, outside TORCHINDUCTOR_CACHE_DIR by torch's design); the warm-up
   makes sure both exist before the clock, so no run builds them on it;
2. gets a fresh, empty folder of its own, `pacebench-compile-<pid>-*` in the temporary directory,
   for the on-disk caches torch 2.13 keeps of compiled code:
   - `TORCHINDUCTOR_CACHE_DIR`, read by inductor each time it needs a path (cache_dir_utils.
     cache_dir), so setting it in the worker before the first compile works: the FX-graph cache
     (`fxgraph/`), the AOTAutograd cache (`aotautograd/`), generated kernels and their builds,
     autotuning results, Dynamo's profile of dynamic shapes (`dynamo/`);
   - `TRITON_CACHE_DIR`, read lazily by Triton and passed by inductor to its compile workers with
     every job: compiled GPU kernels (inductor sets it once, to a folder inside the first cache
     dir, if unset; so it is set here explicitly);
3. resets the in-process state: Dynamo's compiled code and counters (`torch.compiler.reset()`),
   inductor's in-memory caches; and the run's model gets a compiled class of its own
   (runners/run/device.py).
After the run the folder is removed and the variables are restored (a crashed run's folder goes
when its Python exits; one left by a killed process is removed by the next compiling run).
Torch's remote caches are off outside Meta and stay so; `TORCHINDUCTOR_CACHE_DIR` set by the user
is replaced during a run and restored after it.

`compile_seconds` is the compiler's own accounting, read at the end of the run: the outermost
phases of torch's compile-time counters (COMPILE_PHASES: every frame compile with its
AOTAutograd and inductor work, recompilations included; backward graphs compiled lazily at the
first backward; Triton autotuning at a kernel's first launch), attributed compile by compile with
Dynamo's compile callbacks (torch's insides are read through runners/run/torch_internals.py,
which refuses to read a renamed counter as 0 seconds). A compile counts unless it starts while
the run's model is in eval mode with autograd off: that is an eval (Workload.evaluate's
contract, AlgoPerf's EVAL mode) or the batch-1 latency after the run, both off the clock. So
the steps' graphs, their backwards and anything an algorithm compiles in its update (an
optimizer step under no_grad, say) count.

`PACEBENCH_COMPILE_CACHE=<folder>` opts into one persistent cache shared by runs (kept, never
removed): `compile_cache` is then "warm" when the folder held compiled artifacts at the run's
start. Warm runs compile faster, so their times do not compare fairly with cold ones.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch

from runners.run.torch_internals import (COMPILE_PHASES, clear_inductor_caches, compiler_seconds,
                                         is_lazy_backward, on_compile_start, probe_cpu_vector_isa,
                                         remove_compile_start, reset_compiler)
from workbench.errors import UserError

__all__ = ["Compilation", "warm_compiler", "compiler_seconds", "SHARED_CACHE_ENV",
           "FOLDER_PREFIX", "COMPILE_PHASES"]

SHARED_CACHE_ENV = "PACEBENCH_COMPILE_CACHE"  # opt-in: a cache folder shared by runs (unfair)
INDUCTOR_ENV, TRITON_ENV = "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"
FOLDER_PREFIX = "pacebench-compile-"          # + "<pid>-<random>", in tempfile.gettempdir()
_NOT_ARTIFACTS = ("locks",)  # what an unused cache folder may already hold

# (pid, device type) pairs whose once-per-process compiler set-up is done (warm_compiler): keyed by
# pid, as a forked child must do its own.
_WARMED: set[tuple[int, str]] = set()


def _clear_in_process_caches() -> None:
    """Forget every compiled artifact held in memory (Dynamo's code, inductor's caches)."""
    reset_compiler()


def _point_caches_at(folder: Path | None, saved: dict | None = None) -> dict:
    """Point the compiler's on-disk caches into `folder` (None: restore `saved`); returns the
    variables as they were."""
    before = {INDUCTOR_ENV: os.environ.get(INDUCTOR_ENV), TRITON_ENV: os.environ.get(TRITON_ENV)}
    values = saved if folder is None else {INDUCTOR_ENV: str(folder),
                                           TRITON_ENV: str(folder / "triton")}
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    return before


@contextmanager
def _caches_in(folder: Path) -> Iterator[None]:
    """Compile into `folder`, starting and ending with nothing compiled in memory."""
    _clear_in_process_caches()
    saved = _point_caches_at(folder)
    try:
        yield
    finally:
        _point_caches_at(None, saved)
        _clear_in_process_caches()


def _warm_up_fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A matrix product and a pointwise op: the two kinds of kernel a model compiles."""
    return torch.nn.functional.linear(x, w).relu().sum()


def warm_compiler(device: torch.device) -> None:
    """Do torch's once-per-process compiler set-up for `device` (off the clock): compile a
    throwaway function, forward and backward, in a folder deleted afterwards."""
    if (os.getpid(), device.type) in _WARMED:
        return
    if device.type == "cpu":  # probe the vector instructions in torch's own cache (see above)
        probe_cpu_vector_isa()
    with tempfile.TemporaryDirectory(prefix=f"{FOLDER_PREFIX}{os.getpid()}-warm-") as tmp:
        with _caches_in(Path(tmp)):
            x, w = torch.ones(4, 8, device=device), torch.ones(8, 8, device=device,
                                                                 requires_grad=True)
            torch.compile(_warm_up_fn)(x, w).backward()
            if compiler_seconds() > 0:  # really compiled (a test may have replaced torch.compile)
                _WARMED.add((os.getpid(), device.type))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def _sweep_orphans(root: Path) -> None:
    """Remove the compile folders of processes that died without removing them (killed)."""
    for path in root.glob(f"{FOLDER_PREFIX}*"):
        pid = path.name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _holds_artifacts(folder: Path) -> bool:
    """Whether a cache folder holds anything compiled (any file outside its lock folders)."""
    return any(p.is_file() and not p.name.endswith(".lock") and
               not set(p.relative_to(folder).parts[:-1]) & set(_NOT_ARTIFACTS)
               for p in folder.rglob("*"))


def _release(folder: Path, private: bool, mine: dict, saved: dict) -> None:
    """Undo Compilation.open: restore the cache variables if they still point at `folder`
    (another run may have opened since), and remove it when private. Safe at interpreter exit."""
    if os.environ.get(INDUCTOR_ENV) == mine[INDUCTOR_ENV]:
        _point_caches_at(None, saved)
        clear_inductor_caches()  # in-memory caches that hold paths into the folder
    if private:
        shutil.rmtree(folder, ignore_errors=True)


class Compilation:
    """One compiling run's compiler cache and compile seconds (see the module docstring).

    open() before the clock, start() when it starts, close() at the end: it returns the seconds.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cache: str | None = None       # "cold" | "warm", once open
        self.folder: Path | None = None
        self.seconds = 0.0                  # compilation counted so far, s
        self._lock = threading.Lock()
        self._started = self._counting = self._closed = False
        self._mark = 0.0                    # compiler_seconds() at the last settlement, s
        self._finalizer: weakref.finalize | None = None
        self._model: weakref.ref | None = None  # the run's model: its mode tells evals apart

    def open(self, model: torch.nn.Module | None = None) -> None:
        """Before the clock: warm the process, give the run its cache folder, forget compiled
        code, and listen to the compiler's start events (`model`: the run's model, whose eval
        mode with autograd off marks an eval; without it, autograd off alone does)."""
        warm_compiler(self.device)
        shared = os.environ.get(SHARED_CACHE_ENV)
        if shared:
            self.folder = _shared_folder(shared)
            self.cache = "warm" if _holds_artifacts(self.folder) else "cold"
        else:
            root = Path(tempfile.gettempdir())
            _sweep_orphans(root)
            self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-",
                                                dir=root))
            self.cache = "cold"
        _clear_in_process_caches()
        saved = _point_caches_at(self.folder)
        mine = {INDUCTOR_ENV: os.environ[INDUCTOR_ENV]}
        self._finalizer = weakref.finalize(self, _release, self.folder, not shared, mine, saved)
        self._model = weakref.ref(model) if model is not None else None
        on_compile_start(self._on_compile_start)

    def start(self) -> None:
        """At the clock's start: count from here."""
        with self._lock:
            self._settle()
            self._started, self._counting = True, False

    def close(self) -> float:
        """At the run's end: the seconds of compilation in its training time. Restores the cache
        variables and removes a private folder; later calls return the same seconds."""
        with self._lock:
            if self._closed:
                return self.seconds
            self._settle()
            self._closed = True
        remove_compile_start(self._on_compile_start)
        if self._finalizer is not None:
            self._finalizer()
        return self.seconds

    def _on_compile_start(self, args) -> None:
        """Dynamo's start event of an outermost compile: the compile before it has ended, so its
        seconds are settled; this one counts unless it is an eval's."""
        with self._lock:
            self._settle()
            # a backward compiles in autograd's thread, where grad mode reads off: always count it
            self._counting = is_lazy_backward(args) or not self._evaluating()

    def _evaluating(self) -> bool:
        """Whether the run's model is being evaluated: eval mode, autograd off."""
        model = self._model() if self._model is not None else None
        return not torch.is_grad_enabled() and (model is None or not model.training)

    def _settle(self) -> None:
        """Add the compiler's seconds since the last settlement when the last compile counts."""
        if self._closed:
            return
        now = compiler_seconds()
        spent = now - self._mark if now >= self._mark else now  # a reset zeroed the counters
        if self._started and self._counting:
            self.seconds += spent
        self._mark = now


def _shared_folder(value: str) -> Path:
    """The folder PACEBENCH_COMPILE_CACHE names, made if missing; a one-line error if unusable."""
    folder = Path(value).expanduser().resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".pacebench-probe-")
        probe.close()
    except OSError as err:
        raise UserError(f"{SHARED_CACHE_ENV}={value!r} is not a folder this process can "
                        f"create and write ({err.strerror or err}): name a writable folder, or "
                        "unset it for a private cold cache per run") from None
    return folder
