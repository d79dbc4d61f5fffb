"""The ladder's data: the generated corpus (reproducible, never repeating), tiny-Shakespeare
characters, and token files in nanoGPT's and llm.c's formats (read, and rejected in one line)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from runners.data.corpus import GeneratedCorpus
from runners.data.tokens import (HEADER_INTS, SHARD_MAGIC, CharSource, GeneratedSource,
                                 TokenFileSource, token_source)


def test_the_generated_corpus_is_reproducible_from_its_seed_and_random_access():
    a, b = GeneratedCorpus(seed=5), GeneratedCorpus(seed=5)
    docs = a.documents("train", 0, 6, 80, stream=2)
    assert np.array_equal(docs, b.documents("train", 0, 6, 80, stream=2))
    assert np.array_equal(docs[3:5], b.documents("train", 3, 2, 80, stream=2))  # by position
    assert docs.dtype == np.int64 and 0 <= docs.min() and docs.max() < a.vocab_size
    assert not np.array_equal(docs, GeneratedCorpus(seed=6).documents("train", 0, 6, 80, 2))
    assert not np.array_equal(docs, a.documents("validation", 0, 6, 80, stream=2))
    assert a.checksum() == b.checksum() != GeneratedCorpus(seed=6).checksum()


def test_generated_training_windows_are_fresh_documents_per_seed():
    source = GeneratedSource(GeneratedCorpus())
    stream = source.train_windows(batch_size=4, block_size=16, seed=1)
    first, second = next(stream), next(stream)
    assert first.shape == (4, 17)
    corpus = source.corpus
    assert np.array_equal(np.concatenate([first, second]),
                          corpus.documents("train", 0, 8, 17, stream=1))  # documents 0..7
    assert not np.array_equal(first, next(source.train_windows(4, 16, seed=2)))
    assert source.tokens_available >= 10 ** 18  # no budget in reach repeats a token


def test_the_entropy_rate_lies_between_its_bounds():
    est = GeneratedCorpus().entropy_rate(documents=8, length=512, burn_in=128)
    assert est["known_topic"] < est["rate"] < est["unigram"] <= np.log(64) + 1e-9


def test_shakespeare_characters_split_apart():
    text = "".join(chr(97 + (i * 7) % 26) for i in range(2000))
    source = CharSource(text)
    assert source.vocab_size == 26 and source.tokens_available == 1800
    val = source.eval_windows("validation", 3, 8)
    assert val.shape == (3, 9) and source.identity()["kind"] == "shakespeare"


def _write_raw(path, tokens):
    np.asarray(tokens, dtype="<u2").tofile(path)


def _write_shard(path, tokens, magic=SHARD_MAGIC, version=1, count=None):
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:3] = magic, version, len(tokens) if count is None else count
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype="<u2").tobytes())


@pytest.mark.parametrize("layout", ["nanogpt", "llmc"])
def test_token_files_of_both_formats_give_windows_of_their_split(tmp_path, layout):
    train, val = np.arange(1000) % 97, 500 + np.arange(300) % 50
    if layout == "nanogpt":
        _write_raw(tmp_path / "train.bin", train)
        _write_raw(tmp_path / "val.bin", val)
    else:  # two training shards, as llm.c and modded-nanogpt write them
        _write_shard(tmp_path / "fineweb_train_000001.bin", train[:600])
        _write_shard(tmp_path / "fineweb_train_000002.bin", train[600:])
        _write_shard(tmp_path / "fineweb_val_000000.bin", val)
    source = TokenFileSource(tmp_path, vocab_size=600)
    assert source.tokens_available == 1000 and source.vocab_size == 600
    batch = next(source.train_windows(batch_size=5, block_size=10, seed=0))
    assert batch.shape == (5, 11) and batch.max() < 97  # training tokens only
    for row in batch:  # each window is a contiguous run of the training tokens
        assert any(np.array_equal(row, train[s:s + 11]) for s in range(len(train) - 10))
    assert (source.eval_windows("validation", 4, 10) >= 500).all()  # validation kept apart
    assert source.identity()["sha256"] == TokenFileSource(tmp_path, 600).identity()["sha256"]


@pytest.mark.parametrize("damage, message", [
    (dict(magic=12345), "magic 12345, not llm.c's 20240520"),
    (dict(version=2), "version 2; only version 1"),
    (dict(count=999), "the header says 999 tokens"),
])
def test_a_malformed_shard_is_a_one_line_error(tmp_path, damage, message):
    _write_shard(tmp_path / "x_train_000.bin", np.arange(100), **damage)
    _write_shard(tmp_path / "x_val_000.bin", np.arange(100))
    with pytest.raises(ValueError, match=message) as err:
        TokenFileSource(tmp_path)
    assert "\n" not in str(err.value)


def test_a_token_outside_the_vocabulary_or_an_odd_size_is_a_one_line_error(tmp_path):
    _write_raw(tmp_path / "train.bin", [1, 2, 700])
    _write_raw(tmp_path / "val.bin", [1, 2, 3])
    with pytest.raises(ValueError, match="token id 700 is outside the vocabulary of 600"):
        TokenFileSource(tmp_path, vocab_size=600)
    (tmp_path / "train.bin").write_bytes(b"\x01\x00\x02")
    with pytest.raises(ValueError, match="3 bytes, not a whole number"):
        TokenFileSource(tmp_path, vocab_size=600)
    with pytest.raises(ValueError, match="not a folder"):
        token_source(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="bad vocab_size 'big'"):
        token_source(str(tmp_path), vocab_size="big")


def test_the_workload_takes_its_data_as_a_knob_and_its_vocabulary_from_it(tmp_path):
    import torch

    from runners.workloads import build_workload
    from workbench.catalog import get_workload

    _write_raw(tmp_path / "train.bin", np.arange(5000) % 300)
    _write_raw(tmp_path / "val.bin", np.arange(2000) % 300)
    spec = get_workload("gpt_7k")
    spec = dataclasses.replace(spec, model={**spec.model, "data": str(tmp_path),
                                            "vocab_size": 300})
    workload = build_workload(spec)
    model = workload.init_model(0)
    assert model.tok.weight.shape == (300, 24) and workload.tokens_available == 5000
    record = workload.data_record()
    assert record["kind"] == "token_files" and len(record["sha256"]) == 64
    loss = workload.loss(model, next(workload.train_batches(2, seed=0)))
    assert torch.isfinite(loss) and abs(loss.item() - np.log(300)) < 0.5
    assert build_workload(get_workload("gpt_7k")).data_record()["kind"] == "generated"


def test_prefetched_batches_keep_their_order():
    from runners.workloads.ladder import _prefetched

    assert list(_prefetched(iter(range(100)), depth=3)) == list(range(100))

    def broken():
        yield 1
        raise ValueError("bad token file")
    stream = _prefetched(broken(), depth=3)
    assert next(stream) == 1
    with pytest.raises(ValueError, match="bad token file"):
        next(stream)
