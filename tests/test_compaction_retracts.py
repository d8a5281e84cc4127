"""Compactions below the top level keep row kinds and retracts as Paimon's do (its
``MergeTreeCompactRewriter`` with ``dropDelete`` false): a key's lone version is written
with its own kind, a fold with the kind Paimon's merge function gives it (deduplicate:
the newest row's own; partial-update and aggregation: ``+I``, or ``-D`` for a row
``remove-record-on-delete`` removed), each row with its newest version's sequence
number. Checked on tables of deduplicate, aggregation and partial-update written with
row kinds and compacted by the universal pick: by hand, then over random changelogs,
against the plain-Python model (``oracle``): each compacted file holds the rows, kinds
and sequence numbers of Paimon's compaction of the files it replaced, and the readers
read the fold of the files as Paimon reads them. A compaction below the top level can
change what a later read gives where the merge function does not fold associatively
(a retract takes ``last_non_null_value`` to null in one fold, not across two): Paimon's
does too, so the read is the fold of the files, not of the whole history (which it is
for deduplicate).

pypaimon (2.1) reads retracts on deduplicate tables only: it refuses an aggregation's
``-U``/``-D`` rows, and tables with ``remove-record-on-delete`` or sequence groups
whatever they hold. It reads where it can (``PYPAIMON_READS``); pypaimon-rust reads
every table at every step."""

from __future__ import annotations

import random
from pathlib import Path

import merge_core as mc
import oracle
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import pypaimon_rust_rows
from test_expire import catalog, identifier

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("w", pa.string()), ("g", pa.int64())])
KIND = "_kind"
KIND_SCHEMA = SCHEMA.append(pa.field(KIND, pa.string()))
TRIGGER = 3  # the top level is 3; the base below sits there, so picks of new runs stay below it
BASE_KEYS = 3000
VALUES = ["k", "v", "w", "g"]
# Where pypaimon reads the table: at every step, once no retract is left (compacted
# fully), or never (it refuses the table's options).
PYPAIMON_READS = {"deduplicate": "always", "sum": "fully compacted"}

# name: (merge-core's merge, the oracle's options)
ENGINES = {
    "deduplicate": ("deduplicate", {"merge": "deduplicate"}),
    "sum": (mc.Aggregate({"v": "sum"}), {"merge": "aggregate", "fields": {"v": "sum"}}),
    "sum-remove-record": (
        mc.Aggregate({"v": "sum"}, remove_record_on_delete=True),
        {"merge": "aggregate", "fields": {"v": "sum"}, "remove_record_on_delete": True},
    ),
    "partial-update-remove-record": (
        mc.PartialUpdate(remove_record_on_delete=True),
        {"merge": "partial-update", "remove_record_on_delete": True},
    ),
    "partial-update-groups": (
        mc.PartialUpdate(sequence_groups={"g": ["v"]}, fields={"v": "sum"}),
        {"merge": "partial-update", "sequence_groups": {"g": ["v"]}, "fields": {"v": "sum"}},
    ),
}


def new_table(root: Path, engine: str) -> mc.Table:
    """A one-bucket table of ``engine`` whose writes leave their runs to ``compact()``,
    with a large base of keys already at the top level."""
    options = {"num-sorted-run.compaction-trigger": str(TRIGGER), "write-only": "true"}
    table = mc.Table.create(root, SCHEMA, key="k", buckets=1, merge=ENGINES[engine][0], options=options)
    table.write(pa.Table.from_pylist(base_rows(), schema=KIND_SCHEMA), row_kind=KIND)
    table.compact(full=True)
    return table


def base_rows() -> list[dict]:
    return [{"k": k, "v": 1, "w": "base", "g": 0, KIND: "+I"} for k in range(BASE_KEYS)]


def write(table: mc.Table, rows: list[dict]) -> None:
    table.write(pa.Table.from_pylist(rows, schema=KIND_SCHEMA), row_kind=KIND)


