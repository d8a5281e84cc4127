"""Rolling a Paimon table back to an earlier snapshot or tag: Paimon's ``rollbackTo``.

What goes is Paimon's rule (``RollbackHelper.cleanLargerThan``): every snapshot later
than the target, every kept changelog (``changelog/changelog-N``) later than it, and
every tag of a later snapshot. Rolling back to a tag whose snapshot has expired writes
the tag's snapshot back into ``snapshot/`` and points ``EARLIEST`` at it
(``createSnapshotFileIfNeeded``); a snapshot id that has expired but that a tag holds
rolls back to that tag. Branches and consumers are left as they are.

Paimon (since 1.2) leaves the files of the removed snapshots to its orphan-file clean;
merge-core removes them at once, decided as ``expire`` decides (``_expire.References``):
a file goes only if a removed snapshot, tag or changelog names it and nothing kept
does (the target, the snapshots before it, the remaining tags, every branch's
snapshots and tags, the remaining changelogs). Files nothing names (a write in
progress) are left alone.

Order, so that a process killed at any step leaves a table every reader reads whole:

1. Everything is decided first (the target, what goes, which files each kept snapshot
   uses, and that the target's data files are where the removal looks); a damaged or
   unknown file stops the rollback before anything changes.
2. A tag's expired snapshot is written back first: until the later snapshots are gone
   the table still reads as its latest, and from then on the target is there to read.
3. The later snapshots go, newest first, so the snapshots left always end at one that
   was committed: the table reads as one of its past states. Before each goes,
   ``LATEST`` names the snapshot below it. Readers trust that hint while the snapshot
   after it does not exist (Paimon's Java trusts it even if its own file is gone), so
   it names a snapshot that exists or the newest one at every step. The one exception
   is a restored snapshot, which has a gap after it: between its hint and the removal
   of the last later snapshot, a reader trusting the hint reads the target, one
   listing the directory that later snapshot; both are whole.
4. The later changelogs, then the later tags.
5. Last, the files only the removed ones used. A crash before or during this step
   leaves unused files, which ``expire`` later removes as orphans; never a kept
   snapshot without its files.

Run it with no writer committing to the table (as Paimon asks): a commit in flight
builds on the snapshot it read, which the rollback may remove.
"""

from __future__ import annotations

import datetime
import json
import math

from ..errors import CorruptTableError, InvalidInputError, TableIOError, TableNotFoundError
from ..fs import Location
from ._expire import References, _candidates, _remove_unused
from ._meta import Snapshot, snapshot_ids
from ._options import bool_option
from ._travel import load_tag, snapshot_to_read

TAG_ONLY_FIELDS = ("tagCreateTime", "tagTimeRetained")


def rollback(
    root: Location,
    options: dict[str, str],
    snapshot: int | None,
    tag: str | None,
    as_of: datetime.datetime | None = None,
) -> dict[str, int]:
    """Rolls the table at ``root`` back to ``snapshot``, ``tag`` or the snapshot current
    ``as_of`` a time (exactly one); returns the snapshot rolled back to and what was
    removed."""
    target, source = _target(root, snapshot, tag, as_of)
    later = [Snapshot.load(root, i) for i in snapshot_ids(root) if i > target.id]
    tags = {name: load_tag(root, name) for name in _names(root / "tag", "tag-")}
    later_tags = sorted(name for name, snap in tags.items() if snap.id > target.id)
    later_changelogs = [i for i in _numbered(root / "changelog", "changelog-") if i > target.id]

    references = References(root)
    references.add_kept_file(source)  # the target's files stay, and must be where the removal looks
    candidates = list(_candidates(root))
    references.check_layout(candidates)
    for snap in later:
        references.add_expired(snap)
    for name in later_tags:
        references.add_expired(tags[name], root / "tag" / f"tag-{name}")
    for i in later_changelogs:
        path = root / "changelog" / f"changelog-{i}"
        references.add_expired(Snapshot.read(path), path)

    try:
        _remove_later_snapshots(root, target, source, [snap.id for snap in later])
        _remove_later_changelogs(root / "changelog", later_changelogs)
        for name in later_tags:
            (root / "tag" / f"tag-{name}").delete()
        references.add_kept(snapshot_ids(root))
        clean_dirs = bool_option(options, "snapshot.clean-empty-directories")
        removed = _remove_unused(root, candidates, references, math.inf, clean_dirs)
    except OSError as e:
        raise TableIOError(f"rolling {root} back to snapshot {target.id} failed: {e}") from e
    return {
        "snapshot": target.id,
        "snapshots_removed": len(later),
        "tags_removed": len(later_tags),
        "changelogs_removed": len(later_changelogs),
        **removed,
    }


