"""The per-process lookup cache (``merge_core.paimon.set_lookup_cache_size``): each data
file's footer and key digests, kept for the next lookup. A lookup answers the same with
the cache on (cold, building a file's digests on its second lookup, and warm) and off as
the whole table read and filtered afterwards, for every key type a read narrows by, with
keys absent, keys in several files and levels, and deleted keys; the cache stays within
its budget; a file replaced at its path is never answered from its predecessor's entry."""

from __future__ import annotations

import datetime
import os
import shutil

import merge_core as mc
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from merge_core.errors import InvalidInputError
from merge_core.paimon import lookup_cache_stats, set_lookup_cache_size

DEFAULT = 128 << 20
KEYS = 3000


@pytest.fixture(autouse=True)
def default_cache():
    """Each test starts with an empty cache of the default size, and leaves one."""
    set_lookup_cache_size(0)
    set_lookup_cache_size(DEFAULT)
    yield
    set_lookup_cache_size(0)
    set_lookup_cache_size(DEFAULT)


def _key_values(data_type: pa.DataType, ids: list[int]) -> list:
    """Keys of `data_type` that sort as `ids` do (ids below 10**6)."""
    if pa.types.is_integer(data_type):
        return [i - KEYS // 2 for i in ids]  # negative keys too
    if pa.types.is_date32(data_type):
        return [datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in ids]
    # A head all keys share, then more than the 7 bytes a digest holds: K and K + "\0"
    # (a lookup's bounds) have one digest.
    text = [f"user-{i:06d}-of-the-table" for i in ids]
    return [t.encode() for t in text] if pa.types.is_binary(data_type) else text


def _rows(data_type: pa.DataType, ids: list[int], version: int) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(_key_values(data_type, ids), data_type),
            "v": [i * 10 + version for i in ids],
            "s": [f"{i}-{version}" * 3 for i in ids],
        }
    )


def _history(path, data_type: pa.DataType) -> mc.Table:
    """Two buckets; interleaved commits, a compaction (files at a higher level), then
    updates and deletes above it: keys in several files and levels, some deleted."""
    schema = pa.schema([pa.field("k", data_type, False), ("v", pa.int64()), ("s", pa.string())])
    table = mc.Table.create(path, schema, key="k", buckets=2)
    for c in range(3):
        table.write(_rows(data_type, list(range(c, KEYS, 3)), c))
    table.compact(full=True)
    table.write(_rows(data_type, list(range(0, KEYS, 7)), 7))
    table.write(_rows(data_type, list(range(1, KEYS, 11)), 11))
    deleted = list(range(5, KEYS, 13))
    table.delete(pa.table({"k": pa.array(_key_values(data_type, deleted), data_type)}))
    return table


def _probes(data_type: pa.DataType) -> list[int]:
    """Ids to look up: present once, updated, deleted, and (by id) absent."""
    return [0, 1, 2, 7, 11, 5, 13 * 5 + 5, KEYS // 2, KEYS - 1, KEYS, KEYS + 50]


def _filters(data_type: pa.DataType) -> list[pc.Expression]:
    values = _key_values(data_type, _probes(data_type))
    k = pc.field("k")
    filters = [k == pa.scalar(v, data_type) for v in values]
    between = _key_values(data_type, [100, 140])
    filters.append((k >= pa.scalar(between[0], data_type)) & (k < pa.scalar(between[1], data_type)))
    filters.append(k.isin(pa.array(_key_values(data_type, [3, 900, 2999]), data_type)))
    if pa.types.is_string(data_type):
        absent = ["user-0001", "", "zzz", "user-000100-of-the-table\0", "user-000100-of-the-tablf"]
        filters += [k == a for a in absent]  # a prefix, below all, above all, between two
    return filters


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["k"])


KEY_TYPES = [pa.int16(), pa.int32(), pa.int64(), pa.date32(), pa.string(), pa.binary()]


