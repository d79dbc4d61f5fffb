"""The one exception class for bad input.

`UserError` is raised where something a user gave (an argument, a file, a store, a name, a
number) is wrong; its message is one line saying what was wrong and what is valid. The command
line reports a `UserError` raised before anything is written as `error: ...` with exit status 2.
Every other exception is an internal error: exit 1 and the traceback saved to a file.

It subclasses `ValueError` so that code which caught `ValueError` for bad input still does.
"""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(ValueError):
    """Bad input: the message says what was wrong and what is valid, in one line."""
