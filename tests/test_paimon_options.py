"""Paimon's table options (paimon/_core_options.py): what merge-core honours, accepts and
refuses, checked at create, read, write and compact. A refused write leaves the table as
it was for pypaimon too; honoured options give the rows the real peers read; a new
table's options parse as Paimon parses them, or nothing is created."""

from __future__ import annotations

import json
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("s", pa.string())])
ROWS = pa.table({"k": [1, 2], "v": [10, 20], "s": ["b", "a"]}, schema=SCHEMA)


def pypaimon_table(warehouse: Path, name: str, options: dict[str, str], rows: pa.Table | None = ROWS) -> Path:
    """A table created (and written once) by pypaimon, with ``options``."""
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    schema = pypaimon.Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options=options)
    catalog.create_table(f"db.{name}", schema, False)
    if rows is not None:
        builder = catalog.get_table(f"db.{name}").new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(rows)
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()
    return warehouse / "db.db" / name


def pypaimon_rows(root: Path) -> list[dict]:
    table = pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)}).get_table(f"db.{root.name}")
    builder = table.new_read_builder()
    return sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist(), key=lambda r: r["k"])


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "options, refused",
    [
        ({"bucket": "2", "write.sequence-number-init-mode": "snapshot"}, "'write.sequence-number-init-mode'"),
        ({"bucket": "2", "commit.callbacks": "com.example.Callback"}, "'commit.callbacks'"),
        ({"bucket": "2", "pk-btree.index.columns": "v"}, "'pk-btree.index.columns'"),
        ({"bucket": "2", "file.format": "orc"}, "'file.format' = 'orc'"),
    ],
)
def test_a_refused_write_writes_nothing_and_the_peers_read_the_table_as_it_was(tmp_path, options, refused):
    """Writes merge-core would make wrongly (rows no reader sees, or files Paimon's writers
    must make besides) stop before any file is written; compactions too. Such a table may
    be created (for other writers); its writes are refused the same way."""
    root = pypaimon_table(tmp_path, "t", options)
    before_files, before_rows = files_of(root), pypaimon_rows(root)
    table = mc.Table.open(root)
    with pytest.raises(mc.UnsupportedFeatureError, match=refused):
        table.write(pa.table({"k": [1, 3], "v": [11, 30], "s": ["c", "c"]}, schema=SCHEMA))
    with pytest.raises(mc.UnsupportedFeatureError, match=refused):
        table.delete(pa.table({"k": [2]}))
    with pytest.raises(mc.UnsupportedFeatureError, match=refused):
        table.compact(full=True)
    assert files_of(root) == before_files
    assert pypaimon_rows(root) == before_rows
    created = mc.Table.create(tmp_path / "new", SCHEMA, key="k", options=options)
    with pytest.raises(mc.UnsupportedFeatureError, match=refused):
        created.write(ROWS)
    assert list(files_of(tmp_path / "new")) == ["schema/schema-0"]


def test_deletion_vector_and_first_row_tables_still_read(tmp_path):
    """Tables pypaimon wrote (level-0 files only, which their batch reads skip): merge-core
    reads what pypaimon-rust reads."""
    for name, options in {"dv": {"deletion-vectors.enabled": "true"}, "fr": {"merge-engine": "first-row"}}.items():
        root = pypaimon_table(tmp_path, name, {"bucket": "2", **options})
        rows = mc.Table.open(root).read().read_all().to_pylist()
        assert sorted(rows, key=lambda r: r["k"]) == sorted(pypaimon_rust_rows(root), key=lambda r: r["k"])


@pytest.mark.parametrize(
    "options, refused",
    [
        ({"scan.watermark": "1"}, "'scan.watermark'"),
        ({"scan.mode": "incremental"}, "'scan.mode' = 'incremental'"),
        ({"log.scan": "from-snapshot"}, "'log.scan' = 'from-snapshot'"),
        ({"scan.bucket": "0"}, "'scan.bucket'"),
        ({"incremental-between": "1,2"}, "'incremental-between'"),
        ({"scan.fallback-branch": "old"}, "'scan.fallback-branch'"),
        ({"branch": "dev"}, "'branch' = 'dev'"),
        ({"query-auth.enabled": "true"}, "'query-auth.enabled'"),
        ({"fields.v.nested-key": "k"}, "'fields.v.nested-key'"),
        ({"merge-engine": "aggregation", "fields.v.aggregate-function": "theta_sketch"}, "theta_sketch"),
    ],
)
def test_options_that_change_what_a_read_returns_are_refused_by_name(tmp_path, options, refused):
    root = pypaimon_table(tmp_path, "t", {"bucket": "1", **options}, rows=None)
    with pytest.raises(mc.UnsupportedFeatureError, match=refused):
        mc.Table.open(root).read()
    with pytest.raises(mc.UnsupportedFeatureError, match=refused):
        mc.Table.create(tmp_path / "new", SCHEMA, key="k", options=options)


