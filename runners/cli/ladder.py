"""`pacebench ladder`: the GPT language-model ladder. `--list [--json]` lists the rungs (catalog
names, non-embedding and total parameters, training FLOPs per token, workbench.catalog)."""
from __future__ import annotations

import argparse
import json

__all__ = ["add", "add_ladder", "ladder", "rung_listing"]


def add(sub) -> None:
    """The group's parsers."""
    add_ladder(sub)


def add_ladder(sub) -> argparse.ArgumentParser:
    """The `ladder` parser with its listing flags; returned so that more flags can be added."""
    p = sub.add_parser("ladder", help="the GPT language-model ladder: its rungs (--list)")
    p.add_argument("--list", action="store_true", help="list the rungs, smallest first")
    p.add_argument("--json", action="store_true", help="with --list: as JSON "
                   '{"rungs": [{"name", "non_embedding_params", "params", "flops_per_token"}]}')
    p.set_defaults(func=ladder)
    return p


def ladder(args: argparse.Namespace) -> int:
    if args.list:
        return _print_rungs(args.json)
    raise ValueError("nothing to do: `pacebench ladder --list [--json]` lists the rungs")


def rung_listing() -> list[dict]:
    """Each rung's name, counts and shape, smallest first (workbench.catalog.rung_counts)."""
    from workbench.catalog import TOKENS_PER_PARAM, ladder_rungs, rung_counts

    rows = []
    for w in ladder_rungs():
        counts = rung_counts(w)
        m = w.model
        rows.append({"name": w.name, **counts, "n_layer": m["n_layer"], "n_embd": m["n_embd"],
                     "n_head": m["n_head"], "block_size": m["block_size"],
                     "batch_size": w.batch_size,
                     "chinchilla_tokens": TOKENS_PER_PARAM * counts["non_embedding_params"]})
    return rows


def _print_rungs(as_json: bool) -> int:
    rows = rung_listing()
    if as_json:
        keys = ("name", "non_embedding_params", "params", "flops_per_token")
        print(json.dumps({"rungs": [{k: r[k] for k in keys} for r in rows]}, indent=1))
        return 0
    print(f"{'rung':<10} {'non-embedding':>13} {'params':>12} {'FLOPs/token':>12} "
          f"{'layers x width':>14} {'context':>7} {'batch':>5} {'1x tokens':>14}")
    for r in rows:
        print(f"{r['name']:<10} {r['non_embedding_params']:>13,} {r['params']:>12,} "
              f"{r['flops_per_token']:>12.4g} {r['n_layer']:>5} x {r['n_embd']:<6} "
              f"{r['block_size']:>7} {r['batch_size']:>5} {r['chinchilla_tokens']:>14,}")
    print("params and FLOPs with the generated corpus' vocabulary (64); FLOPs per token = "
          "6 (12 L d^2 + V d) + 12 L T d (training, head and attention included); "
          "1x tokens = 20 per non-embedding parameter")
    return 0
