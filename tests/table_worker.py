"""A separate process acting on a table, for the crash and race tests of test_table_crash.py.

python table_worker.py write PATH WRITER ROWS COMMITS [EVERY]
    # commits write i: keys of WRITER, v = i; with EVERY, compact() after every EVERY-th write
python table_worker.py compact PATH ROUNDS                # full compactions, counting conflicts
"""

import sys

import merge_core as mc
import pyarrow as pa


def write(path: str, writer: int, rows: int, commits: int, every: int = 0) -> None:
    table = mc.Table.open(path)
    keys = pa.array(range(writer * rows, (writer + 1) * rows), pa.int64())
    for i in range(commits):
        data = pa.table(
            {"k": keys, "p": pa.array(["a", "b"] * (rows // 2), pa.string()), "v": pa.array([i] * rows, pa.int64())}
        )
        table.write(data, memory_limit="8MiB")
        print(f"committed {i}", flush=True)
        if every and (i + 1) % every == 0:
            table.compact()  # what the table's mode makes of it: universal picks, postponed rows moved
            print(f"compacted after {i}", flush=True)


def compact(path: str, rounds: int) -> None:
    table = mc.Table.open(path)
    conflicts = 0
    for _ in range(rounds):
        try:
            table.compact(full=True)
        except mc.CommitConflictError:
            conflicts += 1
    print(f"conflicts {conflicts}", flush=True)


if __name__ == "__main__":
    command, path, *args = sys.argv[1:]
    if command == "write":
        write(path, *map(int, args))
    else:
        compact(path, *map(int, args))
