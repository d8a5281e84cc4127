"""The pieces of Paimon's format the reader decodes by itself: BinaryRows (bytes taken
from Java-written manifests), partition directories of every partition type (tables
written by pypaimon), and deletion-vector files in both bitmap widths."""

from __future__ import annotations

import datetime
import decimal
import struct
import zlib

import merge_core as mc
import numpy as np
import pyarrow as pa
import pytest
from helpers import pypaimon_commit
from merge_core.fs import Location, resolve
from merge_core.paimon._binary import decode
from merge_core.paimon._dv import MAGIC_32, MAGIC_64, deleted_positions
from merge_core.paimon._meta import DeletionVector
from merge_core.paimon._paths import bucket_dir, java_floating, local_date_time
from merge_core.paimon._schema import Field, TableSchema, arrow_type
from pyroaring import BitMap, BitMap64


def test_binary_rows_from_java_written_manifests():
    # _PARTITION f1 INT = 10; _MIN_KEY ("Alice", 1) with the string inline; _MAX_KEY with a
    # 104-byte string in the variable part (offset 24 = header + two slots).
    assert decode(bytes.fromhex("00000001" + "0000000000000000" + "0a00000000000000"), [pa.int32()]) == (10,)
    alice = "00000002" + "0000000000000000" + "416c696365000085" + "0100000000000000"
    assert decode(bytes.fromhex(alice), [pa.string(), pa.int32()]) == ("Alice", 1)
    text = b"Two roads diverged in a wood, and I took the one less traveled by, And that has made all the difference."
    row = struct.pack(">i", 2) + bytes(8) + struct.pack("<II", len(text), 24) + struct.pack("<q", 1) + text + bytes(8)
    assert decode(row, [pa.string(), pa.int32()]) == (text.decode(), 1)
    assert decode(bytes.fromhex("00000000" + "0000000000000000"), []) == ()
    null_int = "00000001" + "0001000000000000" + "0000000000000000"
    assert decode(bytes.fromhex(null_int), [pa.int32()]) == (None,)


def test_binary_rows_of_every_key_type():
    def row(*slots: bytes, var: bytes = b"") -> bytes:
        return struct.pack(">i", len(slots)) + bytes(8) + b"".join(slots) + var

    cases = [
        (pa.bool_(), (1).to_bytes(8, "little"), True),
        (pa.int8(), struct.pack("<b", -3) + bytes(7), -3),
        (pa.int16(), struct.pack("<h", -300) + bytes(6), -300),
        (pa.int64(), struct.pack("<q", -(2**40)), -(2**40)),
        (pa.float64(), struct.pack("<d", 2.5), 2.5),
        (pa.date32(), struct.pack("<i", 19358) + bytes(4), datetime.date(2023, 1, 1)),
        (pa.decimal128(10, 2), struct.pack("<q", 12345), decimal.Decimal("123.45")),
        (pa.timestamp("ms"), struct.pack("<q", 1_000), datetime.datetime(1970, 1, 1, 0, 0, 1)),
        (pa.binary(), b"ab" + bytes(5) + bytes([0x82]), b"ab"),
    ]
    for data_type, slot, value in cases:
        assert decode(row(slot), [data_type]) == (value,), data_type
    # DECIMAL(20, 0): big-endian two's complement in the variable part
    big = (-(10**19)).to_bytes(9, "big", signed=True)
    slot = struct.pack("<Q", (16 << 32) | len(big))
    assert decode(row(slot, var=big + bytes(16 - len(big))), [pa.decimal128(20, 0)]) == (decimal.Decimal(-(10**19)),)
    with pytest.raises(mc.CorruptTableError, match="cut short"):
        decode(bytes.fromhex("00000001" + "00"), [pa.int32()])


def test_paimon_type_strings():
    assert arrow_type("INT NOT NULL") == (pa.int32(), False)
    assert arrow_type("VARCHAR(20)") == (pa.string(), True)
    assert arrow_type("DECIMAL(10, 2)") == (pa.decimal128(10, 2), True)
    assert arrow_type("TIMESTAMP(6) WITH LOCAL TIME ZONE") == (pa.timestamp("us", tz="UTC"), True)
    assert arrow_type("TIMESTAMP_LTZ(3)") == (pa.timestamp("ms", tz="UTC"), True)
    assert arrow_type({"type": "ARRAY", "element": "INT"})[0] == pa.list_(pa.field("element", pa.int32()))
    with pytest.raises(mc.UnsupportedFeatureError, match="VARIANT"):
        arrow_type("VARIANT")


