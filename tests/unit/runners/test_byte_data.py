"""Bytes of text files as the ladder's data (`--data bytes:PATH`, runners/data/text.py): which
files are read and in what order, the per-file split, the record, hostile paths, and too little
data refused at plan time."""
from __future__ import annotations

import hashlib
import os
import re
import warnings

import numpy as np
import pytest

from runners.cli import main
from runners.data.shakespeare import TINYSHAKESPEARE_BYTES, TINYSHAKESPEARE_SHA256
from runners.data.text import read_text_bytes
from runners.data.tokens import ByteSource, token_source


def test_tiny_shakespeare_as_bytes_splits_90_5_5_and_records_its_sha256(shared_data):
    path = shared_data / "tinyshakespeare" / "input.txt"
    source = token_source(f"bytes:{path}")
    assert isinstance(source, ByteSource) and source.vocab_size == 256
    sizes = {split: len(ids) for split, ids in source.splits.items()}
    assert sizes == {"train": 1_003_854, "validation": 55_770, "test": 55_770}  # floor cuts
    assert source.tokens_available == 1_003_854 == int(TINYSHAKESPEARE_BYTES * 0.9)
    record = source.identity()
    assert record["kind"] == "bytes" and record["sha256"] == TINYSHAKESPEARE_SHA256  # sha256sum
    assert record["files"] == 1 and record["bytes"] == TINYSHAKESPEARE_BYTES
    raw = path.read_bytes()
    val = source.eval_windows("validation", 4, 32)
    assert val.shape == (4, 33) and val.dtype == np.int64
    held = raw[1_003_854:1_003_854 + 55_770]
    assert all(bytes(row.astype(np.uint8)) in held for row in val)  # contiguous, from its split
    folder = token_source(f"bytes:{path.parent}").identity()  # the folder: names hashed too
    assert folder["files"] == 1 and folder["sha256"] != record["sha256"]


def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def test_a_folder_reads_its_text_files_recursively_in_path_order(tmp_path):
    b = _write(tmp_path / "b.txt", b"b" * 40)
    a = _write(tmp_path / "sub" / "a.MD", "é".encode() * 30)  # suffix case ignored
    _write(tmp_path / "c.bin", b"not read: no text suffix")
    _write(tmp_path / "NOTES", b"not read either")
    _write(tmp_path / ".git" / "x.txt", b"hidden folders are skipped")
    _write(tmp_path / ".hidden.txt", b"and hidden files")
    text = read_text_bytes(tmp_path)
    assert text.files == 2 and text.bytes == 100
    # "b.txt" < "sub/a.MD": each file's first 90 % train, next 5 % validation, last 5 % test
    assert bytes(text.splits["train"]) == b[:36] + a[:54]
    assert bytes(text.splits["validation"]) == b[36:38] + a[54:57]
    assert bytes(text.splits["test"]) == b[38:] + a[57:]
    digest = hashlib.sha256()
    for rel, data in (("b.txt", b), ("sub/a.MD", a)):
        digest.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    assert text.sha256 == digest.hexdigest()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_hostile_entries_of_a_folder_are_skipped_with_one_warning(tmp_path):
    folder, outside = tmp_path / "corpus", tmp_path / "secret.txt"
    _write(outside, b"outside the folder")
    good = _write(folder / "good.txt", b"hello world\n" * 10)
    _write(folder / "image.txt", b"GIF89a\0\0binary")
    _write(folder / "line\nbreak.txt", b"\0")  # a hostile name stays on the one line
    os.mkfifo(folder / "pipe.txt")  # reading it would wait for a writer forever
    (folder / "escape.txt").symlink_to(outside)
    (folder / "inside.txt").symlink_to(folder / "good.txt")  # a link inside the folder is read
    (folder / "loop").symlink_to(folder, target_is_directory=True)  # links to folders: not walked
    (folder / "knot.txt").symlink_to(folder / "knot.txt")  # a link to itself
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = read_text_bytes(folder)
    assert text.files == 2 and text.bytes == 2 * len(good)
    [warning] = caught
    message = str(warning.message)
    assert "skipped 5 entries" in message and "\n" not in message
    assert "'escape.txt' (a link out of the folder)" in message
    assert "'image.txt' (binary: a NUL byte)" in message and "and 2 more" in message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_bad_path_is_a_one_line_error(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    _write(tmp_path / "blob.txt", b"\x89PNG\0\0")
    _write(tmp_path / "empty" / "only.bin", b"x")
    cases = {f"bytes:{tmp_path / 'missing'}": "does not exist",
             f"bytes:{tmp_path / 'fifo'}": "not a regular file (a FIFO)",
             f"bytes:{tmp_path / 'blob.txt'}": "is binary",
             f"bytes:{tmp_path / 'empty'}": "no text file in the folder",
             "bytes:": "bad bytes data path ''"}
    for data, says in cases.items():
        with pytest.raises(ValueError, match=re.escape(says)) as err:
            token_source(data)
        assert "\n" not in str(err.value)
    _write(tmp_path / "ok.txt", b"text")
    with pytest.raises(ValueError, match="its vocabulary is the 256 byte values"):
        token_source(f"bytes:{tmp_path / 'ok.txt'}", vocab_size=300)


def test_too_little_text_for_one_window_is_refused_at_plan_time(tmp_path, capsys):
    small = tmp_path / "small.txt"
    _write(small, b"a few words " * 100)  # 1,200 bytes: 60 for validation, gpt_7k needs 66
    argv = ["ladder", "--sizes", "gpt_7k", "--algorithms", "adamw", "--budgets", "1",
            "--data", f"bytes:{small}", "--store", str(tmp_path / "s")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: data bytes:") and len(err.splitlines()) == 1, err
    assert "the validation tokens (60) are fewer than one window" in err and "gpt_7k" in err
    assert not (tmp_path / "s").exists()
    _write(small, b"a few words " * 200)  # 120 validation bytes: enough
    assert main(argv + ["--dry-run"]) == 0
    assert "evals" in capsys.readouterr().out


def test_a_rung_trains_on_bytes_and_its_run_records_the_data(tmp_path, shared_data):
    from runners.procedures.ladder import catalog_rungs, final_configs
    from runners.run.loop import run
    from workbench import query
    from workbench.spec import LadderSpec
    from workbench.store import open_store

    data = f"bytes:{shared_data / 'tinyshakespeare' / 'input.txt'}"
    spec = LadderSpec(sizes=("gpt_7k",), algorithms=("adamw",), budgets=(0.05,), data=data)
    [config] = final_configs(spec, catalog_rungs(data))
    store = open_store(tmp_path / "s", create=True)
    run_id = run(config, store)
    doc = store.run_doc(run_id)
    assert doc["status"] == "complete" and doc["steps"] == config.max_steps == 7
    assert doc["data"]["kind"] == "bytes" and doc["data"]["sha256"] == TINYSHAKESPEARE_SHA256
    assert doc["data"]["tokens_available"] == 1_003_854 and doc["data"]["vocab_size"] == 256
    assert doc["workload_spec"]["model"]["eval_windows"] == config.ladder["eval_windows"]
    evals = query.evals_frame(store, [run_id])
    assert len(evals) == -(-7 // config.eval_every)  # the planned evals, the last at step 7
    assert 0 < evals["validation/loss"].iloc[-1] < np.log(256) + 0.5
