"""One table shared by merge-core and pypaimon, in the style of Paimon's own
``FileStoreCommitTest`` and ``ExpireSnapshotsTest``: random histories of writes and deletes
by both, compactions, tags, branches and expires; after every step every kept snapshot,
tag and branch is read by merge-core, pypaimon and pypaimon-rust and equals a model. Then
writers, compactions and expires killed at random moments, and racing processes: the table
stays readable, equal to the model before or after the killed step, and an expire clears
what the killed step left."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_commit
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int64())])
State = dict[tuple[str, int], int]  # (partition, key) -> value

rows_st = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 9), st.integers(-99, 99)), min_size=1, max_size=10
).map(lambda rows: {(p, k): v for p, k, v in rows})  # one version a key: pypaimon folds a commit itself


def as_rows(state: State) -> list[tuple]:
    return sorted((p, k, v) for (p, k), v in state.items())


def read_rows(table: pa.Table | list[dict]) -> list[tuple]:
    data = table if isinstance(table, list) else table.to_pylist()
    return sorted((r["p"], r["k"], r["v"]) for r in data)


class Peers:
    """The same table seen by pypaimon and pypaimon-rust."""

    def __init__(self, warehouse: Path, name: str):
        from pypaimon_rust.datafusion import PaimonCatalog

        self.catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
        self.rust = PaimonCatalog({"warehouse": str(warehouse)})
        self.name = name

    def table(self, branch: str | None = None):
        return self.catalog.get_table(f"db.{self.name}" + (f"$branch_{branch}" if branch else ""))

    def pypaimon(self, options: dict[str, str], branch: str | None = None) -> list[tuple]:
        table = self.table(branch).copy(options) if options else self.table(branch)
        builder = table.new_read_builder()
        return read_rows(builder.new_read().to_arrow(builder.new_scan().plan().splits()))

    def pypaimon_rust(self, options: dict[str, str], branch: str | None = None) -> list[tuple]:
        table = self.rust.get_table(("db", self.name + (f"$branch_{branch}" if branch else "")))
        builder = table.new_read_builder(options)
        return read_rows(
            [r for b in builder.new_read().read(builder.new_scan().plan().splits()) for r in b.to_pylist()]
        )


class SharedTable(RuleBasedStateMachine):
    """The model: each snapshot's rows, each tag's and each branch's."""

    counter = itertools.count()

    @initialize()
    def create(self):
        self.warehouse = Path(os.environ["SHARED_TABLE_TMP"]) / f"w{next(self.counter)}"
        self.name = "t"
        self.root = self.warehouse / "db.db" / self.name
        self.table = mc.Table.create(self.root, SCHEMA, key="k", partition_by="p", buckets=2)
        self.peers = Peers(self.warehouse, self.name)
        self.snapshots: dict[int, State] = {}
        self.tags: dict[str, State] = {}
        self.branches: dict[str, State] = {}

    def latest(self) -> State:
        return dict(self.snapshots[max(self.snapshots)]) if self.snapshots else {}

    def committed(self, snapshot: int | None, state: State) -> None:
        if snapshot is not None:
            self.snapshots[snapshot] = state

    def wrote(self, before: list[int], state: State) -> None:
        """A merge-core write's snapshots: its APPEND, then its own compaction's COMPACT
        if it picked anything, both holding ``state``."""
        for snapshot in set(self.table.snapshots()) - set(before):
            self.committed(snapshot, state)

    @rule(rows=rows_st)
    def merge_core_writes(self, rows):
        data = pa.Table.from_pylist([{"p": p, "k": k, "v": v} for (p, k), v in rows.items()], schema=SCHEMA)
        before, state = self.table.snapshots(), {**self.latest(), **rows}
        self.table.write(data)
        self.wrote(before, state)

    @rule(rows=rows_st)
    def pypaimon_writes(self, rows):
        before = self.table.snapshots()
        pypaimon_commit(self.peers.table(), [{"p": p, "k": k, "v": v} for (p, k), v in rows.items()], SCHEMA)
        (snapshot,) = set(self.table.snapshots()) - set(before)
        self.committed(snapshot, {**self.latest(), **rows})

    @rule(keys=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 9)), min_size=1, max_size=4))
    def merge_core_deletes(self, keys):
        data = pa.table({"p": [p for p, _ in keys], "k": [k for _, k in keys]})
        before, state = self.table.snapshots(), {key: v for key, v in self.latest().items() if key not in set(keys)}
        self.table.delete(data)
        self.wrote(before, state)

    @rule(full=st.booleans())
    def merge_core_compacts(self, full):
        self.committed(self.table.compact(full=full)["snapshot"], self.latest())

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data())
    def pypaimon_tags(self, data):
        snapshot = data.draw(st.sampled_from(sorted(self.snapshots)))
        name = f"tag{next(self.counter)}-{snapshot}"
        self.peers.catalog.create_tag(f"db.{self.name}", name, snapshot_id=snapshot)
        self.tags[name] = self.snapshots[snapshot]

    @precondition(lambda self: self.tags)
    @rule(data=st.data(), also_branch=st.booleans())
    def pypaimon_deletes_a_tag(self, data, also_branch):
        name = data.draw(st.sampled_from(sorted(self.tags)))
        # A branch made from the tag outlives it. (pypaimon 2.1 makes the branch's snapshot
        # by copying the snapshot file, not the tag file as Java does: never of a tag whose
        # snapshot expired.)
        if also_branch and self._snapshot_file_of_tag(name).exists():
            branch = f"b{next(self.counter)}"
            self.peers.catalog.create_branch(f"db.{self.name}", branch, tag_name=name)
            self.branches[branch] = self.tags[name]
        self.peers.catalog.delete_tag(f"db.{self.name}", name)
        del self.tags[name]

    def _snapshot_file_of_tag(self, name: str) -> Path:
        snapshot_id = json.loads((self.root / "tag" / f"tag-{name}").read_text())["id"]
        return self.root / "snapshot" / f"snapshot-{snapshot_id}"

    @precondition(lambda self: self.snapshots)
    @rule(keep=st.integers(1, 3))
    def merge_core_expires(self, keep):
        self.table.expire(keep_snapshots=keep, orphan_age=0)
        self.snapshots = {s: state for s, state in self.snapshots.items() if s in self.table.snapshots()}
        assert sorted(self.snapshots) == self.table.snapshots()[-len(self.snapshots) :]

    @invariant()
    def every_kept_state_reads_alike(self):
        if not hasattr(self, "table"):
            return
        assert set(self.snapshots) == set(self.table.snapshots())
        for snapshot, state in self.snapshots.items():
            assert read_rows(self.table.read(snapshot=snapshot).read_all()) == as_rows(state), snapshot
        if self.snapshots:
            latest = max(self.snapshots)
            assert self.peers.pypaimon({}) == as_rows(self.snapshots[latest])
            assert self.peers.pypaimon_rust({"scan.snapshot-id": str(latest)}) == as_rows(self.snapshots[latest])
        for name, state in self.tags.items():
            assert read_rows(self.table.read(tag=name).read_all()) == as_rows(state), name
            assert self.peers.pypaimon({"scan.tag-name": name}) == as_rows(state), name
            assert self.peers.pypaimon_rust({"scan.tag-name": name}) == as_rows(state), name
        for name, state in self.branches.items():
            assert self.peers.pypaimon({}, branch=name) == as_rows(state), name
            assert self.peers.pypaimon_rust({}, branch=name) == as_rows(state), name


