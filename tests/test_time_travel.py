"""Which snapshot a read takes: by id, by tag (made by pypaimon), as of a time, and by the
table's own ``scan.*`` options, read alike by merge-core, pypaimon and pypaimon-rust;
scan modes merge-core does not read are refused by name."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import merge_core as mc
import pyarrow as pa
import pytest
from helpers import pypaimon_rust_rows

pypaimon = pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
HOUR_MS = 3_600_000


def rows(data) -> list[tuple]:
    data = data if isinstance(data, list) else data.to_pylist()
    return sorted((r["k"], r["v"]) for r in data)


def pypaimon_rows(root: Path) -> list[tuple]:
    table = pypaimon.CatalogFactory.create({"warehouse": str(root.parent.parent)}).get_table(f"db.{root.name}")
    builder = table.new_read_builder()
    return rows(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def history(root: Path, options: dict[str, str] | None = None) -> tuple[mc.Table, dict[int, list[tuple]]]:
    """Three writes an hour apart (by their snapshots' times), then a full compaction."""
    table = mc.Table.create(root, SCHEMA, key="k", buckets=2, options=options)
    seen = {}
    for i in range(3):
        snapshot = table.write(pa.table({"k": [i, 10], "v": [i, i]}, schema=SCHEMA))["snapshot"]
        seen[snapshot] = rows(table.read(snapshot=snapshot).read_all())
    compacted = table.compact(full=True)["snapshot"]
    seen[compacted] = seen[compacted - 1]
    base = 1_700_000_000_000
    for snapshot in seen:
        path = root / "snapshot" / f"snapshot-{snapshot}"
        document = json.loads(path.read_text())
        document["timeMillis"] = base + snapshot * HOUR_MS
        path.write_text(json.dumps(document))
    return table, seen


def with_options(root: Path, options: dict[str, str]) -> mc.Table:
    """The table with ``options`` added to its schema, as a peer's ALTER TABLE SET would."""
    path = root / "schema" / "schema-0"
    document = json.loads(path.read_text())
    document["options"].update(options)
    path.write_text(json.dumps(document))
    return mc.Table.open(root)


def test_the_read_arguments_pick_a_snapshot_a_tag_or_a_time(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).create_tag("db.t", "first", snapshot_id=1)
    assert table.tags() == {"first": 1}
    assert rows(table.read(tag="first").read_all()) == seen[1]
    base = 1_700_000_000_000
    at = datetime.datetime.fromtimestamp((base + 2 * HOUR_MS + 60_000) / 1000)
    assert rows(table.read(as_of=at).read_all()) == seen[2]
    assert table.read(as_of=at).stats["snapshot"] == 2
    with pytest.raises(mc.TableNotFoundError, match="no snapshot committed at or before"):
        table.read(as_of=datetime.datetime.fromtimestamp(base / 1000))
    with pytest.raises(mc.TableNotFoundError, match="no tag 'second'.*'first'"):
        table.read(tag="second")
    with pytest.raises(mc.InvalidInputError, match="one of snapshot, tag and as_of"):
        table.read(snapshot=1, tag="first")
    # The tag outlives its snapshot.
    table.expire(keep_snapshots=1)
    assert rows(table.read(tag="first").read_all()) == seen[1]


@pytest.mark.parametrize(
    ("options", "snapshot"),
    [
        ({"scan.snapshot-id": "2"}, 2),
        ({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, 1),
        ({"scan.timestamp-millis": str(1_700_000_000_000 + 2 * HOUR_MS + 5)}, 2),
        ({"scan.mode": "latest-full"}, 4),
        ({"scan.tag-name": "first"}, 1),
        ({"scan.version": "first"}, 1),
        ({"scan.version": "3"}, 3),
    ],
)
def test_the_tables_scan_options_pick_the_snapshot_as_for_the_peers(tmp_path, options, snapshot):
    root = tmp_path / "db.db" / "t"
    _, seen = history(root)
    pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)}).create_tag("db.t", "first", snapshot_id=1)
    table = with_options(root, options)
    got = table.read()
    assert rows(got.read_all()) == seen[snapshot]
    assert got.stats["snapshot"] == snapshot
    assert pypaimon_rows(root) == seen[snapshot]
    if "scan.version" not in options:  # pypaimon-rust 0.4 does not resolve scan.version
        assert rows(pypaimon_rust_rows(root)) == seen[snapshot]


