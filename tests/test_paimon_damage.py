"""Damaged tables: every damaged metadata or data file of a real table (a copy of a Java
fixture, or one merge-core wrote, corrupted in tmp_path) gives a typed error naming the
file, never a raw KeyError, ValueError or UnicodeDecodeError; a store that cannot be
reached gives a TableIOError naming its endpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fastavro
import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import free_port

FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "paimon-fixtures"
needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason="the shared Paimon fixtures are not beside this checkout"
)
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def fixture_copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(FIXTURES / f"{name}.db" / name, tmp_path / name))


def a_table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1)
    table.write(pa.table({"k": [1, 2, 3, 4, 5], "v": list("abcde")}, schema=SCHEMA))
    return root


def without_field(path: Path, field: str) -> None:
    """Rewrites an Avro file without ``field``, in its schema (at any depth) and records."""
    with path.open("rb") as f:
        reader = fastavro.reader(f)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)

    def strip(value):
        if isinstance(value, dict):
            out = {k: strip(v) for k, v in value.items() if k != field}
            if out.get("type") == "record":
                out["fields"] = [strip(f) for f in value["fields"] if f["name"] != field]
            return out
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    with path.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(strip(schema)), [strip(r) for r in records], codec=codec)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe\x00\x81 not text", "schema-0 is not a schema's JSON \\(not UTF-8 text"),
        (b"[1, 2]", "schema-0 is not a schema's JSON \\(not an object\\)"),
        (b'{"version": 3, "id": 0, "fields": [], "options": ["bucket"]}', "schema-0 lacks a field"),
    ],
)
def test_a_damaged_schema_file_is_a_corrupt_table_naming_it(tmp_path, content, message):
    root = a_table(tmp_path)
    (root / "schema" / "schema-0").write_bytes(content)
    with pytest.raises(mc.CorruptTableError, match=message):
        mc.Table.open(root)


def test_a_snapshot_file_of_binary_garbage_is_a_corrupt_table_naming_it(tmp_path):
    root = a_table(tmp_path)
    table = mc.Table.open(root)
    (root / "snapshot" / "snapshot-1").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(mc.CorruptTableError, match="snapshot-1 is not a snapshot's JSON"):
        table.read()


def latest_snapshot(root: Path) -> dict:
    ids = sorted(int(p.name.removeprefix("snapshot-")) for p in (root / "snapshot").glob("snapshot-*"))
    return json.loads((root / "snapshot" / f"snapshot-{ids[-1]}").read_text())


@needs_fixtures
@pytest.mark.parametrize("field", ["f0", "f2", "_INDEX_TYPE", "_BUCKET"])
def test_an_index_manifest_lacking_a_field_is_a_corrupt_table_naming_it(tmp_path, field):
    """A deletion-vector range without its data file name (f0) or length (f2), an entry
    without its index type or bucket: once KeyErrors."""
    root = fixture_copy(tmp_path, "pk_table_scan_and_read_dv")
    index_manifest = root / "manifest" / latest_snapshot(root)["indexManifest"]
    without_field(index_manifest, field)
    with pytest.raises(mc.CorruptTableError, match=index_manifest.name):
        mc.Table.open(root).read()


@needs_fixtures
@pytest.mark.parametrize("field", ["_FILE_SIZE", "_KIND", "_FILE"])
def test_a_manifest_entry_lacking_a_field_is_a_corrupt_table_naming_it(tmp_path, field):
    root = fixture_copy(tmp_path, "pk_table_scan_and_read_mor")
    listing = root / "manifest" / latest_snapshot(root)["deltaManifestList"]
    with listing.open("rb") as f:
        manifest = root / "manifest" / next(iter(fastavro.reader(f)))["_FILE_NAME"]
    without_field(manifest, field)
    with pytest.raises(mc.CorruptTableError, match=manifest.name):
        mc.Table.open(root).read()


@needs_fixtures
def test_a_manifest_list_lacking_file_names_is_a_corrupt_table_naming_it(tmp_path):
    root = fixture_copy(tmp_path, "pk_table_scan_and_read_mor")
    listing = root / "manifest" / latest_snapshot(root)["baseManifestList"]
    without_field(listing, "_FILE_NAME")
    with pytest.raises(mc.CorruptTableError, match=listing.name):
        mc.Table.open(root).read()


def test_a_data_file_with_unsorted_keys_is_a_corrupt_table_naming_it(tmp_path):
    """Once an InvalidInputError ("run 0, row 1: run is not sorted") that named no file."""
    root = a_table(tmp_path)
    table = mc.Table.open(root)
    (data_file,) = table.files()
    path = root / data_file["path"]
    rows = pq.read_table(path)
    pq.write_table(rows.take(list(range(rows.num_rows))[::-1]), path)  # same columns, keys descending
    with pytest.raises(mc.CorruptTableError, match=f"data file {path}: .*not sorted by key 'k'"):
        table.read().read_all()


def test_an_unreachable_s3_endpoint_is_a_table_io_error_naming_it(monkeypatch):
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(mc.TableIOError, match=f"s3://lake/db.db/t/schema from {endpoint} failed"):
        mc.Table.open("s3://lake/db.db/t")
    with pytest.raises(mc.TableIOError, match=endpoint):
        mc.Table.create("s3://lake/db.db/t", SCHEMA, key="k")
