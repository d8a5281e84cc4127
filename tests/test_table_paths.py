"""Where a table's files go: partition directories named exactly as Paimon names them,
for every partition type and both ``partition.legacy-name`` settings (against pypaimon
2.1, pypaimon-rust, and the names Java prints), and no path ever outside the table."""

from __future__ import annotations

import datetime
import decimal
import json
import shutil
from pathlib import Path

import fastavro
import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_commit, pypaimon_rust_rows
from merge_core.paimon import _binary
from merge_core.paimon._commit import CommitMessage
from merge_core.paimon._paths import Layout
from merge_core.paimon._schema import TableSchema

pypaimon = pytest.importorskip("pypaimon")
from pypaimon.schema.data_types import AtomicType, DataField  # noqa: E402

D = decimal.Decimal
UTC = datetime.timezone.utc


def ts(*parts: int) -> datetime.datetime:
    return datetime.datetime(*parts)


# Each Paimon type merge-core partitions by: the Arrow type of its data, edge values, and
# the directory of each value (in order) with partition.legacy-name true, then false, as
# Paimon's Java code names them (Float/Double.toString of JDK 19+, LocalDateTime.toString,
# DateTimeUtils' casts to STRING, BigDecimal.toPlainString; checked against Java 25).
# ``None``: merge-core refuses that setting for the type (see test_refused_partition_types);
# ``SAME``: the names do not depend on the setting.
SAME = "same"
CASES = {
    "BOOLEAN": (pa.bool_(), [True, False], ["true", "false"], SAME),
    "TINYINT": (pa.int8(), [-128, 0, 127], ["-128", "0", "127"], SAME),
    "SMALLINT": (pa.int16(), [-32768, -1, 32767], ["-32768", "-1", "32767"], SAME),
    "INT": (pa.int32(), [-(2**31), 7, 2**31 - 1], ["-2147483648", "7", "2147483647"], SAME),
    "BIGINT": (
        pa.int64(),
        [-(2**63), 0, 2**63 - 1],
        ["-9223372036854775808", "0", "9223372036854775807"],
        SAME,
    ),
    "FLOAT": (
        pa.float32(),
        [1.1, -0.0, -2.5, 1e-45, 3.4028235e38, 1e10, 1e-5, 0.001, 16777216.0, 9999999.0, 1e7, 0.1],
        [
            "1.1",
            "-0.0",
            "-2.5",
            "1.4E-45",
            "3.4028235E38",
            "1.0E10",
            "1.0E-5",
            "0.001",
            "1.6777216E7",
            "9999999.0",
            "1.0E7",
            "0.1",
        ],
        SAME,
    ),
    "DOUBLE": (
        pa.float64(),
        [1.1, -0.0, 5e-324, 1.7976931348623157e308, 2e23, 1e-3, 9.999999e-4, 123456789.0, -1e-300, 0.30000000000000004],
        [
            "1.1",
            "-0.0",
            "4.9E-324",
            "1.7976931348623157E308",
            "2.0E23",
            "0.001",
            "9.999999E-4",
            "1.23456789E8",
            "-1.0E-300",
            "0.30000000000000004",
        ],
        SAME,
    ),
    "DECIMAL(10, 2)": (
        pa.decimal128(10, 2),
        [D("1.50"), D("-0.05"), D("0.00"), D("-99999999.99")],
        ["1.50", "-0.05", "0.00", "-99999999.99"],
        SAME,
    ),
    "DECIMAL(38, 4)": (
        pa.decimal128(38, 4),
        [D("1234567890123456789012345678901234.5678"), D("-0.0001"), D("7.0000")],
        ["1234567890123456789012345678901234.5678", "-0.0001", "7.0000"],
        SAME,
    ),
    "STRING": (
        pa.string(),
        ["a/b=c", "", " \t", "x:y%z#?*'\"[]{}^\\", "é日本", "..", ".", "\x01\x7f", "a b", "null"],
        [
            "a%2Fb%3Dc",
            "__DEFAULT_PARTITION__",
            "__DEFAULT_PARTITION__",
            "x%3Ay%25z%23%3F%2A%27%22%5B%5D%7B%7D%5E%5C",
            "é日本",
            "..",
            ".",
            "%01%7F",
            "a b",
            "null",
        ],
        SAME,
    ),
    "VARCHAR(10)": (pa.string(), ["a/b", "", "x"], ["a%2Fb", "__DEFAULT_PARTITION__", "x"], SAME),
    "CHAR(3)": (pa.string(), ["ab ", "xyz"], ["ab ", "xyz"], SAME),
    "DATE": (
        pa.date32(),
        [datetime.date(2024, 1, 1), datetime.date(1969, 12, 31), datetime.date(1, 1, 1), datetime.date(9999, 12, 31)],
        ["19723", "-1", "-719162", "2932896"],
        ["2024-01-01", "1969-12-31", "0001-01-01", "9999-12-31"],
    ),
    "TIME(0)": (
        pa.time32("ms"),
        [datetime.time(0, 0), datetime.time(1, 2, 3), datetime.time(23, 59, 59)],
        ["0", "3723000", "86399000"],
        ["00%3A00%3A00", "01%3A02%3A03", "23%3A59%3A59"],
    ),
    "TIME(3)": (
        pa.time32("ms"),
        [datetime.time(0, 0), datetime.time(1, 2, 3, 450000), datetime.time(23, 59, 59, 999000)],
        ["0", "3723450", "86399999"],
        ["00%3A00%3A00.0", "01%3A02%3A03.45", "23%3A59%3A59.999"],
    ),
    "TIMESTAMP(0)": (
        pa.timestamp("s"),
        [ts(2024, 1, 1), ts(1900, 1, 1, 12, 30, 1)],
        ["2024-01-01T00%3A00", "1900-01-01T12%3A30%3A01"],
        ["2024-01-01 00%3A00%3A00", "1900-01-01 12%3A30%3A01"],
    ),
    "TIMESTAMP(3)": (
        pa.timestamp("ms"),
        [ts(2024, 1, 1), ts(2024, 1, 1, 0, 0, 1), ts(1960, 6, 1, 12, 30, 0, 500000), ts(1, 1, 1)],
        ["2024-01-01T00%3A00", "2024-01-01T00%3A00%3A01", "1960-06-01T12%3A30%3A00.500", "0001-01-01T00%3A00"],
        [
            "2024-01-01 00%3A00%3A00.000",
            "2024-01-01 00%3A00%3A01.000",
            "1960-06-01 12%3A30%3A00.500",
            "0001-01-01 00%3A00%3A00.000",
        ],
    ),
    "TIMESTAMP(6)": (
        pa.timestamp("us"),
        [ts(2024, 1, 1, 0, 0, 0, 123000), ts(2024, 1, 1, 0, 0, 0, 123456), ts(1969, 12, 31, 23, 59, 59, 999999)],
        ["2024-01-01T00%3A00%3A00.123", "2024-01-01T00%3A00%3A00.123456", "1969-12-31T23%3A59%3A59.999999"],
        ["2024-01-01 00%3A00%3A00.123000", "2024-01-01 00%3A00%3A00.123456", "1969-12-31 23%3A59%3A59.999999"],
    ),
    "TIMESTAMP(9)": (
        pa.timestamp("ns"),
        [ts(2024, 1, 1, 0, 0, 0, 120000), ts(1969, 12, 31, 23, 59, 59, 999999)],
        ["2024-01-01T00%3A00%3A00.120", "1969-12-31T23%3A59%3A59.999999"],
        ["2024-01-01 00%3A00%3A00.120000000", "1969-12-31 23%3A59%3A59.999999000"],
    ),
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": (
        pa.timestamp("us", tz="UTC"),
        [datetime.datetime(2024, 1, 1, tzinfo=UTC), datetime.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)],
        ["2024-01-01T00%3A00", "1969-12-31T23%3A59%3A59.500"],
        None,
    ),
}


