"""absl-style logging calls over Python's `logging` (logger "absl"), for submission files.

Levels follow absl's numbering (DEBUG 1, INFO 0, WARNING -1, ERROR -2, FATAL -3); `fatal` logs
and then exits, as absl does.
"""
from __future__ import annotations

import logging as _logging
from typing import Any

DEBUG, INFO, WARNING, ERROR, FATAL = 1, 0, -1, -2, -3
_TO_PYTHON = {DEBUG: _logging.DEBUG, INFO: _logging.INFO, WARNING: _logging.WARNING,
              ERROR: _logging.ERROR, FATAL: _logging.CRITICAL}
_logger = _logging.getLogger("absl")
_counts: dict[tuple[str, int], int] = {}  # (message, n) -> times logged, for log_every_n/_first_n


def _python_level(level: int) -> int:
    return _TO_PYTHON.get(level, _logging.DEBUG if level > DEBUG else _logging.CRITICAL)


def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log `msg % args` at absl level `level`."""
    _logger.log(_python_level(level), msg, *args, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    _logger.debug(msg, *args, **kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    _logger.info(msg, *args, **kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    _logger.error(msg, *args, **kwargs)


def exception(msg: Any, *args: Any, **kwargs: Any) -> None:
    _logger.exception(msg, *args, **kwargs)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at FATAL and exit the process with status 1 (absl aborts here too)."""
    _logger.critical(msg, *args, **kwargs)
    raise SystemExit(1)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Verbose logging: absl's level 1, 2, ... all map to Python DEBUG."""
    _logger.debug(msg, *args, **kwargs)


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log the 1st, (n+1)th, (2n+1)th, ... time this message is logged."""
    key = (str(msg), int(n))
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % max(int(n), 1) == 0:
        log(level, msg, *args)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log only the first `n` times this message is logged."""
    key = (str(msg), -1)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        log(level, msg, *args)


def set_verbosity(level: int | str) -> None:
    """Set the threshold: an absl level number or a name such as "info"."""
    if isinstance(level, str):
        level = {"debug": DEBUG, "info": INFO, "warning": WARNING, "error": ERROR,
                 "fatal": FATAL}[level.lower()]
    _logger.setLevel(_python_level(level))


def get_verbosity() -> int:
    """The absl level matching the logger's threshold (INFO when it matches none)."""
    python = _logger.getEffectiveLevel()
    return next((lvl for lvl, p in _TO_PYTHON.items() if p == python), INFO)


def level_debug() -> bool:
    return _logger.isEnabledFor(_logging.DEBUG)


def level_info() -> bool:
    return _logger.isEnabledFor(_logging.INFO)
