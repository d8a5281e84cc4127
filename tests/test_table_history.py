"""Random histories of a partitioned primary-key table against a plain-Python model.

A hypothesis state machine writes (with row kinds and deletes too, in a deduplicate
table), alters (add, rename, drop and widen columns, set options), tags, rolls back (to
a snapshot or a tag), overwrites (static and dynamic), drops partitions, truncates and
compacts (full or not) one table, with merge-core and, in some steps, with pypaimon 2.1
as a second writer on the same table. The model keeps
each key's row by field id (so renames, drops and rollbacks after schema changes read as
Paimon reads them: by id, in the latest schema, or in a travelling read's snapshot's
schema), folded as the table's merge engine folds: deduplicate, partial-update or
aggregation (one column summed, the others their newest non-null value).

After each step merge-core, pypaimon and pypaimon-rust read the latest snapshot as the
model says, merge-core reads every tag and one saved snapshot as the model saved them,
and the table's snapshots and tags are the model's. At the end of a history the peers
also travel to every tag and snapshot.

Kept small (``HISTORY_EXAMPLES``: 5 histories of up to 20 steps per merge engine by
default, each starting with a write of every key) so that the file runs in under a
minute; raise it to search longer."""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from merge_core.fs import resolve
from merge_core.paimon._meta import latest_snapshot_id
from test_expire import catalog, identifier

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")
from pypaimon.schema.data_types import AtomicType  # noqa: E402
from pypaimon.schema.schema_change import Move, SchemaChange  # noqa: E402

PARTITIONS = ("a", "b", "c")
KEYS = st.integers(0, 3)
EVERY_KEY = [(p, k) for p in PARTITIONS for k in range(4)]
ARROW = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string()}
WIDER = {"INT": "BIGINT"}
ROW_KINDS = ("+I", "-U", "+U", "-D")
SUMMED = "v"  # the aggregation engine's summed column: never renamed or dropped (see Model.summed)


@dataclass
class Column:
    name: str
    id: int
    type: str  # Paimon's type name


@dataclass
class Model:
    """The table as Paimon's rules say it is."""

    engine: str
    columns: list[Column]  # the latest schema's value columns, in order (k and p are fields 0 and 1)
    next_id: int
    dynamic: bool = True  # 'dynamic-partition-overwrite'
    rows: dict[tuple[str, int], dict[int, object]] = field(default_factory=dict)  # (p, k) -> field id -> value
    saved: dict[int, tuple[dict, list[Column]]] = field(default_factory=dict)  # snapshot -> (rows, columns)
    tags: dict[str, int] = field(default_factory=dict)

    def fold(self, old: dict[int, object] | None, new: dict[int, object], kind: str = "+I") -> dict | None:
        """One newer row of a key (of row kind ``kind``) folded into the key's row so far
        (None: no row), as the merge engine does: deduplicate keeps the newest row (none
        if it retracts), partial-update its newest non-null values, aggregation the sum of
        the summed column and the newest non-null value of the others."""
        if self.engine == "deduplicate":
            return None if kind in ("-U", "-D") else dict(new)
        assert kind in ("+I", "+U"), "the machine retracts only in deduplicate tables (see write_changes)"
        if old is None:
            return dict(new)
        out = dict(old)
        for fid, value in new.items():
            if value is None:  # a null neither adds nor replaces
                continue
            if self.engine == "aggregation" and fid == self.summed and out.get(fid) is not None:
                out[fid] += value
            else:
                out[fid] = value
        return out

    @property
    def summed(self) -> int:
        """The summed column's field id. A travelling read folds an older snapshot's files
        with the table's current per-column options, so the result of renaming a summed
        column would depend on how its files happen to be compacted: the machine keeps
        this column's name and id."""
        return 2

    def apply(self, rows: list[tuple], base: dict | None = None) -> dict:
        """``rows`` ((partition, key, values[, row kind]) in write order) folded into ``base``."""
        out = dict(self.rows if base is None else base)
        for p, k, values, *kind in rows:
            folded = self.fold(out.get((p, k)), values, *kind)
            if folded is None:
                out.pop((p, k), None)
            else:
                out[(p, k)] = folded
        return out

    def save(self, snapshot: int) -> None:
        self.saved[snapshot] = (copy.deepcopy(self.rows), copy.deepcopy(self.columns))

    def view(self, rows: dict | None = None, columns: list[Column] | None = None) -> list[dict]:
        """The rows a read returns, in ``columns`` (by default the latest schema's)."""
        rows = self.rows if rows is None else rows
        columns = self.columns if columns is None else columns
        out = [{"k": k, "p": p, **{c.name: values.get(c.id) for c in columns}} for (p, k), values in rows.items()]
        return sorted_rows(out)

    def at(self, snapshot: int) -> list[dict]:
        rows, columns = self.saved[snapshot]
        return self.view(rows, columns)

    def value_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def arrow_schema(self) -> pa.Schema:
        values = [pa.field(c.name, ARROW[c.type]) for c in self.columns]
        return pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), *values])