def _table(warehouse: Path, name: str, paimon_type: str, legacy: bool) -> Path:
    """An empty table made by pypaimon, partitioned by ``p`` of ``paimon_type``."""
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    fields = [
        DataField(0, "k", AtomicType("BIGINT", False)),
        DataField(1, "p", AtomicType(paimon_type, False)),
        DataField(2, "v", AtomicType("BIGINT")),
    ]
    options = {"bucket": "2", "partition.legacy-name": str(legacy).lower()}
    catalog.create_table(f"db.{name}", pypaimon.Schema(fields, ["p"], ["p", "k"], options), False)
    return warehouse / "db.db" / name


def _schema(arrow_type: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field("k", pa.int64(), False), pa.field("p", arrow_type, False), ("v", pa.int64())])


def _directories(root: Path) -> list[str]:
    return sorted(d.name.removeprefix("p=") for d in root.iterdir() if d.name.startswith("p="))


def _same(read: pa.Table | list[dict], rows: list[dict], schema: pa.Schema) -> bool:
    """Whether a read gave ``rows`` (both in ``schema``'s types, in key order)."""
    got = read if isinstance(read, pa.Table) else pa.Table.from_pylist(read)
    got = got.select(schema.names).cast(schema).sort_by("k")
    return got.equals(pa.Table.from_pylist(rows, schema=schema).sort_by("k"))


