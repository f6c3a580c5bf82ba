"""Child processes that take Ctrl-C: a one-shot command blocks SIGINT in its threads (`cli._end_on_ctrl_c`),
and a process started from one of them would inherit the block (a child starts with its parent thread's
signal mask) and carry on after a Ctrl-C that ended mcpgen.

>>> import subprocess, sys
>>> with sigint_unblocked():
...     subprocess.run([sys.executable, "-c", "pass"], check=True).returncode
0
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigint_unblocked() -> Iterator[None]:
    """SIGINT unblocked in this thread while the block starts a child process, then as it was."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


__all__ = ["sigint_unblocked"]
