"""`pacebench study ... --until-decided A,B`: a study in rounds until the sequential test
(workbench/sequential.py) decides A against B, it turns futile, or --max-studies."""
from __future__ import annotations

import argparse
import sys

from runners.cli.types import csv as _csv
from workbench.errors import UserError

__all__ = ["until_decided_flags", "decided_pair", "until_decided", "STUDY_EXISTS"]

STUDY_EXISTS = 2  # launch_and_report's exit code when the store holds the study and no --resume


def until_decided_flags(p: argparse.ArgumentParser) -> None:
    """`study`'s flags of a sequential study."""
    p.add_argument("--until-decided", type=_csv, metavar="A,B",
                   help="run rounds (one more study of each algorithm per round) until the "
                        "sequential test decides A against B, or --max-studies")
    p.add_argument("--max-studies", type=int,
                   help="with --until-decided: the most studies a side (default 10)")
    p.add_argument("--confidence", type=float,
                   help="with --until-decided: of the verdict (default 0.95)")
    p.add_argument("--detect", type=float,
                   help="with --until-decided: the speedup the futility rule is sized for "
                        "(default 1.25)")


def decided_pair(args: argparse.Namespace, algorithms: list[str]) -> tuple[str, str] | None:
    """The two algorithms of --until-decided, checked (both in the study, two different ones),
    or None; UserError for the sequential options given without it."""
    alone = [f"--{k.replace('_', '-')}" for k in ("max_studies", "confidence", "detect")
             if getattr(args, k) is not None]
    if not args.until_decided:
        if alone:
            raise UserError(f"{', '.join(alone)} goes with --until-decided A,B")
        return None
    from workbench.results import DEFAULT_FIRST_ROUND, DEFAULT_MAX_STUDIES  # scipy.stats: not
                                                                             # for other studies
    names = [n.split("=", 1)[0] for n in algorithms]
    pair = tuple(args.until_decided)
    if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(names):
        raise UserError(f"--until-decided {','.join(pair)}: give two different algorithms of "
                        f"the study, A,B (its algorithms are {', '.join(names)})")
    first = args.studies or DEFAULT_FIRST_ROUND
    most = args.max_studies or DEFAULT_MAX_STUDIES
    if first < 2 or first > most:
        raise UserError(f"--studies {first}: the first round needs 2 studies a side (a "
                        f"verdict needs 2) and at most --max-studies ({most})")
    return pair[0], pair[1]


def until_decided(args: argparse.Namespace, spec, store, pair: tuple[str, str], launch) -> int:
    """Rounds of a study until the sequential test (workbench/sequential.py) decides `pair`,
    or --max-studies: round 1 runs --studies studies of each algorithm, each later round one
    more (the next study index, through the launcher's resume), then the test looks at the
    study's runs. Prints each look and, at the end, the verdict, the studies used and why it
    stopped. Exit as the launcher would for a round that did not complete."""
    from dataclasses import replace

    from workbench.results import DEFAULT_CONFIDENCE, DEFAULT_DETECT, DEFAULT_MAX_STUDIES, Results

    first, most = spec.studies, args.max_studies or DEFAULT_MAX_STUDIES
    results = Results(store)
    for studies in range(first, most + 1):
        code = launch(replace(spec, studies=studies), args.resume or studies > first,
                      f"round {studies - first + 1}: {studies} studies of each algorithm")
        if code == STUDY_EXISTS:  # launch_and_report said what to do (--resume or --name)
            return code
        if code != 0:
            print(f"error: round {studies - first + 1} did not complete; the test stops here "
                  f"(rerun the same command with --resume)", file=sys.stderr)
            return code
        result = results.compare_result(
            *pair, confidence=args.confidence or DEFAULT_CONFIDENCE,
            detect=args.detect or DEFAULT_DETECT, sequential=True, max_studies=most,
            ongoing=True, first=first, studies=(spec.name,), ruleset=spec.ruleset)
        sequential = result.comparison
        if sequential.stopped_because is not None:
            break
        print(f"no verdict yet after {sequential.studies_used} studies a side: "
              f"{sequential.sentence()}")
    print(result.text())
    return 0