def test_compacted_full_reads_the_newest_compaction(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    table.write(pa.table({"k": [99], "v": [99]}, schema=SCHEMA))
    table = with_options(root, {"scan.mode": "compacted-full"})
    assert rows(table.read().read_all()) == seen[4]
    assert rows(table.read(snapshot=5).read_all()) == seen[4] + [(99, 99)]


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"scan.mode": "incremental"}, mc.UnsupportedFeatureError, "'scan.mode' = 'incremental'"),
        ({"scan.mode": "latest-delta"}, mc.UnsupportedFeatureError, "'scan.mode' = 'latest-delta'"),
        ({"incremental-between": "1,2"}, mc.UnsupportedFeatureError, "'incremental-between'"),
        ({"scan.watermark": "5"}, mc.UnsupportedFeatureError, "'scan.watermark'"),
        ({"scan.file-creation-time-millis": "5"}, mc.UnsupportedFeatureError, "'scan.file-creation-time-millis'"),
        ({"scan.mode": "sideways"}, mc.InvalidInputError, "unknown value 'sideways'"),
        ({"scan.mode": "from-timestamp"}, mc.InvalidInputError, "needs one of"),
        ({"scan.snapshot-id": "1", "scan.tag-name": "x"}, mc.InvalidInputError, "more than one of"),
        ({"scan.snapshot-id": "one"}, mc.InvalidInputError, "'scan.snapshot-id' must be an integer"),
        ({"scan.version": "nothing"}, mc.TableNotFoundError, "names no tag or snapshot"),
    ],
)
def test_scan_options_it_does_not_read_are_refused_by_name(tmp_path, options, error, match):
    root = tmp_path / "db.db" / "t"
    history(root)
    table = with_options(root, options)
    with pytest.raises(error, match=match):
        table.read()
    # A read's own argument picks the snapshot whatever the table's options say.
    assert rows(table.read(snapshot=1).read_all()) == [(0, 0), (10, 0)]


def test_as_of_picks_the_snapshot_pypaimon_picks_around_every_commit_time(tmp_path):
    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    base = 1_700_000_000_000
    for snapshot in seen:
        for millis in (base + snapshot * HOUR_MS - 1, base + snapshot * HOUR_MS, base + snapshot * HOUR_MS + 1):
            at = datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc)
            if millis < base + HOUR_MS:
                with pytest.raises(mc.TableNotFoundError, match="its earliest kept snapshot, 1, was committed at"):
                    table.read(as_of=at)
                continue
            expected = snapshot if millis >= base + snapshot * HOUR_MS else snapshot - 1
            got = table.read(as_of=at)
            assert rows(got.read_all()) == seen[expected]
            assert got.stats["snapshot"] == expected
            with_options(root, {"scan.timestamp-millis": str(millis)})
            assert pypaimon_rows(root) == seen[expected]
            clear_options(root, ["scan.timestamp-millis"])


def clear_options(root: Path, keys: list[str]) -> None:
    path = root / "schema" / "schema-0"
    document = json.loads(path.read_text())
    for key in keys:
        document["options"].pop(key, None)
    path.write_text(json.dumps(document))


def test_a_naive_as_of_is_local_time_as_paimon_reads_scan_timestamp(tmp_path, monkeypatch):
    import time

    root = tmp_path / "db.db" / "t"
    table, seen = history(root)
    base = 1_700_000_000_000
    try:
        for zone in ("Asia/Kolkata", "America/Los_Angeles"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            local = datetime.datetime.fromtimestamp((base + 2 * HOUR_MS + 1000) / 1000)  # naive, local wall time
            assert table.read(as_of=local).stats["snapshot"] == 2
            assert table.read(as_of=local - datetime.timedelta(seconds=2)).stats["snapshot"] == 1
            text = local.strftime("%Y-%m-%d %H:%M:%S")
            with_options(root, {"scan.timestamp": text})
            assert pypaimon_rows(root) == seen[2] == rows(mc.Table.open(root).read().read_all())
            clear_options(root, ["scan.timestamp"])
    finally:
        monkeypatch.undo()
        time.tzset()
