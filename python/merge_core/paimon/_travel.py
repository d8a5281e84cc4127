"""Which snapshot a batch read takes: Paimon's time travel.

A read takes the latest snapshot unless it asks for another: by id, by tag, or as of a
time (the newest snapshot committed at or before it). The table's own ``scan.*`` options
ask the same way, as in Paimon's batch scan (``CoreOptions.startupMode``,
``TimeTravelUtil``); a read's arguments override them. Scan modes that read something
other than one snapshot's rows (a delta, an incremental range, files by creation time)
are refused by name.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from ..errors import InvalidInputError, TableNotFoundError, UnsupportedFeatureError
from ..fs import Location
from ._meta import Snapshot, latest_snapshot_id, snapshot_ids

TRAVEL_KEYS = ("scan.snapshot-id", "scan.tag-name", "scan.watermark", "scan.timestamp", "scan.timestamp-millis")
# Scan modes whose batch read is one snapshot's rows, by what picks the snapshot.
LATEST_MODES = ("latest-full", "full", "latest")
SNAPSHOT_MODES = ("from-snapshot", "from-snapshot-full")
REFUSED_MODES = ("latest-delta", "incremental", "from-file-creation-time", "from-creation-timestamp")
REFUSED_KEYS = (
    "scan.watermark",
    "scan.file-creation-time-millis",
    "scan.creation-time-millis",
    "incremental-between",
    "incremental-between-timestamp",
    "incremental-to-auto-tag",
    "incremental-between-tag-to-snapshot",
)


def tag_path(root: Location, name: str) -> Location:
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidInputError(f"{name!r} is not a tag name")
    return root / "tag" / f"tag-{name}"


def load_tag(root: Location, name: str) -> Snapshot:
    """The snapshot a tag holds (its files stay while the tag does)."""
    try:
        return Snapshot.read(tag_path(root, name))
    except FileNotFoundError:
        tags = sorted(n.removeprefix("tag-") for n in (root / "tag").names("tag-"))
        raise TableNotFoundError(f"no tag {name!r} in the table at {root} (its tags: {tags})") from None


def snapshot_as_of(root: Location, millis: int) -> Snapshot:
    """The newest snapshot committed at or before ``millis`` (epoch milliseconds), found
    as Paimon's ``earlierOrEqualTimeMills`` finds it: a binary search of the kept
    snapshots by commit time (which commits make ascending)."""
    ids = snapshot_ids(root)
    low, high = 0, len(ids) - 1
    found = None
    while low <= high:
        middle = (low + high) // 2
        snap = Snapshot.load(root, ids[middle])
        if snap.time_millis <= millis:
            found, low = snap, middle + 1
        else:
            high = middle - 1
    if found is not None:
        return found
    if not ids:
        raise TableNotFoundError(f"the table at {root} has no snapshot yet")
    earliest = Snapshot.load(root, ids[0])
    raise TableNotFoundError(
        f"the table at {root} has no snapshot committed at or before {_iso(millis)}: its earliest kept snapshot, "
        f"{earliest.id}, was committed at {_iso(earliest.time_millis)} (local time)"
    )


def snapshot_to_read(
    root: Location,
    options: Mapping[str, str],
    snapshot: int | None = None,
    tag: str | None = None,
    as_of: datetime.datetime | None = None,
) -> Snapshot | None:
    """The snapshot a batch read takes (``None``: the table has none yet and the read
    asked for none): the read's ``snapshot``, ``tag`` or ``as_of`` (at most one), else
    what the table's ``scan.*`` options say, else the latest."""
    asked = [name for name, value in (("snapshot", snapshot), ("tag", tag), ("as_of", as_of)) if value is not None]
    if len(asked) > 1:
        raise InvalidInputError(f"a read takes one of snapshot, tag and as_of; got {asked}")
    if snapshot is not None:
        return Snapshot.load(root, snapshot)
    if tag is not None:
        return load_tag(root, tag)
    if as_of is not None:
        return snapshot_as_of(root, _millis(as_of))
    return _from_options(root, options)


