"""Paimon's schema rules (paimon/_validation.py): a schema that breaks one is refused when
a table is created (InvalidInputError naming the rule) and when a table holding it is
opened or read (CorruptTableError naming the schema file), one case per rule; pypaimon
refuses what it checks of the same schemas, and a table it lets through with a bucket key
outside the primary key (two rows for one key) is refused by merge-core."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from merge_core.paimon import _validation
from merge_core.paimon._schema import schema_json

COLUMNS = pa.schema([("k", pa.int64()), ("p", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
NESTED = COLUMNS.append(pa.field("s", pa.struct([("x", pa.int64())]))).append(pa.field("l", pa.list_(pa.int64())))


@dataclass(frozen=True)
class Case:
    """A table definition that breaks ``rule``: as ``Table.create``'s arguments (the
    primary key of the stored schema is the partition columns, then ``key``)."""

    rule: str
    options: dict[str, str] = field(default_factory=dict)
    key: tuple[str, ...] = ("k",)
    partition_by: tuple[str, ...] = ()
    columns: pa.Schema = COLUMNS

    def __str__(self) -> str:
        return f"{self.rule}:{json.dumps(self.options)}:{self.key}:{self.partition_by}:{self.columns.names}"


CASES = [
    Case("column_names_unique", columns=COLUMNS.append(pa.field("v", pa.string()))),
    Case("column_names_not_reserved", columns=COLUMNS.append(pa.field("rowkind", pa.string()))),
    Case("column_names_not_reserved", columns=COLUMNS.append(pa.field("_LEVEL", pa.int32()))),
    Case("partition_columns_known_and_unique", partition_by=("p", "p")),
    Case("primary_key_columns_known_and_unique", key=("k", "k")),
    Case("key_columns_atomic", key=("k", "l"), columns=NESTED),
    Case("key_columns_atomic", partition_by=("s",), columns=NESTED),
    Case("primary_key_beyond_partition", key=("p",), partition_by=("p",)),
    Case("bucket_number_valid", {"bucket": "0"}),
    Case("bucket_number_valid", {"bucket": "-3"}),
    Case("bucket_number_valid", {"bucket": "four"}),
    Case("bucket_number_valid", {"bucket": "-1", "bucket-key": "k"}),
    Case("bucket_key_within_primary_key", {"bucket-key": "v"}),
    Case("bucket_key_within_primary_key", {"bucket-key": "p"}, partition_by=("p",)),
    Case("bucket_key_within_primary_key", {"bucket-key": "nope"}),
    Case("bucket_key_within_primary_key", {"bucket-key": "k, ts"}, key=("k", "ts")),  # Java does not trim
    Case("append_buckets_keyed", {"bucket": "2"}, key=()),  # an append table (no key)
    Case("append_buckets_keyed", {"bucket": "2", "bucket-key": "s"}, key=(), columns=NESTED),
    Case("append_buckets_keyed", {"bucket": "-1", "full-compaction.delta-commits": "1"}, key=()),
    Case("append_without_changelog", {"bucket": "-1", "changelog-producer": "input"}, key=()),
    Case("append_without_changelog", {"bucket": "-1", "streaming-read-overwrite": "true"}, key=()),
    Case("sequence_columns_valid", {"sequence.field": "nope"}),
    Case("sequence_columns_valid", {"sequence.field": "ts,ts"}),
    Case("sequence_columns_valid", {"sequence.field": "ts", "merge-engine": "first-row"}),
    Case(
        "sequence_columns_valid",
        {"sequence.field": "ts", "merge-engine": "aggregation", "fields.ts.aggregate-function": "max"},
    ),
    Case("field_options_name_columns", {"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"}),
    Case("field_options_name_columns", {"merge-engine": "partial-update", "fields.ts,nope.sequence-group": "v"}),
    Case("field_options_not_into_rows", {"fields.s.x.ignore-retract": "true"}, columns=NESTED),
    Case("row_kind_column_known", {"rowkind.field": "nope"}),
    Case("record_time_column_valid", {"record-level.time-field": "nope"}),
    Case("record_time_column_valid", {"record-level.time-field": "p"}),
    Case("first_row_changelog_producer", {"merge-engine": "first-row", "changelog-producer": "input"}),
    Case(
        "deletion_vectors_changelog_and_engine",
        {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"},
    ),
    Case("deletion_vectors_changelog_and_engine", {"deletion-vectors.enabled": "true", "merge-engine": "first-row"}),
    Case(
        "lookup_changelog_without_full_compaction_commits",
        {"changelog-producer": "lookup", "full-compaction.delta-commits": "1"},
    ),
    Case(
        "overwrite_streaming_without_compaction_changelog",
        {"streaming-read-overwrite": "true", "changelog-producer": "full-compaction"},
    ),
    Case("retained_counts_ordered", {"snapshot.num-retained.max": "5"}),  # below the minimum's default, 10
    Case("retained_counts_ordered", {"snapshot.num-retained.min": "0"}),
    Case("retained_counts_ordered", {"changelog.num-retained.min": "3", "changelog.num-retained.max": "2"}),
    Case("target_file_rows_positive", {"target-file-row-num": "0"}),
]


def rule_name(case: Case) -> str:
    return case.rule.replace("_", " ")


def test_every_rule_has_a_case():
    assert {c.rule for c in CASES} == {rule.__name__ for rule in _validation.RULES}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_create_refuses_a_schema_that_breaks_a_rule(tmp_path, case):
    with pytest.raises(mc.InvalidInputError, match=f"schema rule '{rule_name(case)}'"):
        mc.Table.create(
            tmp_path / "t", case.columns, key=list(case.key), partition_by=list(case.partition_by), options=case.options
        )
    assert not (tmp_path / "t").exists(), "nothing is written"


def stored(root: Path, case: Case) -> Path:
    """A table whose schema-0 is ``case``'s as a writer that does not check would store it."""
    primary = [*[p for p in case.partition_by if p not in case.key], *case.key]
    options = {"bucket": "2", **case.options}
    text = schema_json(case.columns, primary, list(case.partition_by), options)
    (root / "schema").mkdir(parents=True)
    (root / "schema" / "schema-0").write_text(text)
    return root


