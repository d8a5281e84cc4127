"""A data file with a flipped bit: a read fails with ``CorruptTableError`` naming the file,
or returns exactly the rows it held (a flip in bytes nothing reads); never other values.
merge-core writes a CRC32 of every page (as Parquet defines it) and its Rust decoder
verifies every page that carries one, Java-written files included."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from parquet_pages import page_checksums

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])


def table_rows(table: mc.Table, threads: int) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.read(threads=threads).read_all().to_pylist())


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[tuple]]:
    root = tmp_path_factory.mktemp("damaged") / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1)
    for i in range(2):
        n = 30_000
        table.write(pa.table({"k": range(i, n * 2, 2), "v": range(n), "s": [f"value {j}" for j in range(n)]}))
    return root, table_rows(table, 1)


def test_every_page_of_a_written_file_carries_a_checksum(written):
    root, _ = written
    for path in root.rglob("data-*.parquet"):
        checksums = page_checksums(path)
        assert checksums and None not in checksums, path


@pytest.mark.parametrize("threads", [1, 2])
def test_a_flipped_bit_is_an_error_naming_the_file_or_changes_nothing(written, tmp_path, threads):
    root, want = written
    rng = random.Random(threads)
    errors = 0
    for attempt in range(24):
        copy = tmp_path / f"copy{attempt}" / "db.db" / "t"
        shutil.copytree(root, copy)
        files = sorted(copy.rglob("data-*.parquet"))
        victim = rng.choice(files)
        data = bytearray(victim.read_bytes())
        # Page bytes mostly (the first 90% of the file), sometimes the footer.
        end = len(data) if rng.random() < 0.25 else int(len(data) * 0.9)
        position = rng.randrange(4, end - 8)
        data[position] ^= 1 << rng.randrange(8)
        victim.write_bytes(bytes(data))
        try:
            got = table_rows(mc.Table.open(copy), threads)
        except mc.CorruptTableError as e:
            assert victim.name in str(e), e
            errors += 1
            continue
        assert got == want, f"a flip at byte {position} of {victim.name} changed the rows"
    assert errors >= 12, "most flips land in page bytes, which their checksums guard"


def test_a_damaged_page_of_a_parquet_run_given_to_merge_is_refused(tmp_path):
    """Any Parquet file merge-core decodes, not only a table's: a page with a checksum is
    verified (pages written without one, as by older writers, read unverified)."""
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"k": range(1000)}), path, write_page_checksum=True, compression="none")
    assert mc.merge([str(path)], key="k").read_all().num_rows == 1000
    data = bytearray(path.read_bytes())
    data[40] ^= 0x10  # inside the first page's values
    path.write_bytes(bytes(data))
    with pytest.raises(mc.CorruptTableError, match="f.parquet.*CRC checksum mismatch"):
        mc.merge([str(path)], key="k").read_all()