def _from_options(root: Location, options: Mapping[str, str]) -> Snapshot | None:
    for key in REFUSED_KEYS:
        if key in options:
            raise UnsupportedFeatureError(f"the table's option '{key}' is not supported by merge-core's batch read")
    mode = options.get("scan.mode", "default").strip().lower()
    travel = _travel_option(root, options)
    if mode in REFUSED_MODES:
        raise UnsupportedFeatureError(f"the table's option 'scan.mode' = {mode!r} is not supported by merge-core")
    if mode == "compacted-full":
        return _latest_compacted(root, options)
    if mode in LATEST_MODES:
        return _latest(root)
    if mode == "default":
        return _travel(root, travel) if travel else _latest(root)
    wanted = {"from-timestamp": ("scan.timestamp", "scan.timestamp-millis")}.get(mode)
    if mode in SNAPSHOT_MODES:
        wanted = ("scan.snapshot-id", "scan.tag-name") if mode == "from-snapshot" else ("scan.snapshot-id",)
    if wanted is None:
        raise InvalidInputError(f"the table's option 'scan.mode' has an unknown value {mode!r}")
    if travel is None or travel[0] not in wanted:
        raise InvalidInputError(f"the table's option 'scan.mode' = {mode!r} needs one of {list(wanted)}")
    return _travel(root, travel)


def _travel_option(root: Location, options: Mapping[str, str]) -> tuple[str, str] | None:
    """The one time-travel option the table sets (``scan.version`` resolved as Paimon does)."""
    found = [(key, options[key]) for key in TRAVEL_KEYS if key in options]
    version = options.get("scan.version")
    if version is not None:
        version = version.strip()
        if tag_path(root, version).exists():
            found.append(("scan.tag-name", version))
        elif version.isdigit():
            found.append(("scan.snapshot-id", version))
        elif version.startswith("watermark-"):
            raise UnsupportedFeatureError(
                "the table's option 'scan.version' names a watermark, which merge-core does not read"
            )
        else:
            raise TableNotFoundError(f"the table's option 'scan.version' = {version!r} names no tag or snapshot")
    if len(found) > 1:
        raise InvalidInputError(
            f"the table's options set more than one of {list(TRAVEL_KEYS)}: {[k for k, _ in found]}"
        )
    return found[0] if found else None


def _travel(root: Location, travel: tuple[str, str]) -> Snapshot:
    key, value = travel
    if key == "scan.tag-name":
        return load_tag(root, value.strip())
    if key == "scan.timestamp":
        return snapshot_as_of(root, _millis(_parse_timestamp(value)))
    try:
        number = int(value.strip())
    except ValueError:
        raise InvalidInputError(f"the table's option '{key}' must be an integer, got {value!r}") from None
    if key == "scan.snapshot-id":
        return Snapshot.load(root, number)
    return snapshot_as_of(root, number)


def _latest(root: Location) -> Snapshot | None:
    latest = latest_snapshot_id(root)
    return None if latest is None else Snapshot.load(root, latest)


def _latest_compacted(root: Location, options: Mapping[str, str]) -> Snapshot | None:
    """Paimon's ``compacted-full`` batch read: the newest COMPACT snapshot, else the latest."""
    if (
        options.get("changelog-producer", "none").lower() == "full-compaction"
        or "full-compaction.delta-commits" in options
    ):
        raise UnsupportedFeatureError(
            "'scan.mode' = 'compacted-full' with full-compaction changelogs is not supported by merge-core"
        )
    for i in reversed(snapshot_ids(root)):
        snap = Snapshot.load(root, i)
        if snap.commit_kind == "COMPACT":
            return snap
    return _latest(root)


def _parse_timestamp(text: str) -> datetime.datetime:
    """``scan.timestamp``: a local date-time (``2024-01-01 12:00:00[.fff]``) or a date."""
    try:
        return datetime.datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise InvalidInputError(f"the table's option 'scan.timestamp' is not a date-time: {text!r}") from None


def _millis(moment: datetime.datetime) -> int:
    """Epoch milliseconds of ``moment`` (a naive date-time is local time, as in Paimon)."""
    if not isinstance(moment, datetime.datetime):
        raise InvalidInputError(f"as_of must be a datetime.datetime, got {type(moment).__name__}")
    return int(moment.timestamp() * 1000)


def _iso(millis: int) -> str:
    return datetime.datetime.fromtimestamp(millis / 1000).isoformat(sep=" ", timespec="milliseconds")
