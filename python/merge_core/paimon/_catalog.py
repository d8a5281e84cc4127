"""``mc.Catalog``: the databases and tables of a warehouse, laid out as Paimon's filesystem
catalog lays them out, so that Paimon's own catalogs (Java's ``FileSystemCatalog``,
pypaimon's) and merge-core see the same databases and tables.

::

    <warehouse>/
      <db>.db/                 a database: a directory whose name ends in ".db"
        <table>/               a table: a directory holding schema/schema-N
          schema/schema-0
          ...
      sys                      Paimon's system database: computed by its catalog, never on disk

The catalog keeps nothing of its own: the listing of the warehouse is the list of
databases, the listing of a database the list of its tables. Names are checked as
Paimon's ``Identifier`` and ``AbstractCatalog`` check them (a ``$`` in a table name asks
for a system table or a branch; ``sys`` is the system database), and further so that a
name is one plain directory name (docs/table-format.md, "Catalog")."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..errors import InvalidInputError, TableExistsError, TableNotFoundError, UnsupportedFeatureError
from ..fs import Location, resolve
from ._options import bool_option
from ._schema import schema_ids
from ._table import Table

DATABASE_SUFFIX = ".db"
SYSTEM_DATABASE = "sys"
#: What separates a table's name from a branch (``t$branch_b``) or a system table (``t$snapshots``).
SYSTEM_SPLITTER = "$"
BRANCH_PREFIX = "branch_"


class Catalog:
    """The databases and tables of ``warehouse``, as Paimon's filesystem catalog keeps
    them (``<warehouse>/<db>.db/<table>/``): what merge-core creates here, Paimon's
    catalogs (Java, pypaimon) list and open, and the other way round.

    >>> import pyarrow as pa, merge_core as mc, tempfile
    >>> catalog = mc.Catalog(tempfile.mkdtemp())
    >>> catalog.create_database("shop")
    >>> schema = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int64())])
    >>> t = catalog.create_table("shop.orders", schema, key="id", buckets=2)
    >>> t.write(pa.table({"id": [1, 2], "qty": [3, 4]}))["snapshot"]
    1
    >>> catalog.list_databases(), catalog.list_tables("shop")
    (['shop'], ['orders'])
    >>> catalog.rename_table("shop.orders", "shop.sales")
    >>> catalog.get_table("shop.sales").read().read_all().num_rows
    2
    >>> catalog.drop_database("shop", cascade=True)
    ['sales']
    >>> catalog.list_databases()
    []
    """

    def __init__(self, warehouse: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None) -> None:
        """``warehouse``: a local path, a ``file://`` or ``s3://`` URI, or a path on
        ``filesystem`` (as for :meth:`merge_core.Table.create`). It need not exist yet:
        :meth:`create_database` makes it."""
        self._root = resolve(warehouse, filesystem)
        found = self._root.store.info(self._root.path)
        if found is not None and found.type == pafs.FileType.File:
            raise InvalidInputError(f"the warehouse {self._root} is a file, not a directory")

    @property
    def warehouse(self) -> Path | str:
        """Where the warehouse is: a ``Path`` on the local disk, else its URI."""
        return Path(self._root.path) if self._root.store.local else str(self._root)

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._root.store.fs

    def __repr__(self) -> str:
        return f"<merge_core.Catalog {self._root}>"

    # -- databases ------------------------------------------------------------------

    def list_databases(self) -> list[str]:
        """The databases, sorted: every directory of the warehouse whose name ends in
        ``.db`` (none if the warehouse does not exist yet)."""
        return sorted(
            info.base_name[: -len(DATABASE_SUFFIX)]
            for info in self._root.store.listing(self._root.path)
            if info.type == pafs.FileType.Directory
            and info.base_name.endswith(DATABASE_SUFFIX)
            and info.base_name != DATABASE_SUFFIX
        )

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        """Makes the directory ``<warehouse>/<name>.db``. A database of that name is a
        ``TableExistsError`` unless ``ignore_if_exists``."""
        _database_name(name)
        _not_system_database(name, "created")
        if self._database_exists(name):
            if ignore_if_exists:
                return
            raise TableExistsError(f"database {name!r} already exists in {self._root}")
        where = self._database(name)
        where.store.fs.create_dir(where.path, recursive=True)

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> list[str]:
        """Removes the database's directory and everything in it, as Paimon's drop does,
        and returns the names of the tables it dropped. A database holding tables is
        refused unless ``cascade``, which drops each table first (as :meth:`drop_table`);
        a missing database is a ``TableNotFoundError`` unless ``ignore_if_not_exists``."""
        _database_name(name)
        _not_system_database(name, "dropped")
        if not self._database_exists(name):
            if ignore_if_not_exists:
                return []
            raise self._no_database(name)
        tables = self.list_tables(name)
        if tables and not cascade:
            raise InvalidInputError(
                f"database {name!r} is not empty: it holds {_listed(tables, 'table')};"
                " drop them first or pass cascade=True"
            )
        for table in tables:
            self._drop(self._table(name, table))
        where = self._database(name)
        where.store.delete_tree(where.path)
        return tables

    # -- tables ---------------------------------------------------------------------

    def list_tables(self, database: str) -> list[str]:
        """The tables of ``database``, sorted: every directory in it holding a
        ``schema/schema-N`` file, as Paimon counts them (primary-key and append tables
        alike)."""
        _database_name(database)
        _readable_database(database)
        self._require_database(database)
        where = self._database(database)
        return sorted(
            info.base_name
            for info in where.store.listing(where.path)
            if info.type == pafs.FileType.Directory and schema_ids(where / info.base_name)
        )

    def get_table(self, identifier: str) -> Table:
        """The table ``"db.table"``: a ``TableNotFoundError`` names the database or table
        that does not exist; system tables (``db.t$snapshots``, the ``sys`` database) and
        ``"db.table$branch_b"`` is its branch ``b`` (``Table.open(..., branch="b")``)."""
        database, table = _identifier(identifier)
        _readable_database(database)
        table, branch = _readable_table(database, table)
        root = self._existing_table(database, table)
        return Table.open(root.path, filesystem=root.store.fs, branch=branch)

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        key: str | Sequence[str] | None,
        partition_by: str | Sequence[str] = (),
        buckets: int | None = None,
        merge: Any = "deduplicate",
        sequence: str | Sequence[str] | None = None,
        sequence_order: str = "ascending",
        options: Mapping[str, str] | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Creates the table ``"db.table"`` in an existing database, with the arguments
        of :meth:`merge_core.Table.create`, and returns it. A table of that name is a
        ``TableExistsError`` unless ``ignore_if_exists`` (then the existing table is
        returned as it is). As in Paimon's catalog, the options may not move the table
        (``path``) nor ask for ``auto-create``."""
        database, table = _identifier(identifier)
        _data_table(database, table, "create")
        _catalog_options(options)
        self._require_database(database)
        root = self._table(database, table)
        if schema_ids(root):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableExistsError(f"table {database}.{table} already exists in {self._root}")
        try:
            return Table.create(
                root.path,
                schema,
                key,
                partition_by=partition_by,
                buckets=buckets,
                merge=merge,
                sequence=sequence,
                sequence_order=sequence_order,
                options=options,
                filesystem=root.store.fs,
            )
        except TableExistsError:  # another writer created it meanwhile
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableExistsError(f"table {database}.{table} already exists in {self._root}") from None

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        """Removes the table's directory and every file in it, as Paimon's drop does:
        its snapshots, tags, branches and data files, whoever wrote them. Files at
        external paths (``data-file.external-paths``) stay (Paimon's drop removes those
        directories whole). A missing table is a ``TableNotFoundError`` unless
        ``ignore_if_not_exists``."""
        database, table = _identifier(identifier)
        _data_table(database, table, "drop")
        try:
            root = self._existing_table(database, table)
        except TableNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        self._drop(root)

    def rename_table(self, source: str, target: str) -> None:
        """Renames the table ``source`` to ``target`` (both ``"db.table"``; the target's
        database must exist), moving its directory in one step, as Paimon does on a
        local disk. On an object store, where Paimon copies the files one by one (a
        failure leaves two half tables), renaming is refused."""
        database, table = _identifier(source)
        new_database, new_table = _identifier(target)
        _data_table(database, table, "rename")
        _data_table(new_database, new_table, "rename")
        old = self._existing_table(database, table)
        self._require_database(new_database)
        new = self._table(new_database, new_table)
        if schema_ids(new):
            raise TableExistsError(f"table {new_database}.{new_table} already exists in {self._root}")
        if new.exists():
            raise InvalidInputError(f"cannot rename to {new_database}.{new_table}: {new} exists and is not a table")
        if not old.store.local:
            raise UnsupportedFeatureError(
                f"renaming a table on {old.store.fs.type_name} ({old}): an object store has no rename of a directory;"
                " Paimon copies each file and removes it, which a failure leaves half done"
            )
        try:
            os.rename(old.path, new.path)  # one step: readers see the table at one name or the other
        except OSError as e:
            raise InvalidInputError(f"cannot rename {database}.{table} to {new_database}.{new_table}: {e}") from e

    # -- where things are -----------------------------------------------------------

    def _database(self, name: str) -> Location:
        return self._root / f"{name}{DATABASE_SUFFIX}"

    def _table(self, database: str, table: str) -> Location:
        return self._database(database) / table

    def _database_exists(self, name: str) -> bool:
        where = self._database(name)
        found = where.store.info(where.path)
        return found is not None and found.type == pafs.FileType.Directory

    def _no_database(self, name: str) -> TableNotFoundError:
        known = self.list_databases()
        return TableNotFoundError(f"database {name!r} does not exist in {self._root} (its databases: {known})")

    def _require_database(self, name: str) -> None:
        if not self._database_exists(name):
            raise self._no_database(name)

    def _existing_table(self, database: str, table: str) -> Location:
        self._require_database(database)
        root = self._table(database, table)
        if not schema_ids(root):
            raise TableNotFoundError(
                f"table {database}.{table} does not exist in {self._root} (the tables of {database}: "
                f"{self.list_tables(database)})"
            )
        return root

    def _drop(self, root: Location) -> None:
        """Removes a table, its schema last: a drop cut short leaves a table (missing
        files, read as damaged) that the next drop finishes, never a directory that no
        longer counts as a table but still holds its files."""
        store = root.store
        entries = store.listing(root.path)
        for info in sorted(entries, key=lambda info: info.base_name == "schema"):
            if info.type == pafs.FileType.Directory:
                store.delete_tree(info.path)
            else:
                store.delete(info.path)
        store.delete_tree(root.path)


