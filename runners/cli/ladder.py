"""`pacebench ladder`: the GPT language-model ladder. `--list [--json]` lists the rungs (catalog
names, non-embedding and total parameters, training FLOPs per token, workbench.catalog);
`--sizes ... --algorithms ...` runs a ladder (runners/cli/ladder_run.py); `--summary` prints
its analysis (runners/cli/analysis.py ladder_summary)."""
from __future__ import annotations

import argparse
import json

from runners.cli.analysis import ladder_summary, ladder_summary_flags
from runners.cli.flags import store_flag
from runners.cli.ladder_run import add_run_flags, run_ladder_command
from workbench.errors import UserError

__all__ = ["add", "add_ladder", "ladder", "rung_listing"]


def add(sub) -> None:
    """The group's parsers."""
    add_ladder(sub)


def add_ladder(sub) -> argparse.ArgumentParser:
    """The `ladder` parser: listing, running and summarising flags."""
    p = sub.add_parser("ladder", help="the GPT language-model ladder: its rungs (--list), a run "
                                      "of rungs x data budgets x algorithms x seeds (--sizes), "
                                      "its equal-loss speedups (--summary)")
    p.add_argument("--list", action="store_true", help="list the rungs, smallest first (with "
                   '--json: {"rungs": [{"name", "non_embedding_params", "params", '
                   '"flops_per_token"}]})')
    add_run_flags(p)
    ladder_summary_flags(p.add_argument_group("its summary"))
    if "--store" not in p._option_string_actions:  # the run flags may have added it
        store_flag(p)
    p.set_defaults(func=ladder)
    return p


def ladder(args: argparse.Namespace) -> int:
    if args.list:
        return _print_rungs(args.json)
    if args.summary:
        return ladder_summary(args)
    if args.json or args.reference or args.ladder_studies or args.loss_noise is not None \
            or args.fit_budgets:
        raise UserError("--json goes with --list or --summary, --reference, --study, "
                        "--loss-noise and --fit-budgets with --summary (e.g. pacebench ladder "
                        "--summary --json --store S)")
    if not args.sizes and not args.algorithms:
        raise UserError("nothing to do: `pacebench ladder --list [--json]` lists the rungs, "
                        "`--sizes A,B --algorithms X,Y` runs a ladder, `--summary` reads one")
    return run_ladder_command(args)


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