def sorted_rows(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (str(r.get("p")), r["k"]))


def values_of(kind: str):
    if kind == "STRING":
        return st.one_of(st.none(), st.sampled_from(["", "x", "yz"]))
    return st.one_of(st.none(), st.integers(-50, 50))


def pypaimon_table(root: Path, options: dict[str, str] | None = None):
    table = catalog(root).get_table(identifier(root))
    return table.copy(options) if options else table


def pypaimon_rows(root: Path, options: dict[str, str] | None = None) -> list[dict]:
    builder = pypaimon_table(root, options).new_read_builder()
    return sorted_rows(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())


def rust_rows(root: Path, options: dict[str, str] | None = None) -> list[dict]:
    return sorted_rows(pypaimon_rust_rows(root, options=options))


def ours(table: mc.Table, **travel) -> list[dict]:
    return sorted_rows(table.read(**travel).read_all().to_pylist())


ENGINES = {
    "deduplicate": "deduplicate",
    "partial-update": mc.PartialUpdate(),
    "aggregation": mc.Aggregate({SUMMED: "sum"}),
}


class TableHistory(RuleBasedStateMachine):
    """One table's history; each rule is one step of it, by merge-core or by pypaimon."""

    engine = "deduplicate"  # each subclass below one merge engine, so that each has its histories

    @initialize(dynamic=st.booleans(), data=st.data())
    def create(self, dynamic: bool, data) -> None:
        """The table, and a first write of every key (so that later writes fold into rows)."""
        engine = self.engine
        self.dir = Path(tempfile.mkdtemp(prefix="history-"))
        self.root = self.dir / "db.db" / "t"
        self.model = Model(engine, [Column("v", 2, "INT"), Column("w", 3, "BIGINT"), Column("s", 4, "STRING")], 5)
        self.table = mc.Table.create(
            self.root,
            self.model.arrow_schema(),
            key=["k", "p"],
            partition_by="p",
            buckets=2,
            merge=ENGINES[engine],
            options={"dynamic-partition-overwrite": str(dynamic).lower()},
        )
        self.model.dynamic = dynamic
        self.fresh = 0
        base = [(p, k, {c.id: data.draw(values_of(c.type)) for c in self.model.columns}) for p, k in EVERY_KEY]
        self.table.write(self.arrow(base))
        self.model.rows = self.model.apply(base)
        self.committed(None)

    def teardown(self) -> None:
        if hasattr(self, "dir"):
            try:
                self.travel_in_every_reader()
            finally:
                shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------

    def new_name(self) -> str:
        self.fresh += 1
        return f"c{self.fresh}"

    def column_name(self, data) -> str:
        """A new name, or one a dropped or renamed column had: Paimon's new column under an
        old name is a new field (a new id), which older files do not hold."""
        taken = set(self.model.value_names())
        free = sorted({c.name for _, columns in self.model.saved.values() for c in columns} - taken)
        return data.draw(st.sampled_from([self.new_name(), *free]), label="name")

    def latest(self) -> int | None:
        return latest_snapshot_id(resolve(str(self.root)))

    def committed(self, before: int | None) -> None:
        """Saves the model's rows for each snapshot the step committed."""
        after = self.latest()
        for snapshot in range(0 if before is None else before + 1, (after or 0) + 1):
            if snapshot >= 1:
                self.model.saved.pop(snapshot, None)
                self.model.save(snapshot)

    def draw_rows(self, data, partition: str | None = None, min_size: int = 0) -> list[tuple[str, int, dict]]:
        parts = st.just(partition) if partition else st.sampled_from(PARTITIONS)
        keys = data.draw(st.lists(st.tuples(parts, KEYS), min_size=min_size, max_size=6), label="keys")
        return [(p, k, {c.id: data.draw(values_of(c.type)) for c in self.model.columns}) for p, k in keys]

    def draw_changes(self, data) -> list[tuple[str, int, dict, str]]:
        """Rows with row kinds (+I, -U, +U, -D), for a deduplicate table."""
        return [
            (p, k, values, data.draw(st.sampled_from(ROW_KINDS), label="row kind"))
            for p, k, values in self.draw_rows(data, min_size=1)
        ]

    def arrow(self, rows: list[tuple]) -> pa.Table:
        """The rows as a write takes them (with an ``op`` column of row kinds if they have them)."""
        columns = {"k": [r[1] for r in rows], "p": [r[0] for r in rows]}
        for c in self.model.columns:
            columns[c.name] = [r[2][c.id] for r in rows]
        schema = self.model.arrow_schema()
        if rows and len(rows[0]) == 4:
            columns["op"], schema = [r[3] for r in rows], schema.append(pa.field("op", pa.string()))
        return pa.table(columns, schema=schema)

    def pypaimon_write(self, rows, overwrite: dict | None = None) -> None:
        builder = pypaimon_table(self.root).new_batch_write_builder()
        if overwrite is not None:
            builder = builder.overwrite(overwrite)
        write, commit = builder.new_write(), builder.new_commit()
        if rows:
            write.write_arrow(self.arrow(rows))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()

    # -- writes ----------------------------------------------------------------------------

    @rule(data=st.data(), by_pypaimon=st.booleans())
    def write(self, data, by_pypaimon: bool) -> None:
        rows = self.draw_rows(data, min_size=1)
        before = self.latest()
        if by_pypaimon:
            self.pypaimon_write(rows)
        else:
            self.table.write(self.arrow(rows))
        self.model.rows = self.model.apply(rows)
        self.committed(before)

    @precondition(lambda self: self.model.engine == "deduplicate")
    @rule(data=st.data())
    def write_changes(self, data) -> None:
        """A write of rows with row kinds (pypaimon takes them only from a table column).
        Partial-update refuses retracts (without 'ignore-delete' or a remove-record
        option). Aggregation retracts are left out for now: a retract of a key that
        does not exist, or of a value the fold has not seen, reads differently by how the
        files happen to be compacted (in Paimon too), so the model would need to draw
        only retracts of existing keys' summed values."""
        rows = self.draw_changes(data)
        before = self.latest()
        self.table.write(self.arrow(rows), row_kind="op")
        self.model.rows = self.model.apply(rows)
        self.committed(before)

    @precondition(lambda self: self.model.engine == "deduplicate")
    @rule(data=st.data())
    def delete(self, data) -> None:
        keys = data.draw(st.lists(st.tuples(st.sampled_from(PARTITIONS), KEYS), min_size=1, max_size=4))
        before = self.latest()
        self.table.delete(pa.table({"k": [k for _, k in keys], "p": [p for p, _ in keys]}))
        for key in keys:
            self.model.rows.pop(key, None)
        self.committed(before)

    @rule(data=st.data(), by_pypaimon=st.booleans(), static=st.sampled_from(PARTITIONS))
    def overwrite_partition(self, data, by_pypaimon: bool, static: str) -> None:
        self.overwrite(data, by_pypaimon, static)

    @rule(data=st.data(), by_pypaimon=st.booleans())
    def overwrite_table(self, data, by_pypaimon: bool) -> None:
        self.overwrite(data, by_pypaimon, None)

    def overwrite(self, data, by_pypaimon: bool, static: str | None) -> None:
        """INSERT OVERWRITE of a static partition (or the whole table), replacing what the
        table's 'dynamic-partition-overwrite' says: the partitions written, or the spec's."""
        rows = self.draw_rows(data, partition=static)
        spec = {"p": static} if static else {}
        before = self.latest()
        if by_pypaimon:
            self.pypaimon_write(rows, overwrite=spec)
        else:
            self.table.write(self.arrow(rows), overwrite=spec or True)
        if self.model.dynamic:
            replaced = {p for p, _, _ in rows}
        else:
            replaced = {static} if static else set(PARTITIONS)
        kept = {key: row for key, row in self.model.rows.items() if key[0] not in replaced}
        self.model.rows = self.model.apply(rows, base=kept)
        self.committed(before)

    @rule(data=st.data(), by_pypaimon=st.booleans())
    def drop_partitions(self, data, by_pypaimon: bool) -> None:
        dropped = data.draw(st.lists(st.sampled_from(PARTITIONS), min_size=1, max_size=2, unique=True))
        before = self.latest()
        if by_pypaimon:
            pypaimon_table(self.root).new_batch_write_builder().new_commit().truncate_partitions(
                [{"p": p} for p in dropped]
            )
        else:
            self.table.drop_partitions([{"p": p} for p in dropped])
        self.model.rows = {key: row for key, row in self.model.rows.items() if key[0] not in dropped}
        self.committed(before)

    @rule(by_pypaimon=st.booleans())
    def truncate(self, by_pypaimon: bool) -> None:
        before = self.latest()
        if by_pypaimon:
            pypaimon_table(self.root).new_batch_write_builder().new_commit().truncate_table()
        else:
            self.table.truncate()
        self.model.rows = {}
        self.committed(before)

    @rule(full=st.booleans())
    def compact(self, full: bool) -> None:
        before = self.latest()
        self.table.compact(full=full)
        self.committed(before)

    # -- schema changes --------------------------------------------------------------------

    @rule(data=st.data(), by_pypaimon=st.booleans())
    def alter(self, data, by_pypaimon: bool) -> None:
        """One schema change (a rule for them all, so that they are not most of a history)."""
        changes = [self.add_column, self.set_dynamic_overwrite]
        if self.renamable():
            changes += [self.rename_column, self.drop_column]
        if any(c.type in WIDER for c in self.model.columns):
            changes.append(self.widen_column)
        change = data.draw(st.sampled_from(changes), label="change")
        ours_change, theirs_change = change(data)
        if by_pypaimon:
            catalog(self.root).alter_table(identifier(self.root), [theirs_change])
            self.table = mc.Table.open(self.root)  # a writer in an older schema is Paimon's to refuse
        else:
            ours_change()

    def add_column(self, data):
        name = self.column_name(data)
        kind = data.draw(st.sampled_from(sorted(ARROW)), label="type")
        after = data.draw(st.sampled_from([None, *self.model.value_names()]), label="after")
        names = self.model.value_names()
        self.model.columns.insert(
            len(names) if after is None else names.index(after) + 1, Column(name, self.model.next_id, kind)
        )
        self.model.next_id += 1
        move = None if after is None else Move.after(name, after)
        return (
            lambda: self.table.add_column(name, ARROW[kind], after=after),
            SchemaChange.add_column(name, AtomicType(kind), move=move),
        )

    def renamable(self) -> list[str]:
        return [c.name for c in self.model.columns if not (self.model.engine == "aggregation" and c.name == SUMMED)]

    def rename_column(self, data):
        old = data.draw(st.sampled_from(self.renamable()), label="column")
        new = self.column_name(data)
        next(c for c in self.model.columns if c.name == old).name = new
        return lambda: self.table.rename_column(old, new), SchemaChange.rename_column(old, new)

    def drop_column(self, data):
        gone = data.draw(st.sampled_from(self.renamable()), label="column")
        self.model.columns = [c for c in self.model.columns if c.name != gone]
        return lambda: self.table.drop_column(gone), SchemaChange.drop_column(gone)

    def widen_column(self, data):
        column = data.draw(st.sampled_from([c for c in self.model.columns if c.type in WIDER]), label="column")
        name, column.type = column.name, WIDER[column.type]
        return (
            lambda: self.table.alter_column(name, type=ARROW[column.type]),
            SchemaChange.update_column_type(name, AtomicType(column.type), keep_nullability=True),
        )

    def set_dynamic_overwrite(self, data):
        self.model.dynamic = data.draw(st.booleans(), label="dynamic")
        value = str(self.model.dynamic).lower()
        return (
            lambda: self.table.set_options({"dynamic-partition-overwrite": value}),
            SchemaChange.set_option("dynamic-partition-overwrite", value),
        )

    # -- tags and rollbacks ----------------------------------------------------------------

    @precondition(lambda self: self.model.saved)
    @rule(data=st.data(), by_pypaimon=st.booleans())
    def create_tag(self, data, by_pypaimon: bool) -> None:
        newest_first = sorted(self.model.saved, reverse=True)  # rollbacks go to the oldest first
        snapshot = data.draw(st.sampled_from(newest_first), label="snapshot")
        name = f"t{self.new_name()}"
        if by_pypaimon:
            pypaimon_table(self.root).create_tag(name, snapshot_id=snapshot)
        else:
            assert self.table.create_tag(name, snapshot=snapshot) == snapshot
        self.model.tags[name] = snapshot

    @precondition(lambda self: self.model.tags)
    @rule(data=st.data(), by_pypaimon=st.booleans())
    def delete_tag(self, data, by_pypaimon: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.model.tags)), label="tag")
        if by_pypaimon:
            pypaimon_table(self.root).delete_tag(name)
        else:
            self.table.delete_tag(name)
        del self.model.tags[name]

    @precondition(lambda self: self.model.saved)
    @rule(data=st.data(), by_pypaimon=st.booleans(), to_tag=st.booleans())
    def rollback(self, data, by_pypaimon: bool, to_tag: bool) -> None:
        """Rolls back to a snapshot or a tag: later snapshots and the tags on them go; the
        schema stays the latest, so the kept rows read in it."""
        if to_tag and self.model.tags:
            tag = data.draw(st.sampled_from(sorted(self.model.tags)), label="tag")
            target, args = self.model.tags[tag], {"tag": tag}
        else:
            target = data.draw(st.sampled_from(sorted(self.model.saved)), label="snapshot")
            args = {"snapshot": target}
        if by_pypaimon:
            pypaimon_table(self.root).rollback_to(args.get("tag", target))
        else:
            self.table.rollback_to(**args)
        self.model.saved = {s: state for s, state in self.model.saved.items() if s <= target}
        self.model.tags = {name: s for name, s in self.model.tags.items() if s <= target}
        self.model.rows = copy.deepcopy(self.model.saved[target][0])

    # -- what every step leaves ------------------------------------------------------------

    @invariant()
    def snapshots_and_tags_are_the_models(self) -> None:
        assert self.table.snapshots() == sorted(self.model.saved)
        assert self.table.tags() == self.model.tags

    @invariant()
    def every_reader_reads_the_model(self) -> None:
        want = self.model.view()
        assert ours(self.table) == want
        assert pypaimon_rows(self.root) == want
        assert rust_rows(self.root) == want

    @invariant()
    def travel_reads_what_was_saved(self) -> None:
        for name, snapshot in self.model.tags.items():
            assert ours(self.table, tag=name) == self.model.at(snapshot), f"tag {name}"
        if self.model.saved:
            oldest = min(self.model.saved)
            assert ours(self.table, snapshot=oldest) == self.model.at(oldest), f"snapshot {oldest}"

    def travel_in_every_reader(self) -> None:
        for name, snapshot in self.model.tags.items():
            want = self.model.at(snapshot)
            assert pypaimon_rows(self.root, {"scan.tag-name": name}) == want, f"pypaimon, tag {name}"
            assert rust_rows(self.root, {"scan.tag-name": name}) == want, f"pypaimon-rust, tag {name}"
        for snapshot in self.model.saved:
            want = self.model.at(snapshot)
            assert ours(self.table, snapshot=snapshot) == want, f"snapshot {snapshot}"
            options = {"scan.snapshot-id": str(snapshot)}
            assert pypaimon_rows(self.root, options) == want, f"pypaimon, snapshot {snapshot}"
            assert rust_rows(self.root, options) == want, f"pypaimon-rust, snapshot {snapshot}"