@pytest.mark.parametrize("case", CASES, ids=str)
def test_open_refuses_a_stored_schema_that_breaks_a_rule(tmp_path, case):
    root = stored(tmp_path / "t", case)
    with pytest.raises(mc.CorruptTableError, match=f"schema-0 breaks Paimon's schema rule '{rule_name(case)}'"):
        mc.Table.open(root)


def test_a_read_of_an_older_schema_that_breaks_a_rule_is_refused(tmp_path):
    """A snapshot written under a schema that breaks a rule is not read, even when the
    latest schema is sound."""
    table = mc.Table.create(tmp_path / "t", COLUMNS, key="k", buckets=2)
    table.write(pa.table({"k": [1, 2], "p": ["a", "b"], "ts": [0, 0], "v": [1, 2]}))
    older = tmp_path / "t" / "schema" / "schema-0"
    document = json.loads(older.read_text())
    (tmp_path / "t" / "schema" / "schema-1").write_text(json.dumps({**document, "id": 1}))
    document["options"]["bucket-key"] = "v"
    older.write_text(json.dumps(document))
    reopened = mc.Table.open(tmp_path / "t")
    with pytest.raises(
        mc.CorruptTableError, match="schema-0 breaks Paimon's schema rule 'bucket key within primary key'"
    ):
        reopened.read(snapshot=1)


def test_sound_definitions_pass_every_rule(tmp_path):
    """What the rules allow: a bucket key inside the primary key, sequence columns,
    deletion vectors with lookup, first-row with lookup, retained counts in order."""
    for i, (key, options) in enumerate(
        [
            (["k", "v"], {"bucket-key": "v"}),
            (["k"], {"sequence.field": "ts", "merge-engine": "partial-update", "fields.ts.sequence-group": "v"}),
            (["k"], {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"}),
            (["k"], {"merge-engine": "first-row", "changelog-producer": "lookup"}),
            (["k"], {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3"}),
            (["k"], {"merge-engine": "aggregation", "fields.default-aggregate-function": "max"}),
        ]
    ):
        table = mc.Table.create(tmp_path / str(i), COLUMNS, key=key, partition_by="p", options=options)
        assert mc.Table.open(table.path).options == table.options


# -- pypaimon on the same schemas --------------------------------------------------------


def pypaimon_table(warehouse: Path, options: dict[str, str]):
    pypaimon = pytest.importorskip("pypaimon")
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    schema = pypaimon.Schema.from_pyarrow_schema(COLUMNS, primary_keys=["k"], options={"bucket": "2", **options})
    catalog.create_table("db.t", schema, False)
    return catalog.get_table("db.t")


def pypaimon_write(table, rows: list[dict]) -> None:
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(pa.Table.from_pylist(rows, schema=COLUMNS))
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


ROW = {"k": 1, "p": "a", "ts": 0, "v": 1}


def test_pypaimon_refuses_too_a_bucket_key_that_is_not_a_column(tmp_path):
    table = pypaimon_table(tmp_path, {"bucket-key": "nope"})
    with pytest.raises(ValueError, match="bucket-key references unknown columns"):
        pypaimon_write(table, [ROW])
    with pytest.raises(mc.InvalidInputError, match="'bucket key within primary key'"):
        mc.Table.create(tmp_path / "ours", COLUMNS, key="k", options={"bucket-key": "nope"})


def test_pypaimon_refuses_too_a_target_file_row_num_below_one(tmp_path):
    with pytest.raises(ValueError, match="target-file-row-num"):
        pypaimon_table(tmp_path, {"target-file-row-num": "0"})
    with pytest.raises(mc.InvalidInputError, match="'target file rows positive'"):
        mc.Table.create(tmp_path / "ours", COLUMNS, key="k", options={"target-file-row-num": "0"})


def test_a_bucket_key_outside_the_primary_key_that_pypaimon_lets_through_is_refused(tmp_path):
    """pypaimon checks only that bucket-key names columns: with ``bucket-key = v`` two
    versions of key 1 land in two buckets and it reads them as two rows. Paimon's Java
    refuses the schema; merge-core refuses to open the table rather than read it so."""
    table = pypaimon_table(tmp_path, {"bucket-key": "v"})
    buckets = [{**ROW, "v": v} for v in range(8)]
    for row in buckets:  # one commit each: versions of key 1 with different bucket keys
        pypaimon_write(table, [row])
    builder = table.new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    assert len(theirs) > 1 and {r["k"] for r in theirs} == {1}, "pypaimon: several rows for one key"
    with pytest.raises(mc.CorruptTableError, match="'bucket key within primary key'"):
        mc.Table.open(tmp_path / "db.db" / "t")