def _pypaimon_rows(root: Path) -> list[dict]:
    table = pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)}).get_table(f"db.{root.name}")
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


PAIRS = [(t, legacy) for t, case in CASES.items() for legacy in (True, False) if case[3 - legacy] is not None]


@pytest.mark.parametrize("paimon_type, legacy", PAIRS, ids=[f"{t}-legacy={legacy}" for t, legacy in PAIRS])
def test_partitions_of_every_type_named_as_paimon_names_them(tmp_path, paimon_type, legacy):
    """pypaimon and merge-core write the same values to one table in turns: merge-core adds
    no directory of its own, and merge-core, pypaimon and pypaimon-rust read every row."""
    arrow_type, values, legacy_names, cast_names = CASES[paimon_type]
    root = _table(tmp_path, "t", paimon_type, legacy)
    schema = _schema(arrow_type)
    theirs = [{"k": i, "p": v, "v": i} for i, v in enumerate(values)]
    pypaimon_commit(pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t"), theirs, schema)
    after_pypaimon = _directories(root)
    ours = [{"k": 100 + i, "p": v, "v": -i} for i, v in enumerate(values)]
    table = mc.Table.open(root)
    assert _same(table.read().read_all(), theirs, schema)
    table.write(pa.Table.from_pylist(ours, schema=schema))
    names = legacy_names if legacy or cast_names == SAME else cast_names
    assert _directories(root) == after_pypaimon == sorted(set(names))
    assert _same(table.read().read_all(), theirs + ours, schema)
    assert _same(_pypaimon_rows(root), theirs + ours, schema)
    if (paimon_type, legacy) not in RUST_CANNOT_READ:
        assert _same(pypaimon_rust_rows(root), theirs + ours, schema)


# pypaimon-rust 0.4 fails on these by itself, whoever wrote the files: it refuses FLOAT and
# DOUBLE partition keys, and names TIME(3) '00:00:00' where Java writes '00:00:00.0'.
RUST_CANNOT_READ = {("FLOAT", True), ("FLOAT", False), ("DOUBLE", True), ("DOUBLE", False), ("TIME(3)", False)}


@pytest.mark.parametrize(
    "arrow_type, values, names",
    [
        (
            pa.float32(),
            [float("nan"), float("inf"), float("-inf"), 0.0, -0.0],
            ["NaN", "Infinity", "-Infinity", "0.0", "-0.0"],
        ),
        (pa.float64(), [float("nan"), float("-inf"), 0.0, -0.0], ["NaN", "-Infinity", "0.0", "-0.0"]),
        (pa.string(), ["\u00a0", "\u202f", "\x85"], ["\u00a0", "\u202f", "\x85"]),
        (
            pa.timestamp("ns"),
            [1704067200123456789, -1],
            ["2024-01-01T00%3A00%3A00.123456789", "1969-12-31T23%3A59%3A59.999999999"],
        ),
    ],
    ids=["float", "double", "string", "nanoseconds"],
)
def test_values_pypaimon_names_otherwise_get_java_names(tmp_path, arrow_type, values, names):
    """Where pypaimon 2.1 parts from Java, merge-core follows Java (docs/table-format.md):
    pypaimon names NaN and the infinities 'nan', 'inf', '-inf', puts 0.0 and -0.0 in one
    partition, counts non-breaking spaces as blank (the default partition), and drops
    the nanoseconds of a timestamp; Java does none of these."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, _schema(arrow_type), key="k", partition_by="p", buckets=1)
    rows = pa.table({"k": list(range(len(values))), "p": pa.array(values, arrow_type), "v": [0] * len(values)})
    table.write(rows)
    assert _directories(root) == sorted(names)
    got = table.read().read_all().sort_by("k")
    assert got.column("p").cast(pa.string()).equals(rows.column("p").cast(pa.string()))


def test_binary_partitions_with_cast_names(tmp_path):
    """BINARY partitions with partition.legacy-name = false: Java casts the bytes to a
    string (UTF-8); pypaimon 2.1 names them by Python's repr (``b'ab'``) instead."""
    root = tmp_path / "db.db" / "t"
    options = {"partition.legacy-name": "false"}
    table = mc.Table.create(root, _schema(pa.binary()), key="k", partition_by="p", buckets=1, options=options)
    rows = pa.table({"k": [1, 2, 3], "p": [b"ab", b"a/b", b"\xc3\xa9"], "v": [1, 2, 3]}, schema=_schema(pa.binary()))
    table.write(rows)
    assert _directories(root) == sorted(["ab", "a%2Fb", "é"])
    assert table.read().read_all().sort_by("k").to_pylist() == rows.to_pylist()
    with pytest.raises(mc.UnsupportedFeatureError, match="not UTF-8"):
        table.write(pa.table({"k": [4], "p": [b"\xff"], "v": [4]}, schema=_schema(pa.binary())))
    assert _directories(root) == sorted(["ab", "a%2Fb", "é"])


def test_null_and_blank_values_name_the_default_partition(tmp_path):
    """pypaimon writes a null partition value (Paimon's primary key would refuse it);
    null, empty and blank values all go to ``partition.default-name``, escaped."""
    options = {"partition.default-name": "no value/here"}
    schema = _schema(pa.string())
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    definition = pypaimon.Schema.from_pyarrow_schema(schema, ["p"], ["p", "k"], {"bucket": "1", **options})
    catalog.create_table("db.t", definition, False)
    root = tmp_path / "db.db" / "t"
    theirs = [{"k": 1, "p": None, "v": 1}, {"k": 2, "p": "", "v": 2}, {"k": 3, "p": "x", "v": 3}]
    pypaimon_commit(catalog.get_table("db.t"), theirs, pa.schema([f.with_nullable(True) for f in schema]))
    table = mc.Table.open(root)
    table.write(pa.table({"k": [4, 5], "p": [" ", "\t\n"], "v": [4, 5]}, schema=schema))
    assert _directories(root) == ["no value%2Fhere", "x"]
    got = {r["k"]: r["p"] for r in table.read().read_all().to_pylist()}
    assert got == {1: None, 2: "", 3: "x", 4: " ", 5: "\t\n"}
    assert {r["k"]: r["p"] for r in _pypaimon_rows(root).to_pylist()} == got


def _layout(paimon_type: str, legacy: bool = True) -> Layout:
    fields = [{"id": 0, "name": "p", "type": paimon_type}]
    options = {"partition.legacy-name": str(legacy).lower()}
    text = json.dumps({"version": 3, "id": 0, "fields": fields, "partitionKeys": ["p"], "options": options})
    return Layout(TableSchema.parse(text, "a test schema"))


def _name(layout: Layout, value) -> str:
    return layout.partition_dir(_binary.encode([value], layout.types)).removeprefix("p=")


# Values as Paimon holds them (timestamps as integers of their unit, dates as day numbers,
# times as milliseconds), and their directories as Java names them (checked against Java
# 25 and Paimon's DateTimeUtils), beyond what pypaimon can write.
JAVA_NAMES = [
    ("TIMESTAMP(9)", True, 1704067200123456789, "2024-01-01T00%3A00%3A00.123456789"),
    ("TIMESTAMP(9)", False, 1704067200123456789, "2024-01-01 00%3A00%3A00.123456789"),
    ("TIMESTAMP(9)", True, -1, "1969-12-31T23%3A59%3A59.999999999"),
    ("TIMESTAMP(6)", True, -62135596800000001, "0000-12-31T23%3A59%3A59.999999"),
    ("TIMESTAMP(6)", False, -62135596800000001, "0000-12-31 23%3A59%3A59.999999"),
    ("TIMESTAMP(3)", True, -62167219200001, "-0001-12-31T23%3A59%3A59.999"),
    ("TIMESTAMP(3)", True, 253402300800000, "+10000-01-01T00%3A00"),
    ("TIMESTAMP(0)", False, 500, "1970-01-01 00%3A00%3A00.5"),
    ("DATE", True, 2932897, "2932897"),
    ("TIME(3)", False, 1, "00%3A00%3A00.001"),
    ("TIME(2)", False, 101, "00%3A00%3A00.10"),
    ("TIME(9)", False, 45296789, "12%3A34%3A56.789"),
    ("TIME", False, 45296789, "12%3A34%3A56"),
    ("DOUBLE", True, 2.2250738585072014e-308, "2.2250738585072014E-308"),
    ("STRING", True, "\u3000\x1c", "__DEFAULT_PARTITION__"),
    ("STRING", True, None, "__DEFAULT_PARTITION__"),
    ("DECIMAL(38, 0)", True, D(10**37), "10000000000000000000000000000000000000"),
    ("DECIMAL(5, 5)", False, D("0.00001"), "0.00001"),
    ("VARBINARY(8)", False, b"\xc3\xa9/", "é%2F"),
]


@pytest.mark.parametrize("paimon_type, legacy, value, name", JAVA_NAMES)
def test_directory_names_java_gives_values_pypaimon_cannot_write(paimon_type, legacy, value, name):
    assert _name(_layout(paimon_type, legacy), value) == name


@pytest.mark.parametrize(
    "paimon_type, legacy, value", [("DATE", False, 2932897), ("TIMESTAMP(3)", False, -62167219200001)]
)
def test_years_java_cannot_cast_to_four_digits_are_refused(paimon_type, legacy, value):
    """Java's cast writes four digits of the year: '0000-01-01' for the year 10000 and
    '000/-12-31' for the year -1, so no directory of merge-core's would match."""
    with pytest.raises(mc.UnsupportedFeatureError, match="year"):
        _name(_layout(paimon_type, legacy), value)


@pytest.mark.parametrize(
    "arrow_type, options, match",
    [
        (pa.binary(), {}, "identity of the byte array"),
        (pa.timestamp("us", tz="UTC"), {"partition.legacy-name": "false"}, "time zone"),
        (pa.string(), {"partition.legacy-name": "maybe"}, "'partition.legacy-name' must be true or false"),
        (pa.string(), {"partition.default-name": ""}, "'partition.default-name' must not be empty"),
    ],
    ids=["binary-legacy", "ltz-cast", "legacy-not-boolean", "empty-default"],
)
def test_refused_partition_types_and_options(tmp_path, arrow_type, options, match):
    """Refused at create, and at open for a table someone else made (pypaimon here), by
    name, before anything is written."""
    with pytest.raises((mc.UnsupportedFeatureError, mc.InvalidInputError), match=match):
        mc.Table.create(tmp_path / "db.db" / "t", _schema(arrow_type), key="k", partition_by="p", options=options)
    assert not (tmp_path / "db.db" / "t" / "schema").exists()
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    definition = pypaimon.Schema.from_pyarrow_schema(_schema(arrow_type), ["p"], ["p", "k"], {"bucket": "1", **options})
    catalog.create_table("db.theirs", definition, False)
    with pytest.raises((mc.UnsupportedFeatureError, mc.InvalidInputError), match=match):
        mc.Table.open(tmp_path / "db.db" / "theirs")


# -- nothing outside the table --------------------------------------------------------

PLAIN = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "paimon-fixtures"


def _files_outside(tmp_path: Path, root: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents]


def _rewrite(path: Path, change, optional: str | None = None) -> None:
    """Rewrites an Avro metadata file of the table, each record passed to ``change``
    (records get the field ``optional``, a nullable string, if they lack it)."""
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)
    if optional and all(f["name"] != optional for f in schema["fields"]):
        schema["fields"].append({"name": optional, "type": ["null", "string"], "default": None})
    for record in records:
        change(record)
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec=codec)


