"""``merge-core catalog ...``: the databases and tables of a warehouse, as Paimon's
filesystem catalog keeps them (``<W>/<DB>.db/<TABLE>``): list, create and drop
databases, drop and rename tables. Tables are created, written and read with
``merge-core table ... DB.TABLE --warehouse W``."""

from __future__ import annotations

import argparse

import merge_core as mc

from .common import HelpFormatter, add_command, add_warehouse_option, plural

EXAMPLES = """examples:
  merge-core catalog list --warehouse lake                        the databases
  merge-core catalog list shop --warehouse lake                   the tables of shop
  merge-core catalog create-database shop --warehouse lake
  merge-core catalog drop-database shop --warehouse lake --cascade
  merge-core catalog drop-table shop.users --warehouse lake
  merge-core catalog rename-table shop.users shop.customers --warehouse lake

Run 'merge-core catalog ACTION --help' for an action's options and examples.
"""

ACTION_EXAMPLES = {
    "list": """
merge-core catalog list --warehouse lake                  the databases, one per line
merge-core catalog list shop --warehouse lake             the tables of shop, as shop.TABLE
merge-core catalog list --warehouse s3://bucket/lake
""",
    "create-database": """
merge-core catalog create-database shop --warehouse lake
merge-core catalog create-database shop --warehouse lake --if-not-exists
""",
    "drop-database": """
merge-core catalog drop-database staging --warehouse lake               only if it holds no table
merge-core catalog drop-database staging --warehouse lake --cascade     with its tables and their files
""",
    "drop-table": """
merge-core catalog drop-table shop.users --warehouse lake
merge-core catalog drop-table shop.users --warehouse lake --if-exists
""",
    "rename-table": """
merge-core catalog rename-table shop.users shop.customers --warehouse lake
merge-core catalog rename-table staging.users shop.users --warehouse lake       into another database
""",
}


def add_command_to(commands: argparse._SubParsersAction) -> None:
    catalog = commands.add_parser(
        "catalog",
        help="a warehouse's databases and tables: list | create-database | drop-database | drop-table | rename-table",
        description="The databases and tables of a warehouse, laid out as Paimon's filesystem catalog lays them out"
        " (<W>/<DB>.db/<TABLE>), shared with Paimon's catalogs.",
        epilog=EXAMPLES,
        formatter_class=HelpFormatter,
    )
    actions = catalog.add_subparsers(dest="action", required=True, metavar="ACTION")

    def sub(name: str, help: str) -> argparse.ArgumentParser:
        p = add_command(actions, name, help, ACTION_EXAMPLES[name])
        add_warehouse_option(p, required=True)
        return p

    p = sub("list", "list the databases, or the tables of one database")
    p.add_argument("database", nargs="?", metavar="DB", help="list the tables of this database")
    p.set_defaults(run=cmd_list)

    p = sub("create-database", "create an empty database (a directory DB.db)")
    p.add_argument("database", metavar="DB", help="the database to create")
    p.add_argument("--if-not-exists", action="store_true", help="do nothing if the database exists")
    p.set_defaults(run=cmd_create_database)

    p = sub("drop-database", "remove a database and everything in its directory")
    p.add_argument("database", metavar="DB", help="the database to remove")
    p.add_argument("--cascade", action="store_true", help="also drop its tables, with all their files")
    p.add_argument("--if-exists", action="store_true", help="do nothing if the database does not exist")
    p.set_defaults(run=cmd_drop_database)

    p = sub("drop-table", "remove a table and every file in its directory, whoever wrote them")
    p.add_argument("table", metavar="DB.TABLE", help="the table to remove")
    p.add_argument("--if-exists", action="store_true", help="do nothing if the table does not exist")
    p.set_defaults(run=cmd_drop_table)

    p = sub("rename-table", "rename a table, or move it to another database (local disks only)")
    p.add_argument("source", metavar="DB.TABLE", help="the table to rename")
    p.add_argument("target", metavar="DB.NEW", help="its new name")
    p.set_defaults(run=cmd_rename_table)


def cmd_list(args: argparse.Namespace) -> int:
    catalog = mc.Catalog(args.warehouse)
    if args.database is None:
        names = catalog.list_databases()
        empty = f"no databases in {args.warehouse}"
    else:
        names = [f"{args.database}.{t}" for t in catalog.list_tables(args.database)]
        empty = f"no tables in database {args.database}"
    print("\n".join(names) if names else empty)
    return 0


def cmd_create_database(args: argparse.Namespace) -> int:
    try:
        mc.Catalog(args.warehouse).create_database(args.database)
    except mc.TableExistsError:
        if not args.if_not_exists:
            raise
        print(f"database {args.database} already exists in {args.warehouse}")
        return 0
    print(f"created database {args.database} in {args.warehouse}")
    return 0


def cmd_drop_database(args: argparse.Namespace) -> int:
    try:
        tables = mc.Catalog(args.warehouse).drop_database(args.database, cascade=args.cascade)
    except mc.TableNotFoundError:
        if not args.if_exists:
            raise
        print(f"no database {args.database} in {args.warehouse}: nothing dropped")
        return 0
    dropped = f" and its {plural(len(tables), 'table')} ({', '.join(tables)})" if tables else ""
    print(f"dropped database {args.database}{dropped}")
    return 0


def cmd_drop_table(args: argparse.Namespace) -> int:
    try:
        mc.Catalog(args.warehouse).drop_table(args.table)
    except mc.TableNotFoundError:
        if not args.if_exists:
            raise
        print(f"no table {args.table} in {args.warehouse}: nothing dropped")
        return 0
    print(f"dropped table {args.table} (its directory and every file in it)")
    return 0


def cmd_rename_table(args: argparse.Namespace) -> int:
    mc.Catalog(args.warehouse).rename_table(args.source, args.target)
    print(f"renamed table {args.source} to {args.target}")
    return 0
