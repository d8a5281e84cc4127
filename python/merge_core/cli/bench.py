"""``merge-core bench``: merge-core and its peers side by side; a report with charts."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from importlib import metadata

from ..bench import ONLY_SCALING, SCALES, SUITES
from .common import UserError, add_command, check_positive


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "bench",
        "run merge-core and its peers on the same generated data; write a report with charts",
        """
merge-core bench --scale small
merge-core bench --scale full --only sort --out /tmp/report
merge-core bench --scale huge      # merge-core alone at 6M to 60M rows: its scaling section only
""",
    )
    p.add_argument(
        "--scale",
        default="small",
        choices=list(SCALES),
        help="data size; 'huge' runs only the scaling suite (6M to 60M rows, ~30 min on a quiet 2-core machine)",
    )
    p.add_argument("--out", default="docs/benchmarks", metavar="DIR", help="folder for README.md and the PNG charts")
    p.add_argument(
        "--only",
        action="append",
        choices=SUITES,
        metavar="SUITE",
        help=f"run only these: {SUITES} ('scaling' runs only when named, or at --scale huge)",
    )
    p.add_argument("--repeat", type=int, default=None, help="runs of each timing (default: by scale)")
    p.add_argument("--master", default="local[2]", help="Spark master for the Spark suites")
    p.add_argument(
        "--no-install",
        action="store_true",
        help="do not install missing peers (the 'bench' extra) first; a missing peer's rows say it was skipped",
    )
    p.set_defaults(run=cmd_bench)


def missing_requirements(requirements: Iterable[str], installed: Callable[[str], bool], extra: str) -> list[str]:
    """The requirements of ``extra`` (as package metadata writes them, ``name>=1; extra ==
    "bench"``) whose distribution is not installed, without their markers."""
    missing = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", marker) is None:
            continue
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        if name and not installed(name.group(1)):
            missing.append(spec.strip())
    return missing


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def install_missing_peers() -> None:
    """Installs what the ``bench`` extra lists and this environment lacks: the demo's set-up
    leaves the peers out (they are large), so the bench brings them the first time."""
    missing = missing_requirements(metadata.requires("merge-core") or [], _installed, "bench")
    if not missing:
        return
    print(f"installing the peers merge-core bench compares with: {', '.join(missing)} ...", file=sys.stderr)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=False)
    if done.returncode != 0:
        print("  could not install them: their rows will say they were skipped", file=sys.stderr)


def cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import run

    if args.repeat is not None:
        check_positive(args.repeat, "--repeat")
    if args.scale in ONLY_SCALING and set(args.only or ["scaling"]) != {"scaling"}:
        raise UserError(f"--scale {args.scale} runs only the scaling suite (its data is too large for the peers)")
    if not args.no_install:
        install_missing_peers()
    command = " ".join(["merge-core bench", f"--scale {args.scale}", *(f"--only {s}" for s in args.only or [])])
    report_path = run(args.scale, args.out, args.only, args.master, args.repeat, command)
    print(f"report: {report_path}")
    return 0
