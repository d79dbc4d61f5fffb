"""workbench.workers: batches in worker processes, results in order, errors raised
again in the caller as what they were, and no process left behind."""
from __future__ import annotations

import errno
import json

import pytest

from workbench.workers import WorkerError, WorkerPool


def test_results_come_in_the_batches_order():
    with WorkerPool(2) as pool:
        got = list(pool.map("json:dumps", [{"obj": [i, "x"]} for i in range(7)]))
        workers = list(pool._workers)
    assert [json.loads(g) for g in got] == [[i, "x"] for i in range(7)]
    assert all(w.poll() is not None for w in workers)  # every worker ended with the pool


def test_an_os_error_is_raised_again_as_itself(tmp_path):
    missing = tmp_path / "missing"
    with WorkerPool(2) as pool, pytest.raises(FileNotFoundError) as caught:
        list(pool.map("os:stat", [{"path": str(missing)}]))
    assert caught.value.errno == errno.ENOENT and caught.value.filename == str(missing)


def test_another_error_is_a_worker_error_with_its_traceback():
    with WorkerPool(1) as pool, pytest.raises(WorkerError, match="JSONDecodeError") as caught:
        list(pool.map("json:loads", [{"s": "{torn"}]))
    assert "Traceback" in str(caught.value)


def test_a_worker_that_dies_fails_its_batches_and_nothing_hangs():
    with WorkerPool(2) as pool:
        results = pool.map("os:_exit", [{"status": 3}] * 4)
        with pytest.raises(WorkerError, match="ended"):
            list(results)
        workers = list(pool._workers)
    assert all(w.poll() is not None for w in workers)


def test_what_the_work_prints_does_not_reach_the_results(capfd):
    with WorkerPool(1) as pool:
        assert list(pool.map("builtins:print", [{"sep": "-"}])) == [None]
    assert capfd.readouterr().err == "\n"  # print() wrote a newline, to stderr


def test_numpy_scalars_come_back_as_numbers_and_other_objects_as_an_error():
    with WorkerPool(1) as pool:
        assert list(pool.map("numpy:mean", [{"a": [1.0, 4.0]}])) == [2.5]
        with pytest.raises(WorkerError, match="not JSON"):
            list(pool.map("numpy:zeros", [{"shape": 3}]))
