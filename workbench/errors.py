"""The one exception class for bad input.

`UserError` is raised where something a user gave (an argument, a file, a store, a name, a
number) is wrong; its message is one line saying what was wrong and what is valid. The command
line reports a `UserError` raised before anything is written as `error: ...` with exit status 2.
Every other exception is an internal error: exit 1 and the traceback saved to a file.

It subclasses `ValueError` so that code which caught `ValueError` for bad input still does;
`UnknownNameError`, a name missing from a registry (an algorithm, a workload), is a `KeyError`
too, for code that caught `KeyError`.
"""

from __future__ import annotations

__all__ = ["UserError", "UnknownNameError"]


class UserError(ValueError):
    """Bad input: the message says what was wrong and what is valid, in one line."""


class UnknownNameError(UserError, KeyError):
    """A name that is not in a registry: the message lists the known names."""

    __str__ = BaseException.__str__  # the message as given, not KeyError's quoted repr
