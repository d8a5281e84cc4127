"""``merge-core demo``: the contest upsert on a local Spark, done by merge-core's two
pipelines and by Spark SQL, timed, checked equal, and told in words."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from .common import (
    Progress,
    UserError,
    add_command,
    check_positive,
    plural,
    spark_error,
    spark_progress,
    start_spark,
)

#: The pipelines, in the order they run, each with the line that says what it does.
PIPELINES = {
    "merge-core upsert_files": "no shuffle by Spark; its tasks read each input byte once and fold their keys in Rust",
    "merge-core upsert": "Spark shuffles the rows by key; mapInArrow hands each task's Arrow batches to Rust",
    "Spark SQL": "union of the versions + groupBy(uuid) with sum and max_by, as a Spark user writes it",
}


@dataclass
class Timing:
    name: str
    seconds: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return min(self.seconds)


def add_command_to(commands: argparse._SubParsersAction) -> None:
    p = add_command(
        commands,
        "demo",
        "generate contest data, upsert it on Spark with merge-core's two pipelines and with Spark SQL, compare",
        """
merge-core demo
merge-core demo --rows 1000000 --repeat 3 --master 'local[4]'
""",
    )
    p.add_argument("--rows", type=int, default=200_000, help="rows of the base file; each increment has rows/5")
    p.add_argument("--increments", type=int, default=10, help="increment files after the base file")
    p.add_argument("--repeat", type=int, default=2, help="runs of each pipeline; the best time is shown")
    p.add_argument("--master", default="local[2]", help="Spark master URL")
    p.add_argument("--seed", type=int, default=0, help="random seed of the generated data")
    p.set_defaults(run=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    import merge_core.spark as mcs

    from .. import contest

    check_positive(args.rows, "--rows")
    check_positive(args.repeat, "--repeat")
    if args.increments < 0:
        raise UserError(f"--increments must be 0 or more, got {args.increments}")
    with tempfile.TemporaryDirectory(prefix="merge-core-demo-") as tmp, Progress() as progress:
        files = args.increments + 1
        with step(
            f"generating the data: a base file of {args.rows:,} rows and {plural(args.increments, 'increment')}"
            f" of {args.rows // 5:,} rows ({files} Parquet files)"
        ):
            paths = contest.generate(os.path.join(tmp, "data"), args.rows, args.increments, args.seed)
            total = contest.total_rows(paths)
        with step(f"starting Spark ({args.master})"):
            spark = start_spark(args.master)
        print(f"running each pipeline {plural(args.repeat, 'time')}, one after the other, on Spark {spark.version} ...")
        versions = [spark.read.parquet(p) for p in paths]
        jobs = {
            "merge-core upsert_files": lambda out: mcs.upsert_files(spark, paths, out, "uuid", **contest.CONTEST),
            "merge-core upsert": lambda out: mcs.upsert(versions, "uuid", **contest.CONTEST).write.parquet(out),
            "Spark SQL": lambda out: contest.spark_sql_upsert(versions).write.parquet(out),
        }
        timings = {name: Timing(name) for name in jobs}
        try:
            for attempt in range(args.repeat):  # alternating, so a noisy moment hurts every pipeline
                for i, (name, job) in enumerate(jobs.items()):
                    with spark_progress(progress, spark, f"run {attempt + 1} of {args.repeat}: {name}"):
                        start = time.perf_counter()
                        job(os.path.join(tmp, f"out-{i}-{attempt}"))
                        timings[name].seconds.append(time.perf_counter() - start)
            outputs = [spark.read.parquet(os.path.join(tmp, f"out-{i}-0")) for i in range(len(jobs))]
            progress.show("checking that the outputs are equal")
            rows = outputs[0].count()
            same = all(o.exceptAll(outputs[0]).isEmpty() and outputs[0].exceptAll(o).isEmpty() for o in outputs[1:])
            progress.clear()
        except Exception as e:
            raise (spark_error(e, spark) or e) from None
        finally:
            version = spark.version
            spark.stop()
    print(report(list(timings.values()), total, len(paths), rows, same, version, args))
    return 0 if same else 1


@contextlib.contextmanager
def step(text: str) -> Iterator[None]:
    """``text ... done (N s)`` on one line, around a step that prints nothing itself."""
    start = time.perf_counter()
    print(f"{text} ... ", end="", flush=True)
    yield
    print(f"done ({time.perf_counter() - start:.0f} s)", flush=True)


def report(timings: list[Timing], total: int, files: int, rows: int, same: bool, version: str, args) -> str:
    """The demo's result in words: what ran, on what, which pipeline won and by how much."""
    ranked = sorted(timings, key=lambda t: t.best)
    fastest, spark_sql = ranked[0], next(t for t in timings if t.name == "Spark SQL")
    width = max(len(t.name) for t in timings) + 2
    lines = [
        "",
        f"What ran: the contest upsert, {plural(files, 'version')} of a table ({total:,} rows in all) folded into one",
        "row per uuid (requests summed, every other column its newest non-null value), by three Spark jobs",
        f"on Spark {version} ({args.master}), each writing Parquet; best of {plural(args.repeat, 'run')} each.",
        "",
        f"  {'pipeline':<{width}}{'best time':>10}{'M rows/s':>10}   against the fastest",
    ]
    for t in ranked:
        versus = "fastest" if t is fastest else f"{t.best / fastest.best:.2f}x slower"
        lines.append(f"  {t.name:<{width}}{t.best:>8.2f} s{total / t.best / 1e6:>10.2f}   {versus}")
    lines.append("")
    for name, about in PIPELINES.items():
        lines.append(f"  {name + ':':<{width}}{about}")
    lines.append("")
    if same:
        lines.append(f"Checked: the three outputs hold the same {rows:,} rows (compared with exceptAll both ways).")
    else:
        lines.append("CHECK FAILED: the outputs differ (compared with exceptAll); the times above mean nothing.")
    if fastest is spark_sql:
        lines.append(f"Result: Spark SQL was fastest ({spark_sql.best:.2f} s); merge-core did not win this run.")
    else:
        lines.append(
            f"Result: {fastest.name} was fastest, {spark_sql.best / fastest.best:.2f}x faster than Spark SQL"
            f" ({fastest.best:.2f} s against {spark_sql.best:.2f} s)."
        )
    return "\n".join(lines)
