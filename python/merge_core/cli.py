"""The ``merge-core`` command line.

merge-core demo [--runs K] [--rows N]   generate sorted runs, merge them with both
                                        engines, check they agree, print figures
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pyarrow as pa

import merge_core as mc

EXAMPLES = """examples:
  merge-core demo                      merge 16 generated runs of 250k rows
  merge-core demo --runs 64 --rows 50000
"""


def generate_runs(runs: int, rows: int, overlap: float, seed: int) -> list[pa.Table]:
    """Sorted runs of unique int64 keys drawn from a key space shared by all runs
    (``overlap`` near 1: most keys recur in several runs), with a few payload columns."""
    rng = np.random.default_rng(seed)
    key_space = max(rows, int(rows * runs * (1 - overlap)) + rows)
    tables = []
    for r in range(runs):
        keys = np.unique(rng.integers(0, key_space, size=rows))
        n = len(keys)
        tables.append(
            pa.table(
                {
                    "key": keys,
                    "run": np.full(n, r, dtype=np.int32),
                    "price": rng.random(n),
                    "qty": rng.integers(0, 1000, size=n),
                    "note": pa.array([f"r{r}"] * n),
                }
            )
        )
    return tables


def demo(args: argparse.Namespace) -> int:
    print(f"generating {args.runs} sorted runs of {args.rows:,} rows (seed {args.seed}) ...")
    runs = generate_runs(args.runs, args.rows, args.overlap, args.seed)
    rows_in = sum(t.num_rows for t in runs)
    results = {}
    print(f"\n{'engine':<12}{'rows in':>12}{'rows out':>12}{'seconds':>10}{'M rows/s':>10}{'cmp/row':>9}")
    for algorithm in ("loser-tree", "heap"):
        start = time.perf_counter()
        stream = mc.merge(runs, key="key", algorithm=algorithm)
        table = stream.read_all()
        seconds = time.perf_counter() - start
        stats = stream.stats
        results[algorithm] = table
        print(
            f"{algorithm:<12}{rows_in:>12,}{stats['rows_out']:>12,}{seconds:>10.3f}"
            f"{rows_in / seconds / 1e6:>10.1f}{stats['key_comparisons'] / max(rows_in, 1):>9.2f}"
        )
    same = results["loser-tree"].equals(results["heap"])
    print(f"\nboth engines agree: {'yes' if same else 'NO'}")
    print("\nfirst rows of the merged output (newest version of each key):")
    print(format_table(results["loser-tree"].slice(0, 5)))
    return 0 if same else 1


def format_table(table: pa.Table) -> str:
    """A small table as aligned text (for a handful of rows only)."""
    cells = [[str(v) for v in table.column_names]]
    cells += [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row.values()] for row in table.to_pylist()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=False)) for row in cells)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="merge-core",
        description="Merge sorted Arrow runs the way LSM data lakes do.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"merge-core {mc.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser(
        "demo",
        help="merge generated runs with both engines and compare",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--runs", type=int, default=16, help="number of sorted runs (default 16)")
    p.add_argument("--rows", type=int, default=250_000, help="rows per run (default 250000)")
    p.add_argument("--overlap", type=float, default=0.5, help="share of keys that recur across runs, 0..1")
    p.add_argument("--seed", type=int, default=42)
    p.set_defaults(run=demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except mc.MergeCoreError as e:
        print(f"merge-core: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("merge-core: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
