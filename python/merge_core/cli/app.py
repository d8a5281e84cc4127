"""The ``merge-core`` command line: its parser, one sub-command per module of this
package (merge, sort, gen, upsert, demo, bench, table, catalog), and the answer to a
failure.

Every command checks its arguments (files, columns, sizes, directories) before it starts
work, shows one progress line on stderr when stderr is a terminal, ends with a summary on
stdout, and answers a failure with one line on stderr: exit status 2 for a mistake in the
command line or its inputs, 3 for what merge-core does not do (an unsupported table
feature), 1 for a failure of merge-core, Spark or the machine, 130 for Ctrl-C and 143 for
SIGTERM (``kill``), which a command answers as it answers Ctrl-C: its temporary files and
child processes removed, a table left at its last snapshot.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from typing import Any

import merge_core as mc

from . import bench, catalog, demo, gen, merge, sort, table, upsert
from .common import Parser, report

EXAMPLES = """examples:
  merge-core demo                                   contest upsert on Spark: merge-core vs Spark SQL
  merge-core gen data/ --rows 2000000 --increments 10
  merge-core upsert data/*.parquet -o merged/ --key uuid --preset contest
  merge-core merge run1.parquet run2.parquet -k id --merge deduplicate -o merged.parquet
  merge-core sort big.parquet -k id --memory 256MiB -o sorted.parquet
  merge-core bench --scale small                    merge-core vs DuckDB, Polars, DataFusion, Spark, pypaimon
  merge-core table --help                           Paimon tables: create, write, read, compact, info, expire
  merge-core catalog --help                         a warehouse's databases and tables (Paimon's filesystem catalog)

Run 'merge-core COMMAND --help' for a command's options and examples.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="merge-core",
        description="Merge and sort sorted Arrow runs the way LSM data lakes do.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"merge-core {mc.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for command in (merge, sort, gen, upsert, demo, bench, table, catalog):
        command.add_command_to(commands)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so that every cleanup Ctrl-C runs runs for it too."""


def run(argv: list[str] | None = None) -> int:
    interrupted = _note_interrupts()
    args = None
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except KeyboardInterrupt as e:
        return _interrupted(isinstance(e, Terminated))
    except Exception as e:
        if interrupted.is_set():  # Ctrl-C in a Python callback, reported by pyarrow or Rust as their error
            return _interrupted(interrupted.terminated)
        if os.environ.get("MERGE_CORE_DEBUG"):
            traceback.print_exc()
        runs = getattr(args, "runs", None) or ([args.input] if getattr(args, "input", None) else None)
        return report(e, runs)


def _interrupted(terminated: bool) -> int:
    print(f"merge-core: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
    return 143 if terminated else 130


class _Interrupts(threading.Event):
    """Set by Ctrl-C or SIGTERM; ``terminated`` says which came first."""

    terminated = False


def _note_interrupts() -> _Interrupts:
    """Ctrl-C raises KeyboardInterrupt as usual, and SIGTERM raises :class:`Terminated`;
    both are also noted: raised inside a Python callback that pyarrow's C++ or
    merge-core's Rust called, they come back as their error ("Unknown error: ... Python
    exception"), which must still end as an interrupt."""
    interrupted = _Interrupts()

    def on_interrupt(signum: int, frame: Any) -> None:
        if not interrupted.is_set():
            interrupted.terminated = signum == signal.SIGTERM
        interrupted.set()
        if signum == signal.SIGTERM:
            raise Terminated()
        signal.default_int_handler(signum, frame)

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, on_interrupt)
    return interrupted