def _manifests(root: Path) -> list[Path]:
    return sorted(p for p in (root / "manifest").iterdir() if p.name.startswith("manifest-") and "list" not in p.name)


@pytest.mark.parametrize(
    "directory", ["../../escaped", "{tmp}/escaped", "a/../../b", "", ".", "a//b", "x:y", "a\\..\\b"]
)
def test_a_data_directory_that_leaves_the_table_is_refused(tmp_path, directory):
    directory = directory.replace("{tmp}", str(tmp_path))
    root = tmp_path / "wh" / "db.db" / "t"
    option = {"data-file.path-directory": directory}
    with pytest.raises(mc.InvalidInputError, match="'data-file.path-directory'"):
        mc.Table.create(root, PLAIN, key="k", buckets=1, options=option)
    table = mc.Table.create(root, PLAIN, key="k", buckets=1)
    table.write(pa.table({"k": [1], "v": [1]}, schema=PLAIN))
    schema_file = root / "schema" / "schema-0"  # as if another writer had set the option
    document = json.loads(schema_file.read_text())
    document["options"].update(option)
    schema_file.write_text(json.dumps(document))
    with pytest.raises(mc.InvalidInputError, match="'data-file.path-directory'"):
        mc.Table.open(root)
    table.write(pa.table({"k": [2], "v": [2]}, schema=PLAIN))  # opened before: writes as it opened
    assert _files_outside(tmp_path, root) == []


