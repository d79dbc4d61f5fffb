"""A child process started with the signal state a terminal gives a command.

A test worker may have SIGINT blocked or ignored by something run in it earlier (a library's
thread, a pool); a child inherits both through fork and exec, and would then never see the
Ctrl-C a test sends. `preexec_fn=terminal_signals` gives the child SIGINT and SIGTERM unblocked
and at their defaults, so Python installs its KeyboardInterrupt handler as it does for a user.
"""
from __future__ import annotations

import signal

__all__ = ["terminal_signals"]


def terminal_signals() -> None:
    """For subprocess.Popen(preexec_fn=...): SIGINT and SIGTERM unblocked, at their defaults."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
