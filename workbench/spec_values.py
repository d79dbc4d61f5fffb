"""The checks and plain values every contract of workbench/spec.py is built from: SpecError
(bad input to a spec), names that are safe as file and folder names, bounds, frozen mappings,
the stable hash of a spec, and specs as plain JSON values. Importable from workbench.spec.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import fields, is_dataclass
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from workbench.errors import UserError

__all__ = ["SpecError", "NAME", "check_name", "check_at_least", "freeze", "stable_hash",
           "to_plain", "as_tuple"]


class SpecError(UserError):
    """A spec was built from values that cannot describe a valid workload, run or study."""


# A study's name names files and folders of the store: letters, digits, '.', '_' and '-' only,
# starting with a letter or digit (so no path separator, no "..", nothing hidden).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_name(kind: str, value: Any) -> str:
    """`value` if it is a valid name (NAME), else SpecError saying what is valid."""
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise SpecError(f"bad {kind} {value!r}: use letters, digits, '.', '_' and '-', starting "
                        "with a letter or digit, at most 128 characters")
    return value


def check_at_least(kind: str, value: Any, low: float, optional: bool = False) -> None:
    """SpecError unless `value` is a finite number >= `low` (or None when `optional`)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value < low:
        raise SpecError(f"{kind} must be a number >= {low:g}, got {value!r}")


def freeze(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of a mapping, so that frozen dataclasses stay immutable all the way down."""
    return MappingProxyType(dict(mapping or {}))


def stable_hash(obj: Any, n: int = 10) -> str:
    """A short hex digest of a JSON-able object that is the same on every machine and Python run."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def to_plain(obj: Any) -> Any:
    """Dataclasses, read-only mappings and tuples -> dicts and lists of plain values, for JSON."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, MappingProxyType):
        return dict(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def as_tuple(value: Any) -> tuple:
    """A tuple from a tuple/list, a single value, or a comma-separated string ("a,b" -> ("a", "b"))."""
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)
