"""multiprocessing's and Ray's insides behind runners/launch/process_internals.py, each exercised
against the installed version: a fork-server worker that never runs the launcher's unguarded
script again, a file descriptor that reaches it, and Ray's token authentication turned on (or
not) in a driver as a new head does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from multiprocessing import spawn
from pathlib import Path

import pytest

from runners.launch.study import process_internals as P

ROOT = Path(__file__).resolve().parents[1]


def test_launch_data_names_the_main_module_under_the_keys_left_out():
    """multiprocessing tells a new process to import the parent's main module through these
    keys: if it named it otherwise, leaving them out would leave it in."""
    data = spawn.get_preparation_data("probe")
    assert set(P.MAIN_KEYS) & set(data), sorted(data)
    assert not set(P.MAIN_KEYS) & set(P._without_main(spawn.get_preparation_data)("probe"))


# An unguarded launcher script: its top level counts its runs in a file and starts a worker,
# which writes through a descriptor it inherited (its class and target are importable: a
# worker has no launcher's main module). Only the launcher may run the top level.
_SCRIPT = """
import os, sys
sys.path.insert(0, {root!r})
from runners.launch.process_internals import ForkServerWorker, InheritedFd

with open({count!r}, "a") as f:
    f.write("ran\\n")


read, write = os.pipe()
worker = ForkServerWorker(target=os.write, args=(InheritedFd(write), b"from the worker"))
worker.start()
os.close(write)
worker.join(60)
print(os.read(read, 100).decode(), worker.exitcode)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is Linux's")
def test_a_forked_worker_gets_its_descriptor_and_never_runs_the_launchers_script(tmp_path):
    count = tmp_path / "count"
    script = tmp_path / "launcher.py"
    script.write_text(_SCRIPT.format(root=str(ROOT), count=str(count)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["from", "the", "worker", "0"], out.stdout
    assert count.read_text() == "ran\n"  # once: the worker did not import the script again


_RAY_AUTH = """
import json, os
from runners.launch.process_internals import enable_ray_token_auth
print(json.dumps([enable_ray_token_auth(), os.environ.get("RAY_AUTH_MODE")]))
"""


def _ray_auth(home: Path, **env: str) -> list:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    environ.update(HOME=str(home), PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", _RAY_AUTH], capture_output=True, text=True,
                         env=environ, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ray_token_auth_is_turned_on_when_a_token_exists_and_no_mode_is_set(tmp_path):
    """Without a token: off (the head started none either); with ~/.ray/auth_token: on, for
    this driver and the processes it starts; RAY_AUTH_MODE set: as it says."""
    pytest.importorskip("ray")
    assert _ray_auth(tmp_path) == [False, None]
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("0123456789abcdef0123456789abcdef")
    assert _ray_auth(tmp_path) == [True, "token"]
    assert _ray_auth(tmp_path, RAY_AUTH_MODE="disabled") == [False, "disabled"]
