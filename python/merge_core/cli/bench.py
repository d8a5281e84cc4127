"""``merge-core bench``: merge-core and its peers side by side; a report with charts."""

from __future__ import annotations

import argparse

from ..bench import SUITES
from .common import add_command, check_positive


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "bench",
        "run merge-core and its peers on the same generated data; write a report with charts",
        """
merge-core bench --scale small
merge-core bench --scale full --only sort --out /tmp/report
""",
    )
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"], help="data size")
    p.add_argument("--out", default="docs/benchmarks", metavar="DIR", help="folder for README.md and the PNG charts")
    p.add_argument("--only", action="append", choices=SUITES, metavar="SUITE", help=f"run only these: {SUITES}")
    p.add_argument("--repeat", type=int, default=None, help="runs of each timing (default: by scale)")
    p.add_argument("--master", default="local[2]", help="Spark master for the Spark suites")
    p.set_defaults(run=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import run

    if args.repeat is not None:
        check_positive(args.repeat, "--repeat")
    command = " ".join(["merge-core bench", f"--scale {args.scale}", *(f"--only {s}" for s in args.only or [])])
    report_path = run(args.scale, args.out, args.only, args.master, args.repeat, command)
    print(f"report: {report_path}")
    return 0