def stored(root: Path, f: dict) -> list[dict]:
    """A data file's rows as stored: values, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``."""
    columns = [*VALUES, "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    return pq.read_table(root / f["path"], columns=columns).to_pylist()


def compact(table: mc.Table, root: Path, full: bool = False) -> tuple[list[dict], list[dict]]:
    """Compacts by the pick (or fully); the files it replaced and those it wrote."""
    before = {f["path"]: f for f in table.files()}
    table.compact(full=full)
    after = {f["path"]: f for f in table.files()}
    gone = [f for p, f in before.items() if p not in after]
    return gone, [f for p, f in after.items() if p not in before]


class Model:
    """The table as Paimon would hold it: each live file's rows (with ``_SEQUENCE_NUMBER``
    and ``_VALUE_KIND``), a compaction's output folded by the oracle from the rows the
    model holds for the files it replaced, never read back from what merge-core wrote."""

    def __init__(self, engine: str):
        self.engine, self.files = engine, {}

    def add(self, root: Path, files: list[dict]) -> None:
        """Files written by a write, as stored (``check_written`` checks them)."""
        self.files.update({f["path"]: stored(root, f) for f in files})

    def compact(self, gone: list[dict], level: int) -> list[dict]:
        """The rows of Paimon's compaction of ``gone`` into one file at ``level``: the
        oracle's fold in sequence order, retracts and kinds kept unless at the top."""
        runs = [self.files.pop(f["path"]) for f in gone]
        options = {**ENGINES[self.engine][1], "drop_deletes": level == TRIGGER}
        return oracle.merge(runs, ["k"], [], "_VALUE_KIND", system_sequence="_SEQUENCE_NUMBER", **options)

    def compacted(self, root: Path, gone: list[dict], written: list[dict]) -> None:
        """Checks a compaction's file against Paimon's compaction of the files it replaced."""
        (f,) = written or [None]
        if f is None:  # every row dropped at the top level
            assert self.compact(gone, TRIGGER) == []
            return
        self.files[f["path"]] = self.compact(gone, f["level"])
        assert sorted(stored(root, f), key=lambda r: r["k"]) == self.files[f["path"]]

    def read(self) -> list[tuple]:
        """What Paimon reads: every file's rows folded in sequence order."""
        runs = list(self.files.values())
        options = ENGINES[self.engine][1]
        return rows_of(oracle.merge(runs, ["k"], [], "_VALUE_KIND", system_sequence="_SEQUENCE_NUMBER", **options))


def history_read(engine: str, commits: list[list[dict]]) -> list[tuple]:
    """Every version of the history folded, in commit order."""
    return rows_of(oracle.merge(commits, ["k"], [], KIND, **ENGINES[engine][1]))


def read(root: Path) -> list[tuple]:
    return rows_of(mc.Table.open(root).read().read_all().to_pylist())


def readers(root: Path, engine: str, fully_compacted: bool) -> dict[str, list[tuple]]:
    """What merge-core, pypaimon-rust and (where it reads the table) pypaimon read."""
    out = {"merge-core": read(root), "pypaimon-rust": rows_of(pypaimon_rust_rows(root))}
    if PYPAIMON_READS.get(engine) == "always" or (fully_compacted and engine in PYPAIMON_READS):
        builder = catalog(root).get_table(identifier(root)).new_read_builder()
        out["pypaimon"] = rows_of(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist())
    return out


def rows_of(rows: list[dict]) -> list[tuple]:
    return sorted((tuple(r[c] for c in VALUES) for r in rows), key=repr)


def check_readers(
    root: Path, model: Model, engine: str, history: list[list[dict]], fully_compacted: bool = False
) -> None:
    want = model.read()
    if engine == "deduplicate":  # whatever the compactions, the whole history's newest rows
        assert want == history_read(engine, history)
    for reader, got in readers(root, engine, fully_compacted).items():
        assert got == want, reader


def write_and_check(table: mc.Table, root: Path, model: Model, engine: str, rows: list[dict]) -> None:
    """Writes ``rows`` (one commit, leaving level-0 files), checks and models the files."""
    before = table.files()
    write(table, rows)
    files = [f for f in table.files() if f not in before]
    check_written(root, engine, rows, files)
    model.add(root, files)


def check_written(root: Path, engine: str, rows: list[dict], files: list[dict]) -> None:
    """A write's level-0 files hold its rows with their kinds: on deduplicate each key's
    newest, on the others (whose versions with row kinds a write does not fold) all."""
    if engine == "deduplicate":
        rows = oracle.merge([rows], ["k"], [], KIND, merge="deduplicate", drop_deletes=False)
    want = sorted(((*(r[c] for c in VALUES), oracle.KINDS.index(r[KIND])) for r in rows), key=repr)
    got = sorted(((*(r[c] for c in VALUES), r["_VALUE_KIND"]) for f in files for r in stored(root, f)), key=repr)
    assert got == want


def row(k, v, w, g, kind) -> dict:
    return {"k": k, "v": v, "w": w, "g": g, KIND: kind}


# -- by hand --------------------------------------------------------------------------

# Three commits (one level-0 run each) over base keys (v=1, w='base', g=0); the pick takes
# them into level 2, below the top: key -> (kind, v, w) Paimon's compaction writes there.
BY_HAND = {
    "sum-remove-record": (
        [
            [row(1, 5, "a", None, "+I"), row(2, 1, None, None, "+I"), row(5, 2, None, None, "+I")],
            [row(1, 5, "a", None, "-U"), row(3, 7, "b", None, "+U"), row(5, 2, None, None, "-U")],
            [row(2, None, None, None, "-D"), row(4, 4, None, None, "-U"), row(5, None, None, None, "-D")],
        ],
        {
            1: ("+I", 0, None),  # a fold with a retract: +I (sum 5 - 5; w retracted to null)
            2: ("-D", None, None),  # remove-record-on-delete: the -D, its own values
            3: ("+U", 7, "b"),  # lone: its own kind
            4: ("-U", 4, None),
            5: ("-D", None, None),
        },
    ),
    "partial-update-remove-record": (
        [
            [row(1, 5, "a", 1, "+I"), row(5, 2, "e", 1, "-U")],
            [row(1, 5, "a", 1, "-U"), row(3, 7, "b", 1, "+U")],
            [row(2, None, None, None, "-D"), row(4, 4, "d", 1, "-U"), row(5, None, None, None, "-D")],
        ],
        {
            1: ("+I", 5, "a"),  # -U skipped
            2: ("-D", None, None),
            3: ("+U", 7, "b"),
            4: ("-U", 4, "d"),
            5: ("-D", None, None),  # removed, met by no add
        },
    ),
    "deduplicate": (
        [
            [row(1, 5, "a", 1, "+I"), row(2, 2, "b", 1, "+U")],
            [row(1, 5, "a", 1, "-U"), row(3, 7, "c", 1, "+U")],
            [row(2, None, None, None, "-D"), row(4, 4, "d", 1, "-U")],
        ],
        {1: ("-U", 5, "a"), 2: ("-D", None, None), 3: ("+U", 7, "c"), 4: ("-U", 4, "d")},
    ),
}


@pytest.mark.parametrize("engine", sorted(BY_HAND))
def test_a_compaction_below_the_top_keeps_kinds_and_retracts(tmp_path, engine):
    root = tmp_path / "db.db" / "t"
    table = new_table(root, engine)
    model = Model(engine)
    model.add(root, table.files())
    commits, expected = BY_HAND[engine]
    for rows in commits:
        write_and_check(table, root, model, engine, rows)
    gone, written = compact(table, root)
    model.compacted(root, gone, written)
    assert len(gone) == 3 and [f["level"] for f in written] == [2]  # below the top: the pick kept the base
    rows = stored(root, written[0])
    kinds = {r["k"]: (oracle.KINDS[r["_VALUE_KIND"]], r["v"], r["w"]) for r in rows}
    assert kinds == expected
    # each row's sequence number is its key's newest version's
    newest = {}
    for f in sorted(gone, key=lambda f: f["max_sequence"]):
        newest.update({r["k"]: r["_SEQUENCE_NUMBER"] for r in stored(root, f)})
    assert {r["k"]: r["_SEQUENCE_NUMBER"] for r in rows} == newest
    history = [base_rows(), *commits]
    check_readers(root, model, engine, history)
    model.compacted(root, *compact(table, root, full=True))  # the top level drops the retracts
    assert all(r["_VALUE_KIND"] == 0 for f in table.files() for r in stored(root, f))
    check_readers(root, model, engine, history, fully_compacted=True)


# -- random changelogs ------------------------------------------------------------------


def changelog(rng: random.Random, engine: str, state: dict, pending: dict, c: int) -> list[dict]:
    """One commit of an upstream changelog over a few keys: inserts, updates as ``-U``
    (the row before) and ``+U`` (sometimes a commit later), deletes (key-only where
    ``remove-record-on-delete`` would keep a delete's values for later adds)."""
    key_only = engine.endswith("remove-record")
    rows = []
    for k in rng.sample(range(12), 5):
        if k in pending:
            new = pending.pop(k)
            rows.append({**new, KIND: "+U"})
            state[k] = new
            continue
        current = state.get(k, {"k": k, "v": 1, "w": "base", "g": 0} if k < BASE_KEYS else None)
        new = {"k": k, "v": rng.randint(-3, 9), "w": rng.choice(["x", "y", None]), "g": c}
        if engine.startswith("partial-update") and new["w"] is None:
            new["w"] = "z"  # partial-update rows carry every column (see the module doc)
        choice = rng.random()
        if current is None:
            rows.append({**new, KIND: "+I"})
            state[k] = new
        elif choice < 0.4:
            rows += [{**current, KIND: "-U"}, {**new, KIND: "+U"}]
            state[k] = new
        elif choice < 0.6:
            rows.append({**current, KIND: "-U"})
            pending[k] = new
        elif choice < 0.8:
            gone = {"k": k, "v": None, "w": None, "g": current["g"] if engine == "partial-update-groups" else None}
            rows.append({**(gone if key_only or rng.random() < 0.5 else current), KIND: "-D"})
            state[k] = None
        else:
            rows.append({**new, KIND: "+I"})
            state[k] = new
    return rows


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("seed", [1, 2])
def test_random_changelogs_compacted_by_the_pick(tmp_path, engine, seed):
    """After each commit and compaction the readers read the model's rows, and every
    compacted file holds the rows, kinds and sequence numbers of Paimon's compaction of
    the files it replaced."""
    rng = random.Random(seed)
    root = tmp_path / "db.db" / "t"
    table = new_table(root, engine)
    model = Model(engine)
    model.add(root, table.files())
    history, state, pending = [base_rows()], {}, {}
    below_top = 0
    for c in range(1, 16):
        rows = changelog(rng, engine, state, pending, c)
        write_and_check(table, root, model, engine, rows)
        history.append(rows)
        gone, written = compact(table, root)
        model.compacted(root, gone, written)
        below_top += sum(f["level"] < TRIGGER for f in written)
        check_readers(root, model, engine, history)
    assert below_top, "some compaction stayed below the top level"
    model.compacted(root, *compact(table, root, full=True))
    check_readers(root, model, engine, history, fully_compacted=True)