@pytest.mark.parametrize("data_type", KEY_TYPES, ids=str)
def test_lookups_with_and_without_the_cache_equal_the_whole_read_filtered(tmp_path, data_type):
    table = _history(tmp_path / "t", data_type)
    whole = table.read().read_all()
    assert whole.num_rows == KEYS - len(range(5, KEYS, 13))
    for expression in _filters(data_type):
        want = _sorted(whole.filter(expression))
        set_lookup_cache_size(0)
        off = table.read(filter=expression).read_all()
        set_lookup_cache_size(DEFAULT)
        cold = table.read(filter=expression).read_all()
        building = table.read(filter=expression).read_all()  # a file's second lookup builds its digests
        warm = table.read(filter=expression)
        assert _sorted(off) == want, expression
        assert _sorted(cold) == want, expression
        assert _sorted(building) == want, expression
        assert _sorted(warm.read_all()) == want, expression
    stats = lookup_cache_stats()
    assert stats["hits"] > 0 and stats["entries"] > 0, stats


def test_a_warm_lookup_reads_less_and_skips_files_without_the_key(tmp_path):
    table = _history(tmp_path / "t", pa.string())
    expression = pc.field("k") == "user-000700-of-the-table"  # in the compacted file and the update of 7s
    set_lookup_cache_size(0)
    off = table.read(filter=expression)
    assert off.read_all().num_rows == 1
    set_lookup_cache_size(DEFAULT)
    for _ in range(2):  # cold, then the files' second lookup: fills the cache
        table.read(filter=expression).read_all()
    hits = lookup_cache_stats()["hits"]
    warm = table.read(filter=expression)
    assert warm.read_all().num_rows == 1
    assert lookup_cache_stats()["hits"] > hits
    assert warm.stats["bytes_read"] < off.stats["bytes_read"], (warm.stats, off.stats)
    # Another key of the same bucket: no footer and no key column read again.
    other = table.read(filter=pc.field("k") == "user-000001-of-the-table")
    assert other.read_all()["v"].to_pylist() == [21]
    assert other.stats["bytes_read"] < off.stats["bytes_read"], other.stats