@pytest.fixture
def shared_table_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARED_TABLE_TMP", str(tmp_path))


def test_random_histories_of_two_writers_tags_branches_and_expires(shared_table_tmp):
    SharedTable.TestCase.settings = settings(
        max_examples=12, stateful_step_count=10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    SharedTable.TestCase().runTest()


STEP = textwrap.dedent(
    """
    import sys, pyarrow as pa, merge_core as mc
    root, step, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    table = mc.Table.open(root)
    print("ready", flush=True)
    if step == "write":
        keys = list(range(n))
        table.write(pa.table({"k": keys, "p": ["a"] * n, "v": [n] * n}), memory_limit="8MiB")
    elif step == "compact":
        table.compact(full=True)
    else:
        table.expire(keep_snapshots=1)
    print("done", flush=True)
    """
)


def files_on_disk(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file() and not p.name.startswith(("snapshot-", "schema-"))}


@pytest.mark.parametrize("seed", range(2))
def test_steps_killed_at_random_moments_lose_nothing(tmp_path, seed):
    import random

    rng = random.Random(seed)
    root = tmp_path / "db.db" / "t"
    table = mc.Table.create(root, SCHEMA, key="k", partition_by="p", buckets=2)
    peers = Peers(tmp_path, "t")
    table.write(pa.table({"k": [-1], "p": ["b"], "v": [0]}))
    state: State = {("b", -1): 0}
    for n in (50_000, 80_000, 120_000, 60_000, 90_000):
        before = table.snapshots()
        for step in ("write", "compact", "expire"):
            child = subprocess.Popen(
                [sys.executable, "-c", STEP, str(root), step, str(n)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # a killed step's traceback
                text=True,
            )
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0, 0.8))
            child.send_signal(rng.choice([signal.SIGKILL, signal.SIGINT]))
            child.communicate(timeout=60)
            after = table.snapshots()
            if step == "write" and after and (not before or after[-1] > before[-1]):
                state = {**state, **{("a", k): n for k in range(n)}}
            before = after
            want = as_rows(state)
            assert read_rows(table.read().read_all()) == want
            assert peers.pypaimon({}) == want
            assert peers.pypaimon_rust({"scan.snapshot-id": str(after[-1])}) == want
    # What the killed steps left is unused: an expire takes it all.
    table.expire(keep_snapshots=1, orphan_age=0)
    live = {Path(f["path"]).name for f in table.files()}
    latest = json.loads((root / "snapshot" / f"snapshot-{table.snapshots()[-1]}").read_text())
    on_disk = files_on_disk(root)
    assert {n for n in on_disk if n.startswith("data-")} == live
    assert latest["baseManifestList"] in on_disk and latest["deltaManifestList"] in on_disk
    assert not [n for n in on_disk if n.endswith(".tmp")]
