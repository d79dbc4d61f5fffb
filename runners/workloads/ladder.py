"""The GPT language-model ladder: one builder for every rung of the catalog (workbench/catalog.py).

Architecture (decoder-only, pre-norm), chosen to stay cheap at 7 k parameters and standard at
100 M: RMSNorm (no mean subtraction, no bias: fewer ops than LayerNorm, as LLaMA) before
attention and before the MLP, and once more before the head; a GELU MLP 4x wide; learned
absolute position embeddings (a table of block_size x width, counted with the embeddings: no
extra ops in attention, unlike RoPE, which matters for the tiny CPU rungs); no biases; the LM
head tied to the token embedding (an embedding-light model: the vocabulary costs V x d
parameters once). Init: GPT-2's N(0, 0.02), residual projections scaled by 1/sqrt(2 layers).

Data: knob `data` = "generated" (default, runners/data/corpus.py), "shakespeare" (characters),
"bytes:PATH" (the bytes of text files, runners/data/text.py) or a folder of token files
(runners/data/tokens.py); the vocabulary follows the data. Evals score knob `eval_windows`
(default EVAL_WINDOWS; a ladder run's plan sizes it, runners/procedures/ladder.py) fixed windows of each
split, the loss exact over them, a few windows per forward pass (EVAL_LOGITS).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

import torch
from torch import nn

from runners.api import Batch, Workload
from runners.data.tokens import TokenSource, token_source
from runners.workloads.common import knob, next_token_loss, next_token_metrics, seeded_model
from runners.workloads.shakespeare import CausalSelfAttention
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["LadderGPT", "LadderWorkload", "counted_counts", "EVAL_WINDOWS", "EVAL_LOGITS"]

EVAL_WINDOWS = 256   # windows per split scored by evaluate(), unless knob eval_windows says
# Logits per eval forward pass at most: windows per pass = this // (block_size x vocabulary),
# between 1 and 64. On a CPU 16 MiB of float32, so that a pass's logits stay near the caches
# (gpt_7k with a 50,257-token vocabulary, benchmarks/eval_share.py: evals 7.2 % of the run at 5
# windows per pass, 5.8 % and 4.3 % at one; docs/ladder.md); on a GPU 1 GiB, for fewer passes.
EVAL_LOGITS = {"cpu": 1 << 22, "cuda": 1 << 28}
INIT_STD = 0.02      # GPT-2's init std


PREFETCH = 4         # batches made ahead by a background thread when training on a GPU


def _prefetched(items: Iterator, depth: int) -> Iterator:
    """`items` in the same order, produced up to `depth` ahead by a daemon thread (the order,
    and so the run, stays deterministic: one producer, one consumer)."""
    import queue
    import threading

    buffer: queue.Queue = queue.Queue(maxsize=depth)

    def produce() -> None:
        try:
            for item in items:
                buffer.put((item, None))
        except Exception as err:  # noqa: BLE001 - handed to the consumer, raised there
            buffer.put((None, err))
        buffer.put((None, StopIteration()))

    threading.Thread(target=produce, daemon=True, name="ladder-data").start()
    while True:
        item, err = buffer.get()
        if isinstance(err, StopIteration):
            return
        if err is not None:
            raise err
        yield item


class _Block(nn.Module):
    """x + attn(norm(x)), then x + mlp(norm(x)); x (batch, time, width)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(width), nn.RMSNorm(width)
        self.attn = CausalSelfAttention(width, heads, bias=False)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width, bias=False), nn.GELU(),
                                 nn.Linear(4 * width, width, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class LadderGPT(nn.Module):
    """ids (batch, time) -> logits (batch, time, vocab)."""

    def __init__(self, vocab: int, block_size: int, n_layer: int, n_head: int,
                 n_embd: int) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(_Block(n_embd, n_head) for _ in range(n_layer))
        self.norm = nn.RMSNorm(n_embd)
        for name, p in self.named_parameters():
            if p.dim() >= 2 and not p.is_meta:  # meta tensors (counting sizes) hold no values
                residual = name.endswith(("attn.proj.weight", "mlp.2.weight"))
                std = INIT_STD / math.sqrt(2 * n_layer) if residual else INIT_STD
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.block_size:
            raise ValueError(f"sequence length {t} exceeds block_size {self.block_size}")
        x = self.tok(ids) + self.pos.weight[:t]
        for block in self.blocks:
            x = block(x)
        return self.norm(x) @ self.tok.weight.T  # the head, tied to the token embedding

    def non_embedding_params(self) -> int:
        return sum(p.numel() for n, p in self.named_parameters() if not n.startswith(("tok.",
                                                                                      "pos.")))


def counted_counts(model: LadderGPT) -> dict[str, int]:
    """Parameters counted from the module (works on the meta device)."""
    return {"non_embedding_params": model.non_embedding_params(),
            "params": sum(p.numel() for p in model.parameters())}


class LadderWorkload(Workload):
    """A ladder rung on its data source; batches are (batch, block_size) int64 ids."""

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None, source: TokenSource | None = None) -> None:
        super().__init__(spec, device)
        m = spec.model
        self.block_size = int(knob(m, "block_size"))
        self.shape = dict(n_layer=int(knob(m, "n_layer")), n_head=int(knob(m, "n_head")),
                          n_embd=int(knob(m, "n_embd")))
        knob(m, "norm", ("rmsnorm",))
        knob(m, "activation", ("gelu",))
        self.source = source or token_source(str(knob(m, "data", default="generated")),
                                             data_dir, vocab_size=m.get("vocab_size"))
        self.vocab_size = self.source.vocab_size
        count = knob(m, "eval_windows", default=EVAL_WINDOWS)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise UserError(f"model knob eval_windows={count!r}: an integer >= 1 (windows per "
                            "split each eval scores)")
        self.windows_per_eval = count
        self._eval = {split: self._tensor(self.source.eval_windows(split, count, self.block_size))
                      for split in ("train", "validation", "test")}
        logits = EVAL_LOGITS.get(self.device.type, EVAL_LOGITS["cpu"])
        self._chunk = max(1, min(64, logits // (self.block_size * self.vocab_size)))

    def _tensor(self, windows) -> tuple[torch.Tensor, torch.Tensor]:
        w = torch.from_numpy(windows).to(self.device)
        return w[:, :-1], w[:, 1:]

    def data_record(self) -> dict:
        """The data's identity (kind, seed or path, sha256, vocabulary) and its distinct
        training tokens, for the run's record."""
        return {**self.source.identity(), "tokens_available": self.source.tokens_available}

    @property
    def tokens_available(self) -> int:
        """Distinct training tokens of the data: a budget above it repeats tokens."""
        return self.source.tokens_available

    @property
    def num_train_examples(self) -> int:
        """Distinct training windows (for the generated corpus: effectively unbounded)."""
        return max(1, self.source.tokens_available - self.block_size)

    def build(self) -> LadderGPT:
        return LadderGPT(self.vocab_size, self.block_size, **self.shape)

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(self.build, seed, self.device)

    def train_batches(self, batch_size: int, seed: int) -> Iterator[Batch]:
        windows = self.source.train_windows(batch_size, self.block_size, seed)
        if self.device.type == "cuda":  # the CPU makes the next batches while the GPU trains
            windows = _prefetched(windows, depth=PREFETCH)
        for w in windows:
            inputs, targets = self._tensor(w)
            yield {"inputs": inputs, "targets": targets}

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return next_token_loss(model, batch)

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split not in self._eval:
            raise UserError(f"unknown split {split!r}: valid are {', '.join(self._eval)}")
        return next_token_metrics(model, *self._eval[split], chunk=self._chunk)
