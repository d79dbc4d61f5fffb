"""The generated corpus: a seeded, hierarchical Markov language with long-range topics.

Every token is computed from (corpus seed, split, stream, document index, position), so a
training stream never repeats a token and any document can be regenerated on its own. The
procedure, for a vocabulary of V tokens and K topics (defaults V = 64, K = 16):

1. The language: tables drawn once from the corpus seed (numpy's default_rng):
   - a topic unigram: for each topic z, a random permutation of the vocabulary ranked by a Zipf
     law (p(rank r) ~ (r + 1)^-1), so each topic has its own frequent words;
   - a bigram table: for each previous token a, M2 = 16 random candidate next tokens;
   - a trigram table: for each (b, a), M3 = 8 candidates;
   - a topic 4-gram table: for each (z, c, b, a), M4 = 4 candidates;
   candidates of each table are ranked by a Zipf law over their positions (repeats add up).
2. A document: a hidden topic z starts uniform and, before each token, switches to a uniformly
   drawn topic with probability P_SWITCH = 1/128 (so a topic lasts ~128 tokens: long-range
   structure a model must infer from its context). Token t is drawn from the mixture
   0.30 topic unigram(z) + 0.30 bigram(a) + 0.20 trigram(b, a) + 0.20 topic 4-gram(z, c, b, a),
   where a, b, c are the previous three tokens (token 0 before the document starts).
   Each position uses two uniforms of the document's own stream, default_rng([seed, split,
   stream, document]): the first decides the switch (u < P_SWITCH) and the new topic
   (floor(u / P_SWITCH * K)), the second picks the component and the candidate's rank by
   inverse CDF. Splits: 0 train (stream = the run's seed), 1 validation, 2 test (stream 0).

Each level of the mixture needs more capacity to learn than the one before (V, V^2, V^3 and
K V^3 contexts), which is what lets larger models keep improving. The entropy rate (the loss of
the best possible predictor, which knows the tables and infers the topic from the past by the
forward algorithm) is estimated by `entropy_rate`; docs/ladder.md gives its value and command.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from workbench.errors import UserError

__all__ = ["GeneratedCorpus", "SPLITS", "P_SWITCH", "MIXTURE"]

SPLITS = {"train": 0, "validation": 1, "test": 2}
P_SWITCH = 1 / 128                 # probability that the topic changes before a token
MIXTURE = (0.30, 0.30, 0.20, 0.20)  # weights: topic unigram, bigram, trigram, topic 4-gram
CANDIDATES = (None, 16, 8, 4)       # candidates per context (None: the whole vocabulary)
ZIPF_S = 1.0                        # Zipf exponent of every ranking


def _zipf(n: int) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** ZIPF_S
    return p / p.sum()


@dataclass(frozen=True)
class GeneratedCorpus:
    """The language of corpus seed `seed`; its documents come from `documents`."""

    seed: int = 0
    vocab_size: int = 64
    topics: int = 16

    def __post_init__(self) -> None:
        if not 2 <= self.vocab_size <= 1024:
            raise UserError(f"vocab_size must be in 2..1024, got {self.vocab_size}")
        if not 1 <= self.topics <= 256:
            raise UserError(f"topics must be in 1..256, got {self.topics}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise UserError(f"corpus seed must be an integer >= 0, got {self.seed!r}")

    @cached_property
    def tables(self) -> dict[str, np.ndarray]:
        """The language's tables (int16 token ids), drawn from the corpus seed."""
        rng = np.random.default_rng([self.seed, 3, 0, 0])
        v, k = self.vocab_size, self.topics
        return {
            "unigram": np.stack([rng.permutation(v) for _ in range(k)]).astype(np.int16),
            "bigram": rng.integers(0, v, (v, CANDIDATES[1]), dtype=np.int16),
            "trigram": rng.integers(0, v, (v, v, CANDIDATES[2]), dtype=np.int16),
            "fourgram": rng.integers(0, v, (k, v, v, v, CANDIDATES[3]), dtype=np.int16),
        }

    @cached_property
    def _cdfs(self) -> tuple[np.ndarray, np.ndarray]:
        """(cumulative mixture weights, the cumulative Zipf law of each component)."""
        sizes = [self.vocab_size, *CANDIDATES[1:]]
        return np.cumsum(MIXTURE), [np.cumsum(_zipf(n)) for n in sizes]

    def identity(self) -> dict:
        """What a run's record says about its data."""
        return {"kind": "generated", "seed": self.seed, "vocab_size": self.vocab_size,
                "topics": self.topics, "sha256": self.checksum()}

    def checksum(self) -> str:
        """sha256 of the first 4,096 validation tokens: changes if the procedure changes."""
        return hashlib.sha256(self.documents("validation", 0, 4, 1024).tobytes()).hexdigest()

    def documents(self, split: str, first: int, count: int, length: int,
                  stream: int = 0) -> np.ndarray:
        """Documents first .. first + count - 1 of (`split`, `stream`): (count, length) int64."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}: valid are {', '.join(SPLITS)}")
        if first < 0 or count < 0 or length < 1 or stream < 0:
            raise ValueError("documents need first >= 0, count >= 0, length >= 1, stream >= 0")
        u = np.stack([np.random.default_rng([self.seed, SPLITS[split], stream, first + i])
                      .random((length, 2)) for i in range(count)]) if count else \
            np.zeros((0, length, 2))
        return self._generate(u)

    def _hidden(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """From uniforms u (n, length, 2): the topic, the mixture component and the candidate's
        rank of every position, each (n, length); none depends on earlier tokens."""
        n, length, _ = u.shape
        k, s = self.topics, u[:, :, 0]
        # a topic is set at position 0 (floor(u K)) and wherever u < P_SWITCH (floor(u / P K))
        event = s < P_SWITCH
        event[:, 0] = True
        value = np.where(s < P_SWITCH, s / P_SWITCH * k, s * k).astype(np.int64)
        value[:, 0] = (s[:, 0] * k).astype(np.int64)
        last = np.maximum.accumulate(np.where(event, np.arange(length), 0), axis=1)
        z = np.minimum(np.take_along_axis(value, last, axis=1), k - 1)
        mix, zipfs = self._cdfs
        r = u[:, :, 1]
        comp = np.minimum(np.searchsorted(mix, r, side="right"), 3)
        low = np.where(comp > 0, mix[np.maximum(comp - 1, 0)], 0.0)
        within = (r - low) / np.asarray(MIXTURE)[comp]
        rank = np.zeros((n, length), dtype=np.int64)
        for ci, cdf in enumerate(zipfs):
            m = comp == ci
            rank[m] = np.minimum(np.searchsorted(cdf, within[m], side="right"), len(cdf) - 1)
        return z, comp, rank

    def _generate(self, u: np.ndarray) -> np.ndarray:
        """Tokens (n, length) from uniforms u (n, length, 2): the hidden choices at once, then
        the n-gram lookups one position at a time (each depends on the tokens before)."""
        n, length, _ = u.shape
        t = self.tables
        z, comp, rank = self._hidden(u)
        out = t["unigram"][z, np.where(comp == 0, rank, 0)].astype(np.int64)  # component 0
        # ranks beyond a table's candidates only occur where another component was chosen
        r1, r2, r3 = (np.minimum(rank, m - 1) for m in CANDIDATES[1:])
        a = np.zeros(n, dtype=np.int64)
        b, c = a.copy(), a.copy()
        for pos in range(length):
            cp = comp[:, pos]
            tok = np.where(cp == 1, t["bigram"][a, r1[:, pos]],
                           np.where(cp == 2, t["trigram"][b, a, r2[:, pos]],
                                    t["fourgram"][z[:, pos], c, b, a, r3[:, pos]]))
            tok = np.where(cp == 0, out[:, pos], tok)
            out[:, pos] = tok
            c, b, a = b, a, tok
        return out

    # --- the entropy rate: the loss of the Bayes-optimal predictor -------------------------
    def _component_probs(self, z: np.ndarray, c, b, a, x) -> np.ndarray:
        """p(x | component, topic) for every topic: (4, n, K), with context (c, b, a) (n,)."""
        t, (v, k) = self.tables, (self.vocab_size, self.topics)
        zu = _zipf(v)
        rank = np.argsort(t["unigram"], axis=1)  # (K, V): rank of each token in each topic
        out = np.empty((4, len(x), k))
        out[0] = zu[rank[:, x]].T
        out[1] = ((t["bigram"][a] == x[:, None]) * _zipf(CANDIDATES[1])).sum(1)[:, None]
        out[2] = ((t["trigram"][b, a] == x[:, None]) * _zipf(CANDIDATES[2])).sum(1)[:, None]
        cand = t["fourgram"][:, c, b, a]  # (K, n, M4)
        out[3] = ((cand == x[None, :, None]) * _zipf(CANDIDATES[3])).sum(2).T
        return out

    def entropy_rate(self, documents: int = 32, length: int = 4096,
                     burn_in: int = 512) -> dict[str, float]:
        """Mean loss (nats/token) of the optimal predictor on test documents, positions
        burn_in..length-1: `rate` (topic inferred by the forward algorithm, an estimate of the
        entropy rate from above), `known_topic` (the topic given: a lower bound), `unigram`
        (the best context-free predictor), each with its standard error over documents."""
        k = self.topics
        x = self.documents("test", 0, documents, length)
        w = np.asarray(MIXTURE)[:, None, None]
        post = np.full((documents, k), 1.0 / k)
        z_true = self._topics("test", 0, documents, length)
        counts = np.bincount(x.ravel(), minlength=self.vocab_size) / x.size
        losses = {"rate": [], "known_topic": []}
        zero = np.zeros(documents, dtype=np.int64)
        c = b = a = zero
        rows = np.arange(documents)
        for pos in range(length):
            prior = post * (1 - P_SWITCH) + P_SWITCH / k if pos else post
            like = (w * self._component_probs(None, c, b, a, x[:, pos])).sum(0)  # (n, K)
            p = (prior * like).sum(1)
            if pos >= burn_in:
                losses["rate"].append(-np.log(p))
                losses["known_topic"].append(-np.log(like[rows, z_true[:, pos]]))
            post = prior * like / p[:, None]
            c, b, a = b, a, x[:, pos]
        result = {}
        for key, rows_ in losses.items():
            per_doc = np.mean(rows_, axis=0)
            result[key] = float(per_doc.mean())
            result[key + "_se"] = float(per_doc.std(ddof=1) / math.sqrt(documents))
        result["unigram"] = float(-(counts[counts > 0] * np.log(counts[counts > 0])).sum())
        return result

    def _topics(self, split: str, first: int, count: int, length: int) -> np.ndarray:
        """The hidden topic of each position of the same documents as `documents` (for the
        lower bound): (count, length)."""
        u = np.stack([np.random.default_rng([self.seed, SPLITS[split], 0, first + i])
                      .random((length, 2)) for i in range(count)])
        return self._hidden(u)[0]