def _remove_later_snapshots(root: Location, target: Snapshot, source: Location, later: list[int]) -> None:
    """Steps 2 and 3 of the module's order: the target restored if it has expired, then
    the ``later`` snapshots removed newest first, ``LATEST`` naming the one below each."""
    directory = root / "snapshot"
    if not (directory / f"snapshot-{target.id}").exists():
        (directory / f"snapshot-{target.id}").create_new(_as_snapshot(source.read_text()))
        if target.id <= min(snapshot_ids(root)):
            (directory / "EARLIEST").write_text(str(target.id))
    remaining = [target.id, *later]
    for newest, below in reversed(list(zip(remaining[1:], remaining, strict=False))):
        (directory / "LATEST").write_text(str(below))
        (directory / f"snapshot-{newest}").delete()
    (directory / "LATEST").write_text(str(target.id))


def _remove_later_changelogs(directory: Location, later: list[int]) -> None:
    """Paimon's ``cleanLongLivedChangelogs``: the changelog's ``LATEST`` then names the
    newest left, or -1."""
    for i in reversed(later):
        (directory / f"changelog-{i}").delete()
    if later:
        kept = _numbered(directory, "changelog-")
        (directory / "LATEST").write_text(str(kept[-1] if kept else -1))


def _target(
    root: Location, snapshot: int | None, tag: str | None, as_of: datetime.datetime | None
) -> tuple[Snapshot, Location]:
    """The snapshot to roll back to and the file holding it (a snapshot or a tag file).
    ``as_of`` picks the newest snapshot committed by then, as Paimon's
    ``rollback_to_timestamp`` does (a naive time is local)."""
    if sum(x is not None for x in (snapshot, tag, as_of)) != 1:
        raise InvalidInputError("a rollback takes one of snapshot, tag and as_of")
    if as_of is not None:
        snapshot = snapshot_to_read(root, {}, as_of=as_of).id
    if tag is not None:
        if not isinstance(tag, str):
            raise InvalidInputError(f"tag must be a tag's name, got {type(tag).__name__}")
        return load_tag(root, tag), root / "tag" / f"tag-{tag}"
    if not isinstance(snapshot, int) or isinstance(snapshot, bool):
        raise InvalidInputError(f"snapshot must be a snapshot id, got {snapshot!r}")
    path = root / "snapshot" / f"snapshot-{snapshot}"
    try:
        return Snapshot.read(path), path
    except FileNotFoundError:
        pass
    for name in _names(root / "tag", "tag-"):  # an expired snapshot a tag still holds
        if load_tag(root, name).id == snapshot:
            return load_tag(root, name), root / "tag" / f"tag-{name}"
    kept = snapshot_ids(root)
    raise TableNotFoundError(
        f"no snapshot {snapshot} to roll back to in the table at {root} "
        f"(the snapshots kept: {kept}, and no tag holds it)"
    )


def _as_snapshot(text: str) -> str:
    """A tag's JSON as its snapshot's, without the fields only a tag has (Paimon's
    ``Tag.trimToSnapshot``)."""
    document = json.loads(text)
    for key in TAG_ONLY_FIELDS:
        document.pop(key, None)
    return json.dumps(document, indent=2)


def _names(directory: Location, prefix: str) -> list[str]:
    return [n.removeprefix(prefix) for n in directory.names(prefix)]


def _numbered(directory: Location, prefix: str) -> list[int]:
    """The ids of ``prefix<N>`` files in ``directory``, ascending."""
    ids = []
    for name in _names(directory, prefix):
        if not name.isdigit():
            raise CorruptTableError(f"{directory / (prefix + name)} is not named {prefix}<number>")
        ids.append(int(name))
    return sorted(ids)