# -- names ----------------------------------------------------------------------------


def _identifier(identifier: str) -> tuple[str, str]:
    """``"db.table"`` as (database, table): split at the first dot, as Paimon's
    ``Identifier.fromString`` splits it (a table's name may hold dots, a database's not)."""
    if not isinstance(identifier, str):
        raise InvalidInputError(f"a table is named 'database.table', got {type(identifier).__name__}")
    database, dot, table = identifier.partition(".")
    if not dot:
        raise InvalidInputError(f"{identifier!r} does not name a table: give 'database.table'")
    _database_name(database)
    _plain_name(table, "table", identifier)
    return database, table


def _database_name(name: str) -> None:
    if not isinstance(name, str):
        raise InvalidInputError(f"a database's name must be a string, got {type(name).__name__}")
    _plain_name(name, "database", name)
    if "." in name:
        raise InvalidInputError(
            f"database name {name!r} holds a dot: 'db.table' names table 'table' of database 'db', so a database"
            " named with a dot could not be told from its tables"
        )


def _plain_name(name: str, what: str, given: str) -> None:
    """One plain directory name: not blank, no path separator, no ``:`` (Paimon's Java
    paths read ``a:b`` as a URI), no control character."""
    if not name.strip():
        raise InvalidInputError(f"{given!r}: a {what}'s name must not be blank")
    bad = [repr(c) for c in "/\\:" if c in name]
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        bad.append("a control character")
    if bad or name in (".", ".."):
        reason = f"holds {' and '.join(bad)}" if bad else "is not a name"
        raise InvalidInputError(f"{given!r}: a {what}'s name must be one plain directory name, and {name!r} {reason}")


