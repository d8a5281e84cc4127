"""Exceptions raised by merge-core.

Every error is a :class:`MergeCoreError`; those caused by the caller's data or options
are also ``ValueError`` so generic handlers keep working.
"""


class MergeCoreError(Exception):
    """Base class of every merge-core error."""


class InvalidInputError(MergeCoreError, ValueError):
    """The input breaks the contract: unsorted run, duplicate or null key, bad option..."""


class SpillError(MergeCoreError, OSError):
    """Reading or writing spill files failed, or a disk limit was exceeded."""


class InternalError(MergeCoreError):
    """A bug inside merge-core (a caught Rust panic, a broken invariant)."""


class CommitConflictError(MergeCoreError):
    """A table commit lost a race that cannot be resolved by retrying (two compactions
    of the same files); the table is unchanged by the losing commit."""


class TableIOError(MergeCoreError, OSError):
    """Reading or writing a table's files failed (a full disk, a permission); the message
    names the file. A failed write or commit leaves the table as it was."""


class TableNotFoundError(MergeCoreError, FileNotFoundError):
    """No merge-core table at the given path (or no such snapshot, tag, or database of a
    catalog)."""


class TableExistsError(MergeCoreError, FileExistsError):
    """A table already exists at the given path (or a tag, or a database of a catalog, of
    that name)."""


class CorruptTableError(MergeCoreError):
    """A file the table's metadata refers to is missing or damaged (the message names it);
    nothing of the read was returned."""


class UnsupportedFeatureError(MergeCoreError):
    """The table uses a feature merge-core cannot read or write yet (the message names
    it), such as ORC data files or a newer format version."""


__all__ = [
    "MergeCoreError",
    "InvalidInputError",
    "SpillError",
    "InternalError",
    "CommitConflictError",
    "TableIOError",
    "TableNotFoundError",
    "TableExistsError",
    "CorruptTableError",
    "UnsupportedFeatureError",
]


def as_invalid_input(e: ValueError) -> InvalidInputError:
    """A ``ValueError`` the native module raised for bad input, as merge-core's own error."""
    return e if isinstance(e, InvalidInputError) else InvalidInputError(str(e))
