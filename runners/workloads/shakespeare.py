"""The shakespeare_char workload: a small GPT-style decoder predicting the next character.

Data: tiny-Shakespeare, vocabulary = the sorted set of its characters (65); contiguous split of the
text into the first 90% (train), next 5% (validation) and last 5% (test). Training batches are
random windows of block_size + 1 characters from train, drawn from torch.Generator(seed). Evals use
a fixed set of EVAL_WINDOWS windows per split (positions from a fixed generator), so every run is
scored on the same characters and an eval costs one small forward pass.
Knobs: n_layer, n_head, n_embd, block_size, activation gelu | relu, norm pre_ln | post_ln,
init_scale (multiplies the std of the GPT-2 style normal init).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from runners.api import Batch, Workload
from runners.data.shakespeare import read_tinyshakespeare
from runners.workloads.common import (activation, knob, next_token_loss, next_token_metrics,
                                      seeded_model)
from workbench.errors import UserError
from workbench.spec import WorkloadSpec

__all__ = ["GPT", "CausalSelfAttention", "CharCorpus", "ShakespeareCharWorkload", "EVAL_WINDOWS"]

SPLIT_FRACTIONS = {"train": 0.90, "validation": 0.05, "test": 0.05}
EVAL_WINDOWS = 128     # windows per split scored by evaluate(); 128 x block_size characters
EVAL_SEED = 1729       # fixed: the eval windows are the same in every run
INIT_STD = 0.02        # GPT-2's init std, before init_scale


class CharCorpus:
    """A text as int64 character ids with its vocabulary and contiguous splits."""

    def __init__(self, text: str) -> None:
        self.vocab = sorted(set(text))
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)  # one code point each
        lut = np.zeros(int(codes.max()) + 1, dtype=np.int64)
        lut[[ord(c) for c in self.vocab]] = np.arange(len(self.vocab))
        ids = torch.from_numpy(lut[codes])
        n_train = int(len(ids) * SPLIT_FRACTIONS["train"])
        n_val = int(len(ids) * SPLIT_FRACTIONS["validation"])
        self.splits = {"train": ids[:n_train], "validation": ids[n_train:n_train + n_val],
                       "test": ids[n_train + n_val:]}

    def decode(self, ids: torch.Tensor) -> str:
        return "".join(self.vocab[i] for i in ids.tolist())


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention; x (batch, time, n_embd) -> same shape."""

    def __init__(self, n_embd: int, n_head: int, bias: bool = True) -> None:
        super().__init__()
        if n_embd % n_head:
            raise UserError(f"n_embd ({n_embd}) must be a multiple of n_head ({n_head})")
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.proj = nn.Linear(n_embd, n_embd, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        # (b, t, c) -> (b, heads, t, c / heads), the layout scaled_dot_product_attention expects
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    """Attention + MLP (4x wide), residual; LayerNorm before (pre_ln) or after (post_ln) each."""

    def __init__(self, n_embd: int, n_head: int, act: str, norm: str) -> None:
        super().__init__()
        self.pre_ln = norm == "pre_ln"
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), activation(act),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre_ln:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class GPT(nn.Module):
    """Decoder-only transformer: ids (batch, time) -> logits (batch, time, vocab)."""

    def __init__(self, vocab: int, block_size: int, n_layer: int, n_head: int, n_embd: int,
                 act: str = "gelu", norm: str = "pre_ln", init_scale: float = 1.0) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, act, norm) for _ in range(n_layer))
        # post_ln blocks already end in a LayerNorm; pre_ln needs a final one before the head
        self.ln_f = nn.LayerNorm(n_embd) if norm == "pre_ln" else nn.Identity()
        self.head = nn.Linear(n_embd, vocab)
        self._init_weights(init_scale * INIT_STD, n_layer)

    def _init_weights(self, std: float, n_layer: int) -> None:
        """GPT-2 init: N(0, std) weights, zero biases; residual projections std/sqrt(2 layers)."""
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                residual = name.endswith(("attn.proj.weight", "mlp.2.weight"))
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * n_layer) if residual else std)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.block_size:
            raise ValueError(f"sequence length {t} exceeds block_size {self.block_size}")
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class ShakespeareCharWorkload(Workload):
    """shakespeare_char and its variants; the corpus is held on the device as int64 ids."""

    def __init__(self, spec: WorkloadSpec, device: torch.device,
                 data_dir: str | Path | None = None) -> None:
        super().__init__(spec, device)
        m = spec.model
        self.block_size = int(knob(m, "block_size"))
        self.config = dict(n_layer=int(knob(m, "n_layer")), n_head=int(knob(m, "n_head")),
                           n_embd=int(knob(m, "n_embd")),
                           act=knob(m, "activation", ("gelu", "relu")),
                           norm=knob(m, "norm", ("pre_ln", "post_ln")),
                           init_scale=float(knob(m, "init_scale", default=1.0)))
        corpus = CharCorpus(read_tinyshakespeare(data_dir))
        self.vocab = corpus.vocab
        self.train_ids = corpus.splits["train"].to(device)
        self.offsets = torch.arange(self.block_size + 1, device=device)  # (block_size + 1,)
        gen = torch.Generator().manual_seed(EVAL_SEED)
        self.eval_windows = {split: self._windows(corpus.splits[split], gen) for split in
                             ("train", "validation", "test")}

    def _windows(self, ids: torch.Tensor,
                 gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Fixed (inputs, targets), each (EVAL_WINDOWS, block_size), drawn from `ids`."""
        starts = torch.randint(0, len(ids) - self.block_size, (EVAL_WINDOWS,), generator=gen)
        w = ids[starts[:, None] + torch.arange(self.block_size + 1)].to(self.device)
        return w[:, :-1], w[:, 1:]

    @property
    def num_train_examples(self) -> int:
        """Number of distinct training windows."""
        return len(self.train_ids) - self.block_size

    def _build(self) -> nn.Module:
        return GPT(len(self.vocab), self.block_size, **self.config)

    def init_model(self, seed: int) -> nn.Module:
        return seeded_model(self._build, seed, self.device)

    def train_batches(self, batch_size: int, seed: int) -> Iterator[Batch]:
        gen = torch.Generator(device=self.device).manual_seed(seed)
        high = len(self.train_ids) - self.block_size  # window start in [0, high)
        while True:
            starts = torch.randint(0, high, (batch_size,), generator=gen, device=self.device)
            w = self.train_ids[starts[:, None] + self.offsets]  # (batch, block_size + 1)
            yield {"inputs": w[:, :-1], "targets": w[:, 1:]}

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return next_token_loss(model, batch)

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split not in self.eval_windows:
            raise UserError(f"unknown split {split!r}: valid are {', '.join(self.eval_windows)}")
        return next_token_metrics(model, *self.eval_windows[split])