def _not_system_database(name: str, done: str) -> None:
    if name == SYSTEM_DATABASE:
        raise InvalidInputError(f"{SYSTEM_DATABASE!r} is Paimon's system database: it cannot be {done}")


def _readable_database(name: str) -> None:
    if name == SYSTEM_DATABASE:
        raise UnsupportedFeatureError(
            f"{SYSTEM_DATABASE!r} is Paimon's system database, whose tables Paimon's catalog computes;"
            " merge-core reads data tables only"
        )


def _readable_table(database: str, table: str) -> tuple[str, str | None]:
    """The table and branch (``t$branch_b``) a name reads; a system table (``t$snapshots``)
    is refused by name."""
    if SYSTEM_SPLITTER not in table:
        return table, None
    parts = table.split(SYSTEM_SPLITTER)
    if len(parts) == 2 and parts[1].startswith(BRANCH_PREFIX):
        return parts[0], parts[1][len(BRANCH_PREFIX) :]
    name = parts[-1]
    raise UnsupportedFeatureError(
        f"{database}.{table} is Paimon's system table {name!r} of {database}.{parts[0]}: merge-core reads data tables"
        " only"
    )


def _data_table(database: str, table: str, action: str) -> None:
    """A table that can be created, dropped or renamed: not in the system database, no
    ``$`` (Paimon reads one as a branch or a system table of ``table``)."""
    if database == SYSTEM_DATABASE:
        raise InvalidInputError(f"cannot {action} {database}.{table}: {SYSTEM_DATABASE!r} is Paimon's system database")
    if SYSTEM_SPLITTER in table:
        raise InvalidInputError(
            f"cannot {action} {database}.{table}: a '$' in a table's name names a branch or a system table of"
            f" {database}.{table.partition(SYSTEM_SPLITTER)[0]} in Paimon"
        )


def _catalog_options(options: Mapping[str, str] | None) -> None:
    """What Paimon's catalog refuses in a new table's options."""
    options = {str(k): str(v) for k, v in (options or {}).items()}
    if "path" in options:
        raise InvalidInputError(
            "option 'path' cannot be given to a catalog's table: the catalog places it at <warehouse>/<db>.db/<table>"
        )
    if bool_option(options, "auto-create"):
        raise InvalidInputError("option 'auto-create' must be false for a catalog's table, as in Paimon")


def _listed(names: list[str], word: str) -> str:
    shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
    return f"{len(names)} {word}{'' if len(names) == 1 else 's'} ({shown})"
