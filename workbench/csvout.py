"""Tables as CSV for spreadsheets: `pacebench score --csv` and the dashboard's downloads.

Names in a store come from users and foreign logs; a spreadsheet runs a cell that starts with
=, +, -, @ (or a tab or carriage return before one) as a formula. Such text cells get a leading
apostrophe, which spreadsheets show as the text itself; numbers are written as numbers (inf for
a miss, empty for no value).
"""
from __future__ import annotations

import io
import math

import pandas as pd

__all__ = ["to_csv", "safe_cell"]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """`value`, a text that a spreadsheet would run as a formula prefixed with an apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _number(value: object) -> object:
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def to_csv(frame: pd.DataFrame, index: bool = False) -> str:
    """`frame` as CSV text: column names and text cells made formula-safe (safe_cell)."""
    frame = frame.reset_index() if index else frame
    out = frame.rename(columns=lambda c: safe_cell(str(c)))
    out = out.apply(lambda column: column.map(lambda v: _number(safe_cell(v))))
    buffer = io.StringIO()
    out.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue()
