"""The contest upsert (seed 003) on Spark: merge-core's pipeline against Spark SQL's plan
(union + groupBy with max_by and sum), on the same session and the same files.

    python benches/contest_bench.py                        # 2M base rows + 10 x 400k, local[2]
    python benches/contest_bench.py --rows 200000 --out docs/benchmarks/contest.md
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import pyarrow.parquet as pq


def direct_upsert(spark, paths: list[str], out: str, buckets: int) -> None:
    """A prototype, to size an alternative design (not part of the library): Spark only
    schedules one task per key bucket; each task reads every version file itself, keeps
    its bucket, folds with merge-core and writes its own Parquet part. No Spark shuffle,
    no row <-> Arrow conversion. Buckets here use the key's first byte (uuids are hex)."""
    import merge_core as mc
    import merge_core.spark as mcs
    import numpy as np
    import pyarrow as pa

    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):
        os.remove(os.path.join(out, old))

    def task(bucket_ids):
        for bucket in bucket_ids:
            buffer = None
            for version, path in enumerate(paths):
                table = pq.read_table(path)
                keys = table.column("uuid").combine_chunks()
                offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset : keys.offset + len(keys)]
                first = np.frombuffer(keys.buffers()[2], dtype=np.uint8)[offsets]
                mine = table.filter(pa.array(first % buckets == bucket))
                mine = mine.append_column(mcs.VERSION_COLUMN, pa.array(np.full(mine.num_rows, version, np.int32)))
                if version > 0:
                    name = mine.column("name")
                    cleaned = pa.compute.if_else(pa.compute.equal(name, "null"), pa.scalar(None, pa.string()), name)
                    mine = mine.set_column(mine.schema.get_field_index("name"), "name", cleaned)
                if buffer is None:
                    buffer = mc.SortBuffer(
                        mine.schema,
                        key="uuid",
                        sequence=mcs.VERSION_COLUMN,
                        merge=mcs.CONTEST["merge"],
                        memory_limit="512MiB",
                    )
                buffer.write(mine)
            result = buffer.finish().read_all().drop_columns([mcs.VERSION_COLUMN])
            pq.write_table(result, os.path.join(out, f"part-{bucket:05d}.parquet"))
            yield result.num_rows

    spark.sparkContext.parallelize(range(buckets), buckets).mapPartitions(task).sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--increments", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out")
    args = parser.parse_args()

    import merge_core.spark as mcs
    from merge_core import contest

    settings = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "4g"}
    spark = mcs.local_session(args.master, "merge-core-bench", **settings)
    # What local_session sets besides, for the report.
    settings = {"spark.sql.execution.arrow.maxRecordsPerBatch": "65536", "spark.driver.host": "127.0.0.1", **settings}
    with tempfile.TemporaryDirectory() as tmp:
        paths = contest.generate(os.path.join(tmp, "data"), args.rows, args.increments, seed=7)
        rows_in = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
        versions = [spark.read.parquet(p) for p in paths]
        pipelines = {
            "merge-core": lambda out: mcs.upsert(versions, key="uuid", **mcs.CONTEST).write.parquet(out),
            "spark-sql": lambda out: mcs.contest_upsert_spark_sql(versions).write.parquet(out),
            "prototype: no shuffle": lambda out: direct_upsert(spark, paths, out, buckets=2),
        }
        times: dict[str, list[float]] = {name: [] for name in pipelines}
        for run in range(args.repeat):
            for i, (name, build) in enumerate(pipelines.items()):
                out = os.path.join(tmp, f"out-{i}-{run}")
                start = time.perf_counter()
                build(out)
                times[name].append(time.perf_counter() - start)
                print(f"{name:22} {times[name][-1]:7.2f}s", flush=True)
        outputs = [spark.read.parquet(os.path.join(tmp, f"out-{i}-0")) for i in range(len(pipelines))]
        equal = all(
            a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty() for a, b in zip(outputs, outputs[1:], strict=False)
        )
    best = {name: min(t) for name, t in times.items()}
    lines = [
        "# Contest upsert on Spark: merge-core vs Spark SQL",
        "",
        f"- Data: {args.rows:,} base rows + {args.increments} increments of {args.rows // 5:,} "
        f"({rows_in:,} rows, 11 Parquet files), generated by `merge-core gen`.",
        f"- Spark {spark.version}, master {args.master}, settings: "
        + ", ".join(f"`{k}={v}`" for k, v in settings.items()),
        f"- Best of {args.repeat} runs each, alternating; output written as Parquet. All results equal: {equal}.",
        "- `prototype: no shuffle` sizes an alternative design, not the library's pipeline: Spark only schedules"
        " one task per key bucket, and each task reads the files itself, folds with merge-core and writes its part.",
        "",
        "| pipeline | best seconds | all runs | M input rows/s | time vs merge-core |",
        "|---|---:|---|---:|---:|",
    ]
    for name, seconds in best.items():
        runs = ", ".join(f"{t:.1f}" for t in times[name])
        lines.append(
            f"| {name} | {seconds:.2f} | {runs} | {rows_in / seconds / 1e6:.2f} | {seconds / best['merge-core']:.2f}x |"
        )
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    spark.stop()


if __name__ == "__main__":
    main()