def test_a_scan_option_stops_reads_but_not_writes(tmp_path):
    root = pypaimon_table(tmp_path, "t", {"bucket": "1", "scan.bucket": "0"}, rows=None)
    table = mc.Table.open(root)
    assert table.write(ROWS)["snapshot"] == 1
    with pytest.raises(mc.UnsupportedFeatureError, match="'scan.bucket' = '0'"):
        table.plan()


@pytest.mark.parametrize(
    "options",
    [
        {"fields.s.stats-mode": "full", "metadata.stats-mode": "none"},
        {"target-file-size": "64 mb", "write-buffer-size": "1 gb", "num-sorted-run.stop-trigger": "10"},
        {"snapshot.time-retained": "2 h", "tag.automatic-creation": "process-time", "consumer-id": "c"},
        {"my.own.option": "anything", "sink.parallelism": "4", "path": "/elsewhere"},  # not Paimon's: accepted
        {"changelog-producer": "none", "deletion-vectors.enabled": "false", "bucket-function.type": "DEFAULT"},
    ],
)
def test_options_without_effect_on_rows_are_accepted_everywhere(tmp_path, options):
    """Create, write, compact and read a table with them; pypaimon reads the same rows."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, options=options)
    table.write(ROWS)
    table.write(pa.table({"k": [2, 3], "v": [21, 30], "s": ["x", "y"]}, schema=SCHEMA))
    table.compact(full=True)
    rows = sorted(table.read().read_all().to_pylist(), key=lambda r: r["k"])
    assert rows == [{"k": 1, "v": 10, "s": "b"}, {"k": 2, "v": 21, "s": "x"}, {"k": 3, "v": 30, "s": "y"}]
    assert pypaimon_rows(root) == rows


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num-levels": "abc"}, "option 'num-levels' must be an integer, got 'abc'"),
        ({"num-levels": "0"}, "option 'num-levels' must be at least 2"),
        ({"num-levels": "1"}, "option 'num-levels' must be at least 2"),
        ({"num-sorted-run.compaction-trigger": "0"}, "'num-sorted-run.compaction-trigger' must be at least 1"),
        ({"file.compression": "bogus"}, "'file.compression': 'bogus' is not a Parquet codec"),
        ({"write-buffer-size": "12 parsecs"}, "'write-buffer-size': unknown size unit"),
        ({"snapshot.time-retained": "1 fortnight"}, "'snapshot.time-retained': unknown time unit"),
        ({"deletion-vectors.enabled": "yes"}, "'deletion-vectors.enabled' must be true or false"),
        ({"scan.mode": "sometimes"}, "'scan.mode' must be one of"),
        ({"compaction.small-file-ratio": "most"}, "'compaction.small-file-ratio' must be a number"),
        ({"lookup.cache-rows": "1_000"}, "'lookup.cache-rows' must be an integer"),
        ({"primary-key": "k"}, "give key= instead"),
    ],
)
def test_a_new_tables_options_parse_as_paimon_parses_them_or_nothing_is_created(tmp_path, options, message):
    with pytest.raises(mc.InvalidInputError, match=message):
        mc.Table.create(tmp_path / "t", SCHEMA, key="k", options=options)
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())


def test_a_codec_pyarrow_lacks_is_refused_by_name(tmp_path):
    with pytest.raises(mc.UnsupportedFeatureError, match="'file.compression' = 'lzo'"):
        mc.Table.create(tmp_path / "t", SCHEMA, key="k", options={"file.compression": "lzo"})


def set_options(root: Path, **options: str) -> None:
    """Changes the options of the table's schema-0, as another writer's schema could hold them."""
    path = root / "schema" / "schema-0"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "options": {**data["options"], **options}}))


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"num-levels": "abc"}, mc.InvalidInputError, "option 'num-levels' must be an integer, got 'abc'"),
        ({"num-levels": "0"}, mc.InvalidInputError, "option 'num-levels' must be at least 2"),
        ({"file.compression": "bogus"}, mc.InvalidInputError, "'file.compression': 'bogus' is not a Parquet codec"),
        ({"file.compression": "lzo"}, mc.UnsupportedFeatureError, "'file.compression' = 'lzo'"),
    ],
)
def test_bad_options_of_a_stored_table_fail_a_compaction_by_name_and_leave_no_file(tmp_path, options, error, message):
    """num-levels = 0 wrote a file at level -1, and a bogus codec raised pyarrow's error."""
    root = tmp_path / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1)
    table.write(ROWS)
    table.write(ROWS)
    set_options(root, **options)
    table = mc.Table.open(root)
    before = files_of(root)
    with pytest.raises(error, match=message):
        table.compact(full=True)
    if "file.compression" in options:
        with pytest.raises(error, match=message):
            table.write(ROWS)
    assert files_of(root) == before


