"""The ``merge-core`` command line: :func:`main` is its entry point, the parser and the
answer to a failure are in :mod:`.app`, and each command is a module of its own
(``merge``, ``sort``, ``gen``, ``upsert``, ``demo``, ``bench``, ``table``, ``catalog``) over
what they share (:mod:`.common`).

Ctrl-C belongs to the command from its first moment: while pyarrow and the native module
load (a second or more), it ends the process as an interrupted command does, with exit
status 130; then :func:`.app.run` takes it over (and SIGTERM with it); once the command
has ended, a Ctrl-C or SIGTERM while Python shuts down is ignored. This module imports nothing heavy (nor does
``import merge_core``), so it runs before anything heavy is loaded.
"""

from __future__ import annotations

import os
import signal
import sys
import threading


def _exit_interrupted(signum: int, frame: object) -> None:
    sys.stderr.write("merge-core: interrupted\n")
    os._exit(130)  # nothing has been written yet


def main(argv: list[str] | None = None) -> int:
    main_thread = threading.current_thread() is threading.main_thread()
    owned = main_thread and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    if owned:
        signal.signal(signal.SIGINT, _exit_interrupted)
    from .app import run

    status = run(argv)
    if owned:
        # The command is done and has said so: a Ctrl-C while Python shuts down is ignored,
        # so the exit status is the command's (Python puts back the default action, which
        # ends the process by the signal, for every handler but SIG_IGN).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return status