def test_partition_directories_as_paimon_names_them():
    fields = (Field(0, "d", pa.date32(), False), Field(1, "s", pa.string(), True), Field(2, "x", pa.float64(), True))
    schema = TableSchema(0, fields, ("d", "s", "x"), (), {})
    day = datetime.date(2023, 1, 1)
    assert bucket_dir(schema, [day, "a/b=c", None], 0) == "d=19358/s=a%2Fb%3Dc/x=__DEFAULT_PARTITION__/bucket-0"
    assert bucket_dir(schema, [day, " ", 2.5], 3) == "d=19358/s=__DEFAULT_PARTITION__/x=2.5/bucket-3"
    assert local_date_time(1714979280000, 0) == "2024-05-06T07:08"
    assert local_date_time(1714979289500, 0) == "2024-05-06T07:08:09.500"
    assert java_floating(1e10, single=False) == "1.0E10"


@pytest.mark.parametrize(
    "partition_type, values",
    [
        (pa.int32(), [1, -7, 300]),
        (pa.int64(), [2**40, -1]),
        (pa.string(), ["a", "b/c", "x y", "é"]),
        (pa.date32(), [datetime.date(2024, 1, 1), datetime.date(1999, 12, 31)]),
        (pa.bool_(), [True, False]),
    ],
)
def test_partitions_of_each_type_written_by_pypaimon(tmp_path, partition_type, values):
    pypaimon = pytest.importorskip("pypaimon")
    schema = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), pa.field("p", partition_type, nullable=False), ("v", pa.int64())]
    )
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    definition = pypaimon.Schema.from_pyarrow_schema(
        schema, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "2"}
    )
    catalog.create_table("db.t", definition, False)
    rows = [{"k": k, "p": p, "v": k * 10} for k in range(4) for p in values]
    pypaimon_commit(catalog.get_table("db.t"), rows, schema)
    got = mc.Table.open(tmp_path / "db.db" / "t").read().read_all()
    assert sorted(got.to_pylist(), key=lambda r: (r["k"], str(r["p"]))) == sorted(
        rows, key=lambda r: (r["k"], str(r["p"]))
    )
    one = mc.Table.open(tmp_path / "db.db" / "t").read(partitions={"p": values[0]}).read_all()
    assert {r["p"] for r in one.to_pylist()} == {values[0]}


def index_file(tmp_path, entries: list[tuple[bytes, int]]) -> tuple[Location, list[tuple[int, int]]]:
    """An index file of serialized bitmaps (bitmap bytes, magic): its path and each entry's
    (offset, manifest length), framed as Paimon's DeletionFileWriter frames them."""
    out, ranges = bytearray([1]), []
    for bitmap, magic in entries:
        wide = magic == MAGIC_64
        magic_bytes = struct.pack("<I" if wide else ">I", magic)
        body = magic_bytes + bitmap
        ranges.append((len(out), len(body) + (8 if wide else 0)))
        out += struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    path = tmp_path / "index-0"
    path.write_bytes(bytes(out))
    return resolve(path), ranges


def test_deletion_vectors_of_both_widths(tmp_path):
    narrow = BitMap([0, 4, 70000])
    wide = BitMap64([1, 2**33 + 5])
    path, ranges = index_file(tmp_path, [(narrow.serialize(), MAGIC_32), (wide.serialize(), MAGIC_64)])
    first = deleted_positions(DeletionVector(path, *ranges[0]))
    second = deleted_positions(DeletionVector(path, *ranges[1]))
    assert first.tolist() == [0, 4, 70000] and first.dtype == np.uint64
    assert second.tolist() == [1, 2**33 + 5]
    with pytest.raises(mc.CorruptTableError, match="length or magic"):
        deleted_positions(DeletionVector(path, ranges[0][0], ranges[0][1] + 1))
    with pytest.raises(mc.CorruptTableError, match="cut short"):
        deleted_positions(DeletionVector(path, 10_000, 8))