def test_a_data_directory_inside_the_table_is_shared_with_pypaimon(tmp_path):
    root = tmp_path / "db.db" / "t"
    schema = _schema(pa.string())
    table = mc.Table.create(
        root, schema, key="k", partition_by="p", buckets=1, options={"data-file.path-directory": "data/files"}
    )
    table.write(pa.table({"k": [1, 2], "p": ["a", "b"], "v": [1, 2]}, schema=schema))
    pypaimon_commit(
        pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.t"),
        [{"k": 3, "p": "a", "v": 3}],
        schema,
    )
    assert sorted(p.name for p in (root / "data" / "files").iterdir()) == ["p=a", "p=b"]
    want = [{"k": 1, "p": "a", "v": 1}, {"k": 2, "p": "b", "v": 2}, {"k": 3, "p": "a", "v": 3}]
    assert _same(table.read().read_all(), want, schema)
    assert _same(_pypaimon_rows(root), want, schema)
    assert _same(pypaimon_rust_rows(root), want, schema)


@pytest.mark.parametrize("name", ["../../outside.parquet", "/etc/passwd", "bucket-0/x.parquet", "..", ""])
def test_a_manifest_naming_a_data_file_outside_its_bucket_is_corrupt(tmp_path, name):
    """Never a read: the file the name leads to is a copy of a real data file."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, PLAIN, key="k", buckets=1)
    table.write(pa.table({"k": [1, 2], "v": [1, 2]}, schema=PLAIN))
    (data,) = (root / "bucket-0").iterdir()
    (root / "bucket-0" / "x.parquet").write_bytes(data.read_bytes())
    (tmp_path / "db.db" / "outside.parquet").write_bytes(data.read_bytes())
    (manifest,) = _manifests(root)
    _rewrite(manifest, lambda entry: entry["_FILE"].update(_FILE_NAME=name))
    for attempt in (table.read, table.files, lambda: table.compact(full=True), mc.Table.open(root).plan):
        with pytest.raises(mc.CorruptTableError, match=manifest.name):
            attempt()


def test_a_manifest_naming_an_external_file_outside_the_external_paths_is_corrupt(tmp_path):
    root = tmp_path / "db.db" / "t"
    outside, places = tmp_path / "outside", tmp_path / "ext%2Fernal"  # taken literally, as Paimon writes it
    table = mc.Table.create(root, PLAIN, key="k", buckets=1, options={"data-file.external-paths": f"file://{places}"})
    table.write(pa.table({"k": [1, 2], "v": [1, 2]}, schema=PLAIN))
    (data,) = (root / "bucket-0").iterdir()
    for folder in (outside, places / "bucket-0"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / data.name).write_bytes(data.read_bytes())
    (manifest,) = _manifests(root)
    original = manifest.read_bytes()
    for path in (
        f"file://{outside}/{data.name}",
        f"{outside}/{data.name}",
        "/etc/passwd",
        f"file:{places}/../outside/{data.name}",
    ):
        manifest.write_bytes(original)
        _rewrite(manifest, lambda entry: entry["_FILE"].update(_EXTERNAL_PATH=path))  # noqa: B023
        with pytest.raises(mc.CorruptTableError, match=manifest.name):
            table.read()
    manifest.write_bytes(original)
    data.unlink()  # read from the place the options name
    _rewrite(manifest, lambda entry: entry["_FILE"].update(_EXTERNAL_PATH=f"file:{places}/bucket-0/{data.name}"))
    assert table.read().read_all().to_pylist() == [{"k": 1, "v": 1}, {"k": 2, "v": 2}]


def test_external_paths_written_by_pypaimon_are_read(tmp_path):
    places = tmp_path / "external"
    places.mkdir()
    options = {
        "bucket": "1",
        "data-file.external-paths": f"file://{places}",
        "data-file.external-paths.strategy": "round-robin",
    }
    schema = _schema(pa.string())
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    catalog.create_table("db.t", pypaimon.Schema.from_pyarrow_schema(schema, ["p"], ["p", "k"], options), False)
    rows = [{"k": 1, "p": "a", "v": 1}, {"k": 2, "p": "b/c", "v": 2}]
    pypaimon_commit(catalog.get_table("db.t"), rows, schema)
    assert sorted(p.name for p in places.iterdir()) == ["p=a", "p=b%2Fc"]
    assert _same(mc.Table.open(tmp_path / "db.db" / "t").read().read_all(), rows, schema)


def test_a_manifest_list_naming_a_manifest_outside_the_manifest_directory_is_corrupt(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, PLAIN, key="k", buckets=1)
    table.write(pa.table({"k": [1], "v": [1]}, schema=PLAIN))
    (manifest,) = _manifests(root)
    (tmp_path / "db.db" / manifest.name).write_bytes(manifest.read_bytes())
    delta = json.loads((root / "snapshot" / "snapshot-1").read_text())["deltaManifestList"]
    _rewrite(root / "manifest" / delta, lambda meta: meta.update(_FILE_NAME=f"../../{manifest.name}"))
    with pytest.raises(mc.CorruptTableError, match=delta):
        table.read()


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="the shared Paimon fixtures are not beside this checkout")
@pytest.mark.parametrize("field", ["_FILE_NAME", "_EXTERNAL_PATH"])
def test_an_index_manifest_naming_a_deletion_vector_file_outside_the_table_is_corrupt(tmp_path, field):
    """Never a read: the file the entry leads to is a copy of the real index file."""
    name = "pk_table_scan_and_read_dv"
    root = tmp_path / "db.db" / name
    shutil.copytree(FIXTURES / f"{name}.db" / name, root)
    table = mc.Table.open(root)
    before = table.read().read_all()
    index_manifest = root / "manifest" / table.snapshot().index_manifest
    outside = tmp_path / "outside-index"
    value = "../../../outside-index" if field == "_FILE_NAME" else f"file://{outside}"

    def lead_outside(entry):
        if entry["_INDEX_TYPE"] == "DELETION_VECTORS":
            outside.write_bytes((root / "index" / entry["_FILE_NAME"]).read_bytes())
            entry[field] = value

    _rewrite(index_manifest, lead_outside, optional=field)
    assert outside.exists() and before.num_rows > 0
    # Opened again: a Table plans a snapshot once, by the names of its manifests (which
    # Paimon never rewrites in place, as this damage does).
    with pytest.raises(mc.CorruptTableError, match=index_manifest.name):
        mc.Table.open(root).read()


def test_commit_messages_naming_paths_are_refused_before_anything_is_removed(tmp_path):
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, PLAIN, key="k", buckets=1)
    table.write(pa.table({"k": [1], "v": [1]}, schema=PLAIN))
    victim = tmp_path / "db.db" / "victim"
    victim.write_text("someone else's")
    files = table.files()
    bad = CommitMessage(_binary.encode([], []), 0, 1, new_files=({"_FILE_NAME": "../../victim"},))
    for attempt in (table.abort, table.commit):
        with pytest.raises(mc.InvalidInputError, match="commit message"):
            attempt([bad])
    assert victim.read_text() == "someone else's"
    assert table.snapshots() == [1] and table.files() == files
