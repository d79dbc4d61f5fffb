"""Argument types of the `pacebench` command line (runners/cli.py)."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

__all__ = ["csv", "ints", "floats", "hparams"]


def csv(text: str) -> list[str]:
    """The items of a comma-separated list; a comma written '\\,' belongs to its item (a path
    holding a comma: --algorithms 'dir\\,1/algo.py:Algo,adamw')."""
    parts = re.split(r"(?<!\\),", text)
    items = [t.strip().replace("\\,", ",") for t in parts if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, e.g. a,b")
    return items


def _numbers(kind: type, what: str):
    """An argparse type: a comma-separated list of `kind` values (`what` names them)."""
    def parse(text: str) -> list:
        try:
            return [kind(t) for t in csv(text)]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}") \
                from None
    return parse


ints, floats = _numbers(int, "integers"), _numbers(float, "numbers")


def hparams(text: str) -> dict:
    """--hparams takes a JSON object, or @path to a JSON file."""
    try:
        raw = Path(text[1:]).read_text() if text.startswith("@") else text
    except (OSError, UnicodeDecodeError) as e:
        raise argparse.ArgumentTypeError(f"cannot read the hyperparameter file {text[1:]!r} "
                                         f"({type(e).__name__}); give @<path to a JSON file> "
                                         "or a JSON object") from None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({str(e)[:80]}): {raw[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            "not a JSON object; give e.g. '{\"learning_rate\": 0.001}'")
    return value