def test_sequence_fields_of_strings_order_versions_as_in_paimon(tmp_path):
    """Paimon orders sequence fields of any comparable type (strings by their bytes);
    merge-core's table reads and writes them, pypaimon-rust reads the same rows, and a
    table pypaimon wrote reads alike."""
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, sequence="s")
    table.write(pa.table({"k": [1, 2, 3], "v": [1, 1, 1], "s": ["b", "b", "é"]}, schema=SCHEMA))
    table.write(pa.table({"k": [1, 2, 3], "v": [2, 2, 2], "s": ["a", "c", "z"]}, schema=SCHEMA))
    want = [{"k": 1, "v": 1, "s": "b"}, {"k": 2, "v": 2, "s": "c"}, {"k": 3, "v": 1, "s": "é"}]
    assert sorted(table.read().read_all().to_pylist(), key=lambda r: r["k"]) == want
    assert sorted(pypaimon_rust_rows(root), key=lambda r: r["k"]) == want
    table.compact(full=True)
    assert sorted(table.read().read_all().to_pylist(), key=lambda r: r["k"]) == want
    written = pypaimon_table(tmp_path, "p", {"bucket": "1", "sequence.field": "s"}, rows=None)
    for rows in ({"k": [1, 2], "v": [1, 1], "s": ["m", "m"]}, {"k": [1, 2], "v": [2, 2], "s": ["a", "z"]}):
        builder = (
            pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).get_table("db.p").new_batch_write_builder()
        )
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(pa.table(rows, schema=SCHEMA))
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()
    got = sorted(mc.Table.open(written).read().read_all().to_pylist(), key=lambda r: r["k"])
    assert got == sorted(pypaimon_rust_rows(written), key=lambda r: r["k"])
    assert got == [{"k": 1, "v": 1, "s": "m"}, {"k": 2, "v": 2, "s": "z"}]


def test_rowkind_field_gives_the_row_kinds_of_a_write(tmp_path):
    """As Paimon's writers do: the column's kinds apply, and the column is kept."""
    schema = SCHEMA.append(pa.field("op", pa.string()))
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, schema, key="k", buckets=1, options={"rowkind.field": "op"})
    table.write(pa.table({"k": [1, 2], "v": [1, 2], "s": ["a", "b"], "op": ["+I", "+I"]}, schema=schema))
    table.write(pa.table({"k": [1, 2], "v": [1, 3], "s": ["a", "c"], "op": ["-D", "+U"]}, schema=schema))
    want = [{"k": 2, "v": 3, "s": "c", "op": "+U"}]
    assert table.read().read_all().to_pylist() == want
    assert pypaimon_rows(root) == want


def test_ignore_update_before_drops_the_retractions_a_write_is_given(tmp_path):
    """Without the option, a -U of an aggregate retracts its value; with it, a write drops it."""
    schema = SCHEMA.append(pa.field("op", pa.string()))
    updates = pa.table({"k": [1, 1], "v": [5, 7], "s": ["a", "a"], "op": ["-U", "+U"]}, schema=schema)
    sums = {}
    for ignore in ("false", "true"):
        table = mc.Table.create(
            tmp_path / ignore,
            schema,
            key="k",
            merge=mc.Aggregate({"v": "sum"}),
            options={"ignore-update-before": ignore},
        )
        table.write(pa.table({"k": [1], "v": [5], "s": ["a"], "op": ["+I"]}, schema=schema), row_kind="op")
        table.write(updates, row_kind="op")
        sums[ignore] = table.read().read_all().column("v").to_pylist()
    assert sums == {"false": [7], "true": [12]}


def test_split_sizes_come_from_the_tables_options(tmp_path):
    table = mc.Table.create(tmp_path / "t", SCHEMA, key="k", buckets=1)
    for i in range(4):
        table.write(pa.table({"k": [i * 10], "v": [i], "s": ["x"]}, schema=SCHEMA))
    assert len(table.plan()) == 1
    set_options(tmp_path / "t", **{"source.split.target-size": "1 b", "source.split.open-file-cost": "1 b"})
    assert len(mc.Table.open(tmp_path / "t").plan()) == 4  # the files' ranges do not overlap: 4 sections


def test_the_table_names_every_option_once_and_its_functions_are_the_rusts():
    from merge_core.paimon import _core_options

    names = [option.name for option in _core_options.OPTIONS]
    assert len(names) == len(set(names))
    assert all(option.why for option in _core_options.OPTIONS)
    for function in _core_options.UNSUPPORTED_FUNCTIONS:  # the same list as the Rust fold's
        with pytest.raises(mc.InvalidInputError, match="is not supported by merge-core"):
            mc.merge([ROWS], key="k", merge=mc.Aggregate({"v": function}))
    assert _core_options.lookup("fields.a,b.sequence-group").name == "fields.<field>.sequence-group"
    assert _core_options.lookup("file-index.bloom-filter.v.fpp").name == "file-index.<type>.<column>.<option>"
    assert _core_options.lookup("fields.a.b.unknown") is None
