"""Writes tests/data/ladder_finals.csv, the worked example of docs/ladder-analysis.md: adamw,
lion and muon at two rungs, one run each, losses 0.9 (s D / 1e9)^-0.3 + c + N(0, 0.0015) with
planted speedups s, rounded to 4 digits as published tables are.

    .venv/bin/python tests/data/make_ladder_finals.py
"""
import csv
from pathlib import Path

import numpy as np

rng = np.random.default_rng(40)
RUNGS = {"130M": (134217728, 0.95, 2.95, (1, 2, 4, 8, 16)),   # params, a, c, budgets
         "300M": (301989888, 0.85, 2.75, (1, 2, 4, 8))}
SPEED = {"adamw": {"130M": 1.0, "300M": 1.0}, "muon": {"130M": 1.35, "300M": 1.2},
         "lion": {"130M": 1.05, "300M": 0.97}}
LR = {"adamw": 0.008, "muon": 0.02, "lion": 0.0008}
rows = []
for rung, (n, a, c, mults) in RUNGS.items():
    for alg, s in SPEED.items():
        for m in mults:
            tokens = 20 * n * m
            loss = a * (s[rung] * tokens / 1e9) ** -0.3 + c + rng.normal(0, 0.0015)
            rows.append([alg, rung, n, tokens, f"{loss:.4f}", LR[alg]])
with open(Path(__file__).with_name("ladder_finals.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["algorithm", "rung", "non_embedding_params", "tokens", "final_loss",
                "learning_rate"])
    w.writerows(rows)