class PartialUpdateHistory(TableHistory):
    engine = "partial-update"


class AggregationHistory(TableHistory):
    engine = "aggregation"


HISTORY = settings(
    max_examples=int(os.environ.get("HISTORY_EXAMPLES", "5")),  # per merge engine
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TableHistory.TestCase.settings = PartialUpdateHistory.TestCase.settings = AggregationHistory.TestCase.settings = HISTORY
TestDeduplicateHistory = TableHistory.TestCase
TestPartialUpdateHistory = PartialUpdateHistory.TestCase
TestAggregationHistory = AggregationHistory.TestCase


# -- what the machine found ------------------------------------------------------------------

PARTITIONED = pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int64())])


def test_an_aggregate_keeps_a_partition_key_column_through_a_retract(tmp_path):
    """Paimon aggregates every primary key column, partition columns included, with its
    'primary-key' function (the row's own value, for a retract too). merge-core merges by
    the trimmed key, and once folded the partition column as a value with the default
    newest non-null value, which a retract of a non-null value nulls: the read showed
    p = None, and a full compaction failed writing a null into the NOT NULL column."""
    table = mc.Table.create(
        tmp_path / "db.db" / "t", PARTITIONED, key=["k", "p"], partition_by="p", buckets=1,
        merge=mc.Aggregate({"v": "sum"}),
    )  # fmt: skip
    table.write(pa.table({"k": [1], "p": ["a"], "v": [5]}, schema=PARTITIONED))
    table.write(pa.table({"k": [1], "p": ["a"], "v": [2], "op": ["-U"]}), row_kind="op")
    assert ours(table) == [{"k": 1, "p": "a", "v": 3}]
    table.compact(full=True)
    assert ours(table) == [{"k": 1, "p": "a", "v": 3}]


def test_a_default_aggregate_function_leaves_partition_key_columns_alone(tmp_path):
    """With 'fields.default-aggregate-function' = sum, Paimon still takes a partition key
    column's own value; merge-core summed it (7 + 7 = 14)."""
    schema = pa.schema([pa.field("k", pa.int64(), False), pa.field("d", pa.int32(), False), ("v", pa.int64())])
    options = {"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"}
    table = mc.Table.create(tmp_path / "db.db" / "t", schema, key=["k", "d"], partition_by="d", options=options)
    for v in (5, 2):
        table.write(pa.table({"k": [1], "d": pa.array([7], pa.int32()), "v": [v]}))
    assert table.read().read_all().to_pylist() == [{"k": 1, "d": 7, "v": 7}]
    assert pypaimon_rows(Path(table.path)) == [{"k": 1, "d": 7, "v": 7}]
