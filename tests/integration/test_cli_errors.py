"""Errors that say whose fault they are: bad input (exit 2, one line, nothing written), the
environment's (exit 1, naming the path), or ours (exit 1, `internal error`, the traceback in a
file)."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

from runners.cli import analysis, main
from runners.cli.common import begin_writing


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("content", ["[]", "null", "{bad", "\xff"])
def test_a_store_document_that_is_not_one_is_one_line(tmp_path, capsys, content):
    (tmp_path / "pacebench-store.json").write_bytes(content.encode("latin-1"))
    assert main(["score", "--store", str(tmp_path)]) == 2
    line = _one_line(capsys)
    assert "pacebench-store.json" in line and ("not a store's document" in line
                                               or "cannot be read as a store's document" in line)


@pytest.mark.parametrize("argv, says", [
    (["serve", "--store", "MISSING"], "is not a Pacebench store"),
    (["serve", "--address", "::1"], "an IPv6 address"),
    (["serve", "--address", "no.such.host.invalid"], "cannot be resolved"),
    (["serve", "--port", "99999"], "--port 99999: must be a port number in 1..65535"),
])
def test_serve_refuses_what_it_cannot_serve_before_starting(tmp_path, capsys, fake_store, argv,
                                                             says):
    argv = [str(tmp_path / "missing") if a == "MISSING" else a for a in argv]
    if "--store" not in argv:
        argv += ["--store", str(fake_store)]
    assert main(argv) == 2
    assert says in _one_line(capsys)


def test_an_unexpected_exception_is_an_internal_error_with_its_traceback_in_a_file(
        monkeypatch, capsys, fake_store):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug of ours")

    monkeypatch.setattr(analysis, "_results", broken)
    assert main(["score", "--store", str(fake_store)]) == 1
    line = _one_line(capsys)
    assert line.startswith("internal error: ZeroDivisionError: a bug of ours; details in ")
    details = Path(line.rpartition("details in ")[2]).read_text()
    assert "Traceback" in details and "a bug of ours" in details


def test_a_full_disk_names_the_path_and_blames_the_machine(monkeypatch, capsys, fake_store):
    def full(*args, **kwargs):
        begin_writing()
        raise OSError(errno.ENOSPC, "No space left on device", "/data/store/runs/x/evals.jsonl")

    monkeypatch.setattr(analysis, "_results", full)
    assert main(["score", "--store", str(fake_store)]) == 1
    line = _one_line(capsys)
    assert line.startswith("error: no space left on the device of /data/store/runs/x/evals.jsonl")
    assert "then run the command again" in line


def test_a_command_ended_by_sys_exit_says_so_and_does_not_exit_0(
        monkeypatch, capsys, fake_store):
    def exits(*args, **kwargs):
        raise SystemExit(0)  # e.g. a plug-in's top level calling sys.exit(0)

    monkeypatch.setattr(analysis, "_results", exits)
    assert main(["score", "--store", str(fake_store)]) == 2  # not 0: nothing was done
    assert "ended by sys.exit(0)" in _one_line(capsys)


@pytest.mark.parametrize("error, says", [
    (OverflowError("int too large to convert to float"), "a number too large to compute with"),
    (RecursionError("maximum recursion depth exceeded"), "data nested too deeply to read"),
])
def test_overflow_and_recursion_before_writing_are_one_line_of_bad_input(
        monkeypatch, capsys, fake_store, error, says):
    """Before anything is written, only the input holds such numbers or nesting (e.g. a flag
    of 1e308): one `error:` line, exit 2, not an internal error."""
    def raises(*args, **kwargs):
        raise error

    monkeypatch.setattr(analysis, "_results", raises)
    assert main(["score", "--store", str(fake_store)]) == 2
    line = _one_line(capsys)
    assert line.startswith("error: the input holds ") and says in line
    assert "nothing was written" in line


def test_a_missing_dataset_is_one_line_saying_where_to_put_it(tmp_path, capsys, monkeypatch):
    """tiny-Shakespeare neither in the data folder nor downloadable: one `error:` line with the
    path and what to do, no traceback, nothing written."""
    import urllib.error

    import runners.data.shakespeare as shakespeare
    from runners.cli import main

    def offline(*args, **kwargs):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(shakespeare, "download", offline)
    monkeypatch.setenv("PACEBENCH_DATA", str(tmp_path / "data"))
    code = main(["ladder", "--sizes", "gpt_7k", "--algorithms", "adamw", "--budgets", "1",
                 "--seeds", "1", "--data", "shakespeare", "--store", str(tmp_path / "s"),
                 "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: ")
    assert "tinyshakespeare/input.txt" in err and "PACEBENCH_DATA" in err
    assert "Traceback" not in err and not (tmp_path / "s").exists()


def test_an_internal_key_error_is_an_internal_error_not_bad_input(monkeypatch, capsys,
                                                                   fake_store):
    """A KeyError (or ValueError) of ours is a bug: exit 1, `internal error`, the traceback in
    a file that exists and holds it; never `error:` with exit 2 as if the input were bad."""
    def broken(*args, **kwargs):
        return {}["a missing key of ours"]

    monkeypatch.setattr(analysis, "_results", broken)
    assert main(["score", "--store", str(fake_store)]) == 1
    line = _one_line(capsys)
    assert line.startswith("internal error: KeyError: 'a missing key of ours'; details in ")
    details = Path(line.rpartition("details in ")[2])
    assert details.is_file()
    text = details.read_text()
    assert "Traceback" in text and "KeyError: 'a missing key of ours'" in text
    assert "in broken" in text  # the frame that raised it


@pytest.mark.parametrize("error", [ValueError("an internal check of ours"),
                                   LookupError("an internal lookup of ours")])
def test_a_plain_value_or_lookup_error_is_internal_too(monkeypatch, capsys, fake_store, error):
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(analysis, "_results", broken)
    assert main(["score", "--store", str(fake_store)]) == 1
    assert _one_line(capsys).startswith(f"internal error: {type(error).__name__}: ")


@pytest.mark.parametrize("begun", [False, True])
def test_a_user_error_is_one_line_exit_2_before_and_after_writing(monkeypatch, capsys,
                                                                  fake_store, begun):
    """A UserError says what was wrong in one `error:` line, exit 2; also when raised by a
    check that only the work could make (after writing began), as a ValueError was before."""
    from workbench.errors import UserError

    def refuses(*args, **kwargs):
        if begun:
            begin_writing()
        raise UserError("--thing 3: must be 1 or 2")

    monkeypatch.setattr(analysis, "_results", refuses)
    assert main(["score", "--store", str(fake_store)]) == 2
    assert _one_line(capsys) == "error: --thing 3: must be 1 or 2"


def test_an_unknown_name_is_a_key_error_too_and_reads_as_its_message(capsys, tmp_path):
    """UnknownNameError: bad input (one line, exit 2) whose text is the message (not KeyError's
    quoted repr), and still caught by `except KeyError`."""
    from workbench.errors import UnknownNameError, UserError

    err = UnknownNameError("unknown workload 'x': known are a, b")
    assert isinstance(err, KeyError) and isinstance(err, UserError)
    assert str(err) == "unknown workload 'x': known are a, b"
    from runners.algorithms import get_algorithm
    from workbench.catalog import get_workload
    for unknown in (lambda: get_workload("no_such_workload"),
                    lambda: get_algorithm("no_such_algorithm", {})):
        with pytest.raises(UnknownNameError, match="known are"):
            unknown()
    assert main(["run", "--workload", "no_such_workload", "--algorithm", "adamw",
                 "--store", str(tmp_path / "s")]) == 2
    line = _one_line(capsys)
    assert line.startswith("error: unknown workload 'no_such_workload'")
    assert not (tmp_path / "s").exists()


def test_pacebench_debug_reraises_an_internal_error_and_a_user_error(monkeypatch, fake_store):
    from workbench.errors import UserError

    monkeypatch.setenv("PACEBENCH_DEBUG", "1")
    for error in (KeyError("ours"), UserError("yours")):
        def raises(*args, **kwargs):
            raise error

        monkeypatch.setattr(analysis, "_results", raises)
        with pytest.raises(type(error)):
            main(["score", "--store", str(fake_store)])


def test_export_or_report_to_a_file_or_under_one_is_bad_input_before_writing(
        tmp_path, capsys, fake_store):
    (tmp_path / "afile").write_text("x")
    for out in ("afile", "afile/sub"):
        assert main(["export", "--store", str(fake_store), "--out", str(tmp_path / out)]) == 2
        line = _one_line(capsys)
        assert line.startswith(f"error: --out {tmp_path / out}: {tmp_path / 'afile'} is a file")
    for flag, path in (("--out", "afile/r.html"), ("--figures", "afile")):
        argv = ["report", "--store", str(fake_store), "--out", str(tmp_path / "r.html"),
                flag, str(tmp_path / path)]  # the last --out is the one taken
        assert main(argv) == 2
        assert "is a file; give a folder" in _one_line(capsys)
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("content", [b"\xff\xfe{", b"\x80 not utf-8"])
def test_a_search_space_file_that_is_not_text_is_a_user_error(tmp_path, content):
    """A binary search-space file is bad input (one line naming it), not an internal
    UnicodeDecodeError."""
    from runners.tuning import SearchSpace
    from workbench.errors import UserError
    from workbench.hparams import search_space_scalings

    path = tmp_path / "adamw.json"
    path.write_bytes(content)
    with pytest.raises(UserError, match="adamw.json: not valid JSON"):
        SearchSpace.from_json(path)
    with pytest.raises(UserError, match="adamw.json: not valid JSON"):
        search_space_scalings("adamw", tmp_path)


_EXIT_PROBE = """
import atexit, pathlib, sys
atexit.register(pathlib.Path(sys.argv[1]).write_text, "exit handlers ran")
sys.argv = ["pacebench", "score", "--store", sys.argv[2]]
from runners.cli import entry
entry()
"""


@pytest.mark.parametrize("store, code", [("fake", 0), ("missing", 2)])
def test_the_command_exits_with_its_status_after_running_the_exit_handlers(
        tmp_path, fake_store, store, code):
    """entry() skips the interpreter's teardown (os._exit), not the exit handlers: a handler
    registered before the command runs, and the status is the command's."""
    import subprocess
    import sys

    from locations import REPO

    mark = tmp_path / "mark"
    path = fake_store if store == "fake" else tmp_path / "none"
    out = subprocess.run([sys.executable, "-c", _EXIT_PROBE, str(mark), str(path)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == code, out.stderr[-2000:]
    assert mark.read_text() == "exit handlers ran"
    assert ("score" in out.stdout) if code == 0 else ("error" in out.stderr)
