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
import time
from pathlib import Path

import pytest

from runners.launch import process_internals as P

from locations import REPO

ROOT = REPO


_PROBE = """
import json, sys
sys.path.insert(0, {root!r})
from multiprocessing import spawn
from runners.launch import process_internals as P
data = spawn.get_preparation_data("probe")
left = P._without_main(spawn.get_preparation_data)("probe")
print(json.dumps([sorted(set(P.MAIN_KEYS) & set(data)), sorted(set(P.MAIN_KEYS) & set(left))]))
"""


def test_launch_data_names_the_main_module_under_the_keys_left_out(tmp_path):
    """multiprocessing tells a new process to import the parent's main module through these
    keys: if it named it otherwise, leaving them out would leave it in. Probed from a script run
    as the main module (a pytest-xdist worker's main module has no file, so names none)."""
    script = tmp_path / "launcher.py"
    script.write_text(_PROBE.format(root=str(ROOT)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True, timeout=120)
    named, left = json.loads(out.stdout)
    assert named, "the launch data names the main module under none of " + str(P.MAIN_KEYS)
    assert left == []


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


# A fork server started ahead of its first worker, whose preload takes the seconds the launcher
# is given: the launcher either forks a worker from it (and reports the worker's parent) or exits
# first.
_SLOW_MODULE = """
import os, time
from runners.launch.process_internals import ForkServerWorker

time.sleep(float(os.environ.get("SLOW_S", "0")))  # set for the server only


class Slow(ForkServerWorker):
    preload = ["slow_import"]


def report(fd):
    os.write(fd, str(os.getppid()).encode())
"""
_AHEAD = """
import os, sys
sys.path.insert(0, {root!r})
from runners.launch.process_internals import InheritedFd, server_pid
from slow_import import Slow, report

os.environ["SLOW_S"] = sys.argv[2]  # the server's environment: the launcher's when it starts
Slow.start_server()
print(server_pid(), flush=True)
if sys.argv[1] == "fork":
    read, write = os.pipe()
    worker = Slow(target=report, args=(InheritedFd(write),))
    worker.start()
    os.close(write)
    worker.join(60)
    print(os.read(read, 100).decode(), worker.exitcode, flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is Linux's")
def test_a_server_started_ahead_forks_the_workers_and_dies_with_a_launcher_that_used_it_not(
        tmp_path):
    """start_server returns at once; the first worker comes from that server; a launcher that
    exits before forking any worker leaves no server behind, even one still importing."""
    (tmp_path / "slow_import.py").write_text(_SLOW_MODULE)
    (tmp_path / "ahead.py").write_text(_AHEAD.format(root=str(ROOT)))

    def launch(how: str, slow_s: float) -> list[str]:
        with open(tmp_path / "out", "w") as out:  # not pipes: the server would hold them open
            done = subprocess.run([sys.executable, "ahead.py", how, str(slow_s)], stdout=out,
                                  stderr=subprocess.STDOUT, timeout=120, cwd=tmp_path)
        printed = (tmp_path / "out").read_text()
        assert done.returncode == 0, printed[-2000:]
        return printed.split()

    server, parent, code = launch("fork", 0.5)
    assert (parent, code) == (server, "0")  # forked by the server started ahead
    [server] = launch("exit", 60)  # its import would take a minute
    deadline = time.monotonic() + 10
    while _alive(int(server)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(int(server)), "the unused fork server outlived its launcher"


_RAY_AUTH = """
import json, os, sys
from runners.launch.process_internals import enable_ray_token_auth
seen = []
for mode in sys.argv[1:]:  # each case after the one before, in one process (Ray imports slowly)
    if mode == "-":
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = mode
    seen.append([enable_ray_token_auth(), os.environ.get("RAY_AUTH_MODE")])
print(json.dumps(seen))
"""


def _ray_auth(home: Path, *modes: str) -> list:
    """What enable_ray_token_auth says and leaves in RAY_AUTH_MODE, with each of `modes` set
    before it ("-": unset), in one fresh process whose home is `home`."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    environ.update(HOME=str(home), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _RAY_AUTH, *modes], capture_output=True,
                         text=True, env=environ, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two processes importing Ray
def test_ray_token_auth_is_turned_on_when_a_token_exists_and_no_mode_is_set(tmp_path):
    """RAY_AUTH_MODE set: as it says; without a token: off (the head started none either);
    with ~/.ray/auth_token: on, for this driver and the processes it starts."""
    pytest.importorskip("ray")
    assert _ray_auth(tmp_path, "disabled", "-") == [[False, "disabled"], [False, None]]
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("0123456789abcdef0123456789abcdef")
    assert _ray_auth(tmp_path, "-") == [[True, "token"]]
