"""The ``merge-core`` command's entry point. Ctrl-C belongs to the command from its first
moment: while pyarrow and the native module load (a second or more), it ends the
process as an interrupted command does, with exit status 130; then
:func:`merge_core.cli.main` takes it over. (``import merge_core`` is light, so this module
runs before anything heavy is loaded.)"""

from __future__ import annotations

import os
import signal
import sys
import threading


def _exit_interrupted(signum: int, frame: object) -> None:
    sys.stderr.write("merge-core: interrupted\n")
    os._exit(130)  # nothing has been written yet


def main() -> int:
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _exit_interrupted)
    from .cli import main as run

    return run()