def test_the_cache_stays_within_its_budget(tmp_path):
    table = _history(tmp_path / "t", pa.int64())
    set_lookup_cache_size(0)
    set_lookup_cache_size(DEFAULT)
    for i in range(0, KEYS, 97):
        table.read(filter=pc.field("k") == i - KEYS // 2).read_all()
    full = lookup_cache_stats()
    assert full["entries"] >= 8, full  # every file's footer and digests, both buckets
    budget = full["bytes"] // 3
    set_lookup_cache_size(budget)
    assert lookup_cache_stats()["bytes"] <= budget
    whole = table.read().read_all()
    for i in range(0, KEYS, 31):
        key = i - KEYS // 2
        got = table.read(filter=pc.field("k") == key).read_all()
        assert _sorted(got) == _sorted(whole.filter(pc.field("k") == key))
        stats = lookup_cache_stats()
        assert 0 < stats["bytes"] <= budget, stats
    assert lookup_cache_stats()["evictions"] > full["evictions"]


def test_a_file_rewritten_at_its_path_is_never_served_stale(tmp_path):
    """The data file of a one-file table is replaced by another table's (other keys at
    other rows, another layout) at the same path, its modification time set back: the
    lookup answers from the new file."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])
    ids = list(range(0, 2000))

    def one_file_table(path, keys: list[int], sign: int) -> tuple[mc.Table, str]:
        table = mc.Table.create(path, schema, key="k", buckets=1)
        table.write(pa.table({"k": keys, "v": [sign * k for k in keys], "s": [f"{k}" * (k % 5) for k in keys]}))
        (data_file,) = [f.path for split in table.plan() for s in split.sections for run in s.runs for f in run]
        return table, data_file

    table, path = one_file_table(tmp_path / "a", ids, 1)
    _, replacement = one_file_table(tmp_path / "b", [2 * i for i in ids], -1)
    for _ in range(3):  # cold, building the file's digests, warm
        assert table.read(filter=pc.field("k") == 500).read_all()["v"].to_pylist() == [500]
    before = os.stat(path)
    shutil.copyfile(replacement, path)  # the same inode, rewritten
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert pq.read_table(path)["k"][250].as_py() == 500
    assert table.read(filter=pc.field("k") == 500).read_all()["v"].to_pylist() == [-500]
    assert table.read(filter=pc.field("k") == 1998).read_all()["v"].to_pylist() == [-1998]


@pytest.mark.parametrize("size", [-1, 1.5, "1MiB", True, None])
def test_a_bad_cache_size_is_refused(size):
    with pytest.raises(InvalidInputError, match="lookup cache"):
        set_lookup_cache_size(size)
    assert lookup_cache_stats()["budget"] == DEFAULT


# -- dictionary pages: a file whose key digests are kept keeps its dictionary pages too ----

DICTIONARY = {"parquet.enable.dictionary": "true", "file.compression": "none"}  # sizes set by the values alone


def _dictionary_rows(ids: list[int], sign: int, letter: str) -> pa.Table:
    """Rows whose value columns are dictionary-encoded: ``s`` has a large dictionary (a
    distinct 40-character string every other row), ``v`` a small one. ``sign`` and
    ``letter`` change the values, not their sizes."""
    return pa.table(
        {
            "k": pa.array(ids, pa.int64()),
            "v": [sign * (i % 100) for i in ids],
            "s": [f"{letter}{i // 2:039d}" for i in ids],
        }
    )


def _one_file_table(path, sign: int = 1, letter: str = "a") -> tuple[mc.Table, str]:
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])
    table = mc.Table.create(path, schema, key="k", buckets=1, options=DICTIONARY)
    table.write(_dictionary_rows(list(range(KEYS)), sign, letter))
    (data_file,) = [f.path for split in table.plan() for s in split.sections for run in s.runs for f in run]
    return table, data_file


def _dictionary_bytes(path: str) -> int:
    """The bytes of a Parquet file's dictionary pages, by its own metadata."""
    metadata = pq.ParquetFile(path).metadata
    chunks = (
        metadata.row_group(g).column(c) for g in range(metadata.num_row_groups) for c in range(metadata.num_columns)
    )
    return sum(c.data_page_offset - c.dictionary_page_offset for c in chunks if c.has_dictionary_page)


def _lookup(table: mc.Table, k: int) -> tuple[list[dict], int]:
    stream = table.read(filter=pc.field("k") == k)
    return stream.read_all().to_pylist(), stream.stats["bytes_read"]


def test_a_warm_hit_reads_no_dictionary_page(tmp_path):
    """Uncached, a hit reads the file's footer, its key pages and, of every column, the
    dictionary page and the pages of its row; warm, only the pages of its row: at least
    the dictionary pages (by the file's own metadata) fewer bytes."""
    table, path = _one_file_table(tmp_path / "t")
    dictionaries = _dictionary_bytes(path)
    assert dictionaries > 40 * KEYS // 2, dictionaries  # most of the file: s's dictionary
    want = [{"k": 1234, "v": 34, "s": f"a{617:039d}"}]
    set_lookup_cache_size(0)
    rows, off = _lookup(table, 1234)
    assert rows == want
    set_lookup_cache_size(DEFAULT)
    for _ in range(2):  # cold, then the file's second lookup: its digests and dictionary pages kept
        assert _lookup(table, 1234)[0] == want
    rows, warm = _lookup(table, 1234)
    assert rows == want
    assert warm <= off - dictionaries, (warm, off, dictionaries)
    rows, other = _lookup(table, 2999)  # another key of the file: its dictionary pages kept too
    assert rows == [{"k": 2999, "v": 99, "s": f"a{1499:039d}"}]
    assert other <= off - dictionaries, (other, off, dictionaries)


def test_a_cache_of_size_0_keeps_no_dictionary_page(tmp_path):
    table, _ = _one_file_table(tmp_path / "t")
    set_lookup_cache_size(0)
    reads = [_lookup(table, 1234) for _ in range(4)]
    assert all(rows == [{"k": 1234, "v": 34, "s": f"a{617:039d}"}] for rows, _ in reads)
    assert len({read for _, read in reads}) == 1, reads  # each lookup reads as much as the first
    stats = lookup_cache_stats()
    assert (stats["entries"], stats["bytes"]) == (0, 0), stats


def test_a_file_rewritten_at_its_path_is_not_answered_from_its_dictionary_pages(tmp_path):
    """The data file is replaced by one of the same size and layout (the same keys; the
    values, and so the dictionaries, differ in content alone), its modification time set
    back: the lookup answers from the new file's dictionary pages."""
    table, path = _one_file_table(tmp_path / "a")
    _, replacement = _one_file_table(tmp_path / "b", sign=-1, letter="b")
    assert os.path.getsize(path) == os.path.getsize(replacement)
    for _ in range(3):  # cold, building the file's digests and keeping its dictionary pages, warm
        assert _lookup(table, 1234)[0] == [{"k": 1234, "v": 34, "s": f"a{617:039d}"}]
    before = os.stat(path)
    shutil.copyfile(replacement, path)  # the same inode, rewritten
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    for _ in range(2):
        assert _lookup(table, 1234)[0] == [{"k": 1234, "v": -34, "s": f"b{617:039d}"}]


def test_lookups_after_another_writer_compacts_read_the_new_files(tmp_path):
    """Warm lookups, then another writer (another Table of the same path) updates keys,
    compacts the bucket into a new file and expires the old snapshots, removing the old
    files: the lookups answer as the whole table read, from the new file."""
    table, old = _one_file_table(tmp_path / "t")
    for _ in range(3):
        assert _lookup(table, 1234)[0] == [{"k": 1234, "v": 34, "s": f"a{617:039d}"}]
    other = mc.Table.open(tmp_path / "t")
    other.write(_dictionary_rows(list(range(0, KEYS, 2)), -1, "c"))
    other.compact(full=True)
    other.expire(keep_snapshots=1, orphan_age=0)
    assert not os.path.exists(old)
    whole = mc.Table.open(tmp_path / "t").read().read_all()
    for k in (1234, 1235, 2999):
        for _ in range(3):
            assert _lookup(table, k)[0] == whole.filter(pc.field("k") == k).to_pylist()


def test_warm_hits_in_zstd_files_with_page_checksums_read_the_rows_as_stored(tmp_path):
    """The cache keeps a zstd file's dictionary pages as raw zstd blocks, their headers
    rewritten with the new size and CRC (merge-core's writer stores each page's CRC, which
    the reader checks): warm hits read the same rows as reads without the cache, and the
    pages kept take their decompressed size."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])
    table = mc.Table.create(
        tmp_path / "t", schema, key="k", buckets=1, options={**DICTIONARY, "file.compression": "zstd"}
    )
    table.write(_dictionary_rows(list(range(KEYS)), 1, "a"))
    (path,) = [f.path for split in table.plan() for s in split.sections for run in s.runs for f in run]
    plain = (KEYS // 2) * (4 + 40)  # s's dictionary decompressed: a length and 40 characters a value
    assert _dictionary_bytes(path) < plain // 2, "the dictionary pages are compressed"
    keys = [0, 1, 1234, 2999, KEYS - 1, KEYS + 5]
    set_lookup_cache_size(0)
    want = {k: _lookup(table, k)[0] for k in keys}
    assert want[1234] == [{"k": 1234, "v": 34, "s": f"a{617:039d}"}] and want[KEYS + 5] == []
    set_lookup_cache_size(DEFAULT)
    for _ in range(3):  # cold, building the digests (and keeping the dictionary pages), warm
        assert {k: _lookup(table, k)[0] for k in keys} == want
    assert lookup_cache_stats()["bytes"] > plain
