"""``merge-core gen``: contest-shaped Parquet data, a base file and increments."""

from __future__ import annotations

import argparse
import os
import time

from .common import UserError, add_command, check_positive, plural


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "gen",
        "write contest-shaped data: a base file and increments that update and add keys",
        """
merge-core gen data/
merge-core gen data/ --rows 2000000 --increments 10 --seed 7
""",
    )
    p.add_argument("output", metavar="OUT", help="directory to write 0.parquet, 1.parquet, ... into")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the base file; each increment has rows/5")
    p.add_argument("--increments", type=int, default=10, help="increment files after the base file")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same data")
    p.set_defaults(run=cmd_gen)


def cmd_gen(args: argparse.Namespace) -> int:
    from .. import contest

    check_positive(args.rows, "--rows")
    if args.increments < 0:
        raise UserError(f"--increments must be 0 or more, got {args.increments}")
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UserError(f"OUT {args.output} is a file, not a directory")
    start = time.perf_counter()
    paths = contest.generate(args.output, args.rows, args.increments, args.seed)
    rows = contest.total_rows(paths)
    seconds = time.perf_counter() - start
    print(f"wrote {plural(len(paths), 'file')}, {plural(rows, 'row')}, to {args.output} in {seconds:.1f}s")
    return 0
