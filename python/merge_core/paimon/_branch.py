"""A branch of a Paimon table, read and written where Paimon keeps it.

A branch (made by Paimon's ``createBranch``: Flink, Spark, pypaimon) has its own
snapshots, schemas, tags, changelogs and consumers under
``branch/branch-<name>/{snapshot,schema,tag,changelog,consumer}``; its manifests, index
files and data files live in the table's own directories, beside main's (Paimon's
``BranchManager``, ``FileStorePathFactory``). :class:`BranchRoot` is the table's root
with that one difference: a path that starts in one of a branch's own directories
leads into the branch's, every other path into the table's. Everything that reads or
commits a table then reads or commits the branch as Paimon does, unchanged.

What removes files (``expire``, ``rollback_to``) decides from the snapshots and tags it
sees from its root, which for a branch would leave out main's; both are refused on a
branch by name (main's ``expire`` keeps every branch's files).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidInputError, TableNotFoundError, UnsupportedFeatureError
from ..fs import Location

MAIN = "main"
BRANCH_DIRS = ("snapshot", "schema", "tag", "changelog", "consumer")


@dataclass(frozen=True)
class BranchRoot(Location):
    """The root of a table as its branch ``branch`` sees it."""

    branch: str = MAIN

    @property
    def branch_dir(self) -> Location:
        return Location(self.store, self.path) / "branch" / f"branch-{self.branch}"

    def __truediv__(self, name: str) -> Location:
        if name.split("/", 1)[0] in BRANCH_DIRS:
            return self.branch_dir / name
        return super().__truediv__(name)


def branch_root(root: Location, branch: str | None) -> Location:
    """The root that reads and commits ``branch`` of the table at ``root`` (``root``
    itself for main)."""
    if branch is None or branch == MAIN:
        return root
    if not isinstance(branch, str) or not branch.strip() or "/" in branch or "\\" in branch or branch.isdigit():
        raise InvalidInputError(f"{branch!r} is not a branch name")
    found = BranchRoot(root.store, root.path, branch)
    if not (found.branch_dir / "schema").names("schema-"):
        raise TableNotFoundError(f"no branch {branch!r} in the table at {root} (its branches: {branches(root)})")
    return found


def branches(root: Location) -> list[str]:
    """The names of the table's branches (main not included)."""
    return [name.removeprefix("branch-") for name in (root / "branch").names("branch-")]


def refuse_on_branch(root: Location, action: str) -> None:
    if isinstance(root, BranchRoot):
        raise UnsupportedFeatureError(
            f"{action} on branch {root.branch!r} is not supported by merge-core: it decides what to remove from the "
            "branch's snapshots and tags alone; run it on the main table, which keeps every branch's files"
        )
