"""``mc.Catalog``, against pypaimon's own filesystem catalog on the same warehouse: what
merge-core creates, pypaimon lists and reads, and the other way round; a table is what
Paimon counts as one (a directory with a schema file); every error, and the names Paimon
refuses; drop and rename; the command line's DB.TABLE forms; one warehouse on S3."""

from __future__ import annotations

import os
import subprocess

import merge_core as mc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import test_object_store as s3
from helpers import pypaimon_commit
from merge_core import fs
from test_cli import CLI, run

pypaimon = pytest.importorskip("pypaimon")

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int64()), ("note", pa.string())])
ROWS = [{"id": 1, "qty": 3, "note": "a"}, {"id": 2, "qty": 5, "note": None}]
endpoint, bucket = s3.endpoint, s3.bucket  # moto's S3 server on 127.0.0.1, and a new bucket in it


def theirs(warehouse, **options) -> pypaimon.catalog.catalog.Catalog:
    return pypaimon.CatalogFactory.create({"warehouse": str(warehouse), **options})


def pk_schema(**options) -> pypaimon.Schema:
    return pypaimon.Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=options)


def read_theirs(table) -> list[dict]:
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).sort_by("id").to_pylist()


def read_ours(table: mc.Table) -> list[dict]:
    return table.read().read_all().sort_by("id").to_pylist()


def new_table(catalog: mc.Catalog, identifier: str, rows=ROWS, **kwargs) -> mc.Table:
    table = catalog.create_table(identifier, SCHEMA, key="id", buckets=2, **kwargs)
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    return table


@pytest.fixture
def catalog(tmp_path) -> mc.Catalog:
    catalog = mc.Catalog(tmp_path / "wh")
    catalog.create_database("shop")
    new_table(catalog, "shop.orders")
    return catalog


# -- shared with Paimon's catalog --------------------------------------------------------


def test_pypaimon_lists_and_reads_what_merge_core_creates(tmp_path):
    ours = mc.Catalog(tmp_path / "wh")
    assert ours.list_databases() == []  # the warehouse need not exist yet
    ours.create_database("shop")
    ours.create_database("empty")
    new_table(ours, "shop.orders")
    new_table(ours, "shop.stock", rows=ROWS[:1])
    other = theirs(tmp_path / "wh")
    assert other.list_databases() == ours.list_databases() == ["empty", "shop"]
    assert other.list_tables("shop") == ours.list_tables("shop") == ["orders", "stock"]
    assert other.list_tables("empty") == []
    assert read_theirs(other.get_table("shop.orders")) == ROWS
    assert read_theirs(other.get_table("shop.stock")) == ROWS[:1]
    assert ours.get_table("shop.orders").path == tmp_path / "wh" / "shop.db" / "orders"


def test_merge_core_lists_and_opens_what_pypaimon_creates(tmp_path):
    other = theirs(tmp_path)
    other.create_database("sales", False)
    options = {"bucket": "2", "merge-engine": "aggregation", "fields.qty.aggregate-function": "sum"}
    other.create_table(
        "sales.totals", pypaimon.Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=options), False
    )
    pypaimon_commit(other.get_table("sales.totals"), ROWS, SCHEMA)
    pypaimon_commit(other.get_table("sales.totals"), ROWS[:1], SCHEMA)
    other.create_table("sales.log", pypaimon.Schema.from_pyarrow_schema(SCHEMA), False)  # an append table

    ours = mc.Catalog(str(tmp_path))
    assert ours.list_databases() == ["sales"]
    assert ours.list_tables("sales") == ["log", "totals"]  # Paimon counts append tables too
    totals = ours.get_table("sales.totals")
    assert read_ours(totals) == [{"id": 1, "qty": 6, "note": "a"}, {"id": 2, "qty": 5, "note": None}]
    assert read_ours(totals) == read_theirs(other.get_table("sales.totals"))
    pypaimon_commit(other.get_table("sales.log"), ROWS, SCHEMA)
    assert read_ours(ours.get_table("sales.log")) == read_theirs(other.get_table("sales.log"))


def test_a_table_is_a_directory_holding_a_schema_file(tmp_path):
    """As Paimon's catalog counts them: a database is a directory named ``*.db``; a table
    a directory in it with a ``schema/schema-N`` file (not necessarily schema-0)."""
    ours = mc.Catalog(tmp_path)
    ours.create_database("db")
    new_table(ours, "db.t")
    (tmp_path / "db.db" / "empty").mkdir()  # a directory without a schema
    (tmp_path / "db.db" / "half" / "schema").mkdir(parents=True)
    (tmp_path / "db.db" / "file").write_text("x")
    later = tmp_path / "db.db" / "later" / "schema"
    later.mkdir(parents=True)
    (later / "schema-3").write_bytes((tmp_path / "db.db" / "t" / "schema" / "schema-0").read_bytes())
    (tmp_path / "plain").mkdir()  # a directory not named *.db
    (tmp_path / "file.db").write_text("x")  # a file named *.db
    assert ours.list_databases() == ["db"]
    assert ours.list_tables("db") == ["later", "t"]
    assert read_ours(ours.get_table("db.later")) == ROWS[:0]
    for name in ("empty", "half", "file"):
        with pytest.raises(mc.TableNotFoundError, match=rf"table db\.{name} does not exist"):
            ours.get_table(f"db.{name}")


def test_create_table_takes_table_creates_arguments(catalog):
    table = catalog.create_table(
        "shop.sums",
        SCHEMA,
        key="id",
        partition_by=(),
        buckets=3,
        merge=mc.Aggregate({"qty": "sum"}),
        options={"file.compression": "snappy"},
    )
    assert (table.key, table.buckets, table.merge.fields) == (["id"], 3, {"qty": {"function": "sum"}})
    assert table.options["file.compression"] == "snappy"
    again = catalog.create_table("shop.sums", SCHEMA, key="id", buckets=7, ignore_if_exists=True)
    assert again.buckets == 3  # the existing table, as it is


# -- errors ------------------------------------------------------------------------------


def call(catalog: mc.Catalog, method: str, *args, **kwargs):
    if method == "create_table":
        return catalog.create_table(*args, SCHEMA, key="id", **kwargs)
    return getattr(catalog, method)(*args, **kwargs)


ERRORS = [
    # (method, arguments, error, message)
    ("create_database", ["shop"], mc.TableExistsError, "database 'shop' already exists in "),
    ("drop_database", ["nope"], mc.TableNotFoundError, r"database 'nope' does not exist in .* \['shop'\]"),
    ("drop_database", ["shop"], mc.InvalidInputError, r"database 'shop' is not empty: it holds 1 table \(orders\)"),
    ("list_tables", ["nope"], mc.TableNotFoundError, "database 'nope' does not exist"),
    ("get_table", ["nope.orders"], mc.TableNotFoundError, "database 'nope' does not exist"),
    ("get_table", ["shop.nope"], mc.TableNotFoundError, r"table shop\.nope does not exist in .*\['orders'\]"),
    ("create_table", ["nope.t"], mc.TableNotFoundError, "database 'nope' does not exist"),
    ("create_table", ["shop.orders"], mc.TableExistsError, r"table shop\.orders already exists in "),
    ("drop_table", ["shop.nope"], mc.TableNotFoundError, r"table shop\.nope does not exist"),
    ("drop_table", ["nope.t"], mc.TableNotFoundError, "database 'nope' does not exist"),
    ("rename_table", ["shop.nope", "shop.b"], mc.TableNotFoundError, r"table shop\.nope does not exist"),
    ("rename_table", ["shop.orders", "nope.b"], mc.TableNotFoundError, "database 'nope' does not exist"),
    ("rename_table", ["shop.orders", "shop.orders"], mc.TableExistsError, r"table shop\.orders already exists"),
    ("get_table", ["orders"], mc.InvalidInputError, "'orders' does not name a table: give 'database.table'"),
    ("get_table", [("shop", "orders")], mc.InvalidInputError, "a table is named 'database.table', got tuple"),
    ("list_tables", [None], mc.InvalidInputError, "a database's name must be a string, got NoneType"),
]


@pytest.mark.parametrize("method, args, error, message", ERRORS, ids=[f"{e[0]} {e[1]}" for e in ERRORS])
def test_each_mistake_is_its_own_error(catalog, method, args, error, message):
    with pytest.raises(error, match=message):
        call(catalog, method, *args)
    assert catalog.list_databases() == ["shop"] and catalog.list_tables("shop") == ["orders"]  # nothing changed
    assert read_ours(catalog.get_table("shop.orders")) == ROWS


def test_ignoring_what_is_missing_or_there(catalog):
    catalog.create_database("shop", ignore_if_exists=True)
    assert catalog.drop_database("nope", ignore_if_not_exists=True) == []
    catalog.drop_table("shop.nope", ignore_if_not_exists=True)
    catalog.drop_table("nope.t", ignore_if_not_exists=True)
    assert catalog.list_databases() == ["shop"] and catalog.list_tables("shop") == ["orders"]


def test_a_warehouse_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "wh").write_text("x")
    with pytest.raises(mc.InvalidInputError, match="the warehouse .*wh is a file, not a directory"):
        mc.Catalog(tmp_path / "wh")


def test_a_rename_onto_a_directory_that_is_not_a_table_is_refused(catalog):
    target = catalog.warehouse / "shop.db" / "other"
    (target / "data").mkdir(parents=True)
    with pytest.raises(mc.InvalidInputError, match=r"cannot rename to shop\.other: .*other exists and is not a table"):
        catalog.rename_table("shop.orders", "shop.other")
    assert os.listdir(target) == ["data"] and catalog.list_tables("shop") == ["orders"]


# -- names -------------------------------------------------------------------------------

REFUSED = [
    # Paimon's rules: the system database, and '$' (a branch or a system table).
    ("create_database", ["sys"], mc.InvalidInputError, "'sys' is Paimon's system database: it cannot be created"),
    ("drop_database", ["sys"], mc.InvalidInputError, "'sys' is Paimon's system database: it cannot be dropped"),
    ("list_tables", ["sys"], mc.UnsupportedFeatureError, "'sys' is Paimon's system database"),
    ("get_table", ["sys.all_table_options"], mc.UnsupportedFeatureError, "'sys' is Paimon's system database"),
    ("create_table", ["sys.t"], mc.InvalidInputError, r"cannot create sys\.t: 'sys' is Paimon's system database"),
    ("drop_table", ["sys.t"], mc.InvalidInputError, r"cannot drop sys\.t: 'sys' is Paimon's system database"),
    ("get_table", ["shop.orders$snapshots"], mc.UnsupportedFeatureError, "system table 'snapshots' of shop.orders"),
    ("get_table", ["shop.orders$branch_b"], mc.TableNotFoundError, r"no branch 'b' .*\(its branches: \[\]\)"),
    ("get_table", ["shop.orders$branch_b$files"], mc.UnsupportedFeatureError, "system table 'files' of shop.orders"),
    ("create_table", ["shop.t$snapshots"], mc.InvalidInputError, r"cannot create shop\.t\$snapshots: a '\$'"),
    ("create_table", ["shop.t$branch_b"], mc.InvalidInputError, r"cannot create shop\.t\$branch_b: a '\$'"),
    ("create_table", ["shop.t$"], mc.InvalidInputError, "a '\\$' in a table's name"),
    ("drop_table", ["shop.orders$branch_b"], mc.InvalidInputError, r"cannot drop shop\.orders\$branch_b"),
    ("rename_table", ["shop.orders", "shop.b$x"], mc.InvalidInputError, r"cannot rename shop\.b\$x"),
    ("rename_table", ["shop.orders", "sys.b"], mc.InvalidInputError, "'sys' is Paimon's system database"),
    # Paimon's catalog refuses these options of a new table.
    ("create_table", ["shop.t"], mc.InvalidInputError, "option 'path' cannot be given to a catalog's table"),
    ("create_table", ["shop.t"], mc.InvalidInputError, "option 'auto-create' must be false"),
    # One plain directory name each (Paimon's Java paths would break or climb).
    ("create_database", [""], mc.InvalidInputError, "a database's name must not be blank"),
    ("create_database", [" "], mc.InvalidInputError, "a database's name must not be blank"),
    ("create_database", [".."], mc.InvalidInputError, "'..' is not a name"),
    ("create_database", ["a/b"], mc.InvalidInputError, "one plain directory name, and 'a/b' holds '/'"),
    ("create_database", ["a\\b"], mc.InvalidInputError, "holds '\\\\\\\\'"),
    ("create_database", ["a:b"], mc.InvalidInputError, "holds ':'"),
    ("create_database", ["a\nb"], mc.InvalidInputError, "holds a control character"),
    ("create_database", ["a.b"], mc.InvalidInputError, "database name 'a.b' holds a dot"),
    ("create_table", ["shop."], mc.InvalidInputError, "a table's name must not be blank"),
    ("create_table", [".t"], mc.InvalidInputError, "a database's name must not be blank"),
    ("create_table", ["shop.a/b"], mc.InvalidInputError, "'a/b' holds '/'"),
    ("create_table", ["shop.."], mc.InvalidInputError, "'.' is not a name"),
    ("rename_table", ["shop.orders", "shop.../x"], mc.InvalidInputError, "holds '/'"),
]


@pytest.mark.parametrize("method, args, error, message", REFUSED, ids=[f"{e[0]} {e[1]}" for e in REFUSED])
def test_names_paimon_refuses_are_refused(catalog, method, args, error, message):
    options = {"path": "/elsewhere"} if "'path'" in message else {"auto-create": "true"} if "auto" in message else {}
    with pytest.raises(error, match=message):
        call(catalog, method, *args, **({"options": options} if options else {}))
    assert sorted(os.listdir(catalog.warehouse)) == ["shop.db"]
    assert sorted(os.listdir(catalog.warehouse / "shop.db")) == ["orders"]


def test_a_table_name_may_hold_dots(catalog):
    """'db.a.b' is table 'a.b' of database 'db', as Paimon's Identifier splits it."""
    new_table(catalog, "shop.orders.v2")
    assert catalog.list_tables("shop") == ["orders", "orders.v2"]
    assert theirs(catalog.warehouse).list_tables("shop") == ["orders", "orders.v2"]
    assert read_theirs(theirs(catalog.warehouse).get_table("shop.orders.v2")) == ROWS


# -- drop and rename ---------------------------------------------------------------------


def test_drop_table_removes_its_directory_only(catalog, tmp_path):
    external = tmp_path / "external"
    external.mkdir()
    (external / "keep.parquet").write_text("another table's file")
    new_table(catalog, "shop.stock", options={"data-file.external-paths": external.as_uri()})
    pypaimon_commit(theirs(catalog.warehouse).get_table("shop.stock"), ROWS[:1], SCHEMA)  # files of both writers
    catalog.drop_table("shop.stock")
    assert not (catalog.warehouse / "shop.db" / "stock").exists()
    assert catalog.list_tables("shop") == theirs(catalog.warehouse).list_tables("shop") == ["orders"]
    assert os.listdir(external) == ["keep.parquet"]  # Paimon's drop would remove the external path whole
    assert read_ours(catalog.get_table("shop.orders")) == ROWS


def test_a_drop_cut_short_leaves_a_table_the_next_drop_finishes(catalog, monkeypatch):
    """The schema goes last: until then the directory is still a table, so drop_table can
    be run again; a drop that removed the schema first would leave files no catalog sees."""
    real = fs.LocalStore.delete_tree

    def fails_on_snapshots(self, path):
        if path.endswith("/snapshot"):
            raise OSError("disk gone")
        real(self, path)

    monkeypatch.setattr(fs.LocalStore, "delete_tree", fails_on_snapshots)
    with pytest.raises(OSError, match="disk gone"):
        catalog.drop_table("shop.orders")
    assert catalog.list_tables("shop") == ["orders"]
    monkeypatch.setattr(fs.LocalStore, "delete_tree", real)
    catalog.drop_table("shop.orders")
    assert catalog.list_tables("shop") == [] and os.listdir(catalog.warehouse / "shop.db") == []


def test_drop_database_cascade_drops_its_tables_and_everything_else(catalog):
    new_table(catalog, "shop.stock")
    (catalog.warehouse / "shop.db" / "notes").mkdir()  # not a table: goes too, as in Paimon
    assert catalog.drop_database("shop", cascade=True) == ["orders", "stock"]
    assert catalog.list_databases() == theirs(catalog.warehouse).list_databases() == []
    assert os.listdir(catalog.warehouse) == []


def test_drop_database_without_tables_needs_no_cascade(catalog):
    catalog.create_database("empty")
    (catalog.warehouse / "empty.db" / "notes").mkdir()
    assert catalog.drop_database("empty") == []
    assert catalog.list_databases() == ["shop"]


def test_rename_moves_the_table_within_and_across_databases(catalog):
    catalog.rename_table("shop.orders", "shop.sales")
    assert catalog.list_tables("shop") == ["sales"]
    catalog.create_database("archive")
    catalog.rename_table("shop.sales", "archive.sales_2026")
    assert catalog.list_tables("shop") == [] and catalog.list_tables("archive") == ["sales_2026"]
    assert read_ours(catalog.get_table("archive.sales_2026")) == ROWS
    other = theirs(catalog.warehouse)
    assert other.list_tables("archive") == ["sales_2026"]
    assert read_theirs(other.get_table("archive.sales_2026")) == ROWS
    catalog.get_table("archive.sales_2026").write(pa.Table.from_pylist(ROWS[:1], schema=SCHEMA))  # still a table
    assert catalog.get_table("archive.sales_2026").snapshots() == [1, 2]


# -- the command line --------------------------------------------------------------------


def test_the_cli_takes_db_table_with_a_warehouse(tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS, schema=SCHEMA), tmp_path / "in.parquet")
    lake = str(tmp_path / "lake")

    def ok(*args):
        result = run(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert ok("catalog", "list", "--warehouse", lake) == f"no databases in {lake}\n"
    assert ok("catalog", "create-database", "shop", "--warehouse", lake) == f"created database shop in {lake}\n"
    ok("table", "create", "shop.orders", "--warehouse", lake, "--like", "in.parquet", "-k", "id", "--buckets", "2")
    ok("table", "write", "shop.orders", "-w", lake, "in.parquet")
    ok("table", "read", "shop.orders", "-w", lake, "-o", "out.parquet")
    assert pq.read_table(tmp_path / "out.parquet").sort_by("id").to_pylist() == ROWS
    assert f"table {lake}/shop.db/orders (paimon)" in ok("table", "info", "shop.orders", "-w", lake)
    ok("table", "info", f"{lake}/shop.db/orders")  # the path still works
    assert ok("catalog", "list", "-w", lake) == "shop\n"
    assert read_theirs(theirs(lake).get_table("shop.orders")) == ROWS

    assert ok("catalog", "rename-table", "shop.orders", "shop.sales", "-w", lake) == (
        "renamed table shop.orders to shop.sales\n"
    )
    assert ok("catalog", "list", "shop", "-w", lake) == "shop.sales\n"
    assert ok("catalog", "create-database", "shop", "-w", lake, "--if-not-exists") == (
        f"database shop already exists in {lake}\n"
    )
    assert ok("catalog", "drop-table", "shop.nope", "-w", lake, "--if-exists").startswith("no table shop.nope")
    assert ok("catalog", "drop-database", "nope", "-w", lake, "--if-exists").startswith("no database nope")
    ok("table", "create", "shop.stock", "-w", lake, "--like", "in.parquet", "-k", "id")
    assert ok("catalog", "drop-table", "shop.stock", "-w", lake).startswith("dropped table shop.stock")
    assert ok("catalog", "drop-database", "shop", "-w", lake, "--cascade") == (
        "dropped database shop and its 1 table (sales)\n"
    )
    assert ok("catalog", "list", "-w", lake) == f"no databases in {lake}\n"


CLI_ERRORS = [
    # (arguments, the one line expected on stderr, exit status)
    (["table", "info", "shop.orders"], "TABLE shop.orders reads as DB.TABLE: give its warehouse with --warehouse", 2),
    (["table", "create", "shop.new", "--like", "in.parquet", "-k", "id"], "reads as DB.TABLE", 2),
    (["table", "info", "lake/shop.db/orders", "-w", "lake"], "with --warehouse, TABLE is DB.TABLE", 2),
    (["table", "info", "orders", "-w", "lake"], "with --warehouse, TABLE is DB.TABLE", 2),
    (["table", "info", "shop.nope", "-w", "lake"], "error: table shop.nope does not exist in", 2),
    (["table", "info", "nope.orders", "-w", "lake"], "error: database 'nope' does not exist in", 2),
    (["table", "info", "shop.orders", "-w", "in.parquet"], "the warehouse", 2),
    (["table", "create", "shop.orders", "-w", "lake", "--like", "in.parquet", "-k", "id"], "already exists", 2),
    (["table", "create", "nope.t", "-w", "lake", "--like", "in.parquet", "-k", "id"], "database 'nope' does not", 2),
    (["table", "read", "shop.orders$snapshots", "-w", "lake", "-o", "x.parquet"], "unsupported: ", 3),
    (["catalog", "list"], "the following arguments are required: -w/--warehouse", 2),
    (["catalog", "list", "nope", "-w", "lake"], "error: database 'nope' does not exist", 2),
    (["catalog", "list", "sys", "-w", "lake"], "unsupported: 'sys' is Paimon's system database", 3),
    (["catalog", "create-database", "shop", "-w", "lake"], "error: database 'shop' already exists", 2),
    (["catalog", "create-database", "a.b", "-w", "lake"], "holds a dot", 2),
    (["catalog", "drop-database", "shop", "-w", "lake"], "is not empty: it holds 1 table (orders); drop them", 2),
    (["catalog", "drop-database", "sys", "-w", "lake"], "'sys' is Paimon's system database: it cannot be", 2),
    (["catalog", "drop-database", "nope", "-w", "lake"], "error: database 'nope' does not exist", 2),
    (["catalog", "drop-table", "shop.nope", "-w", "lake"], "error: table shop.nope does not exist", 2),
    (["catalog", "drop-table", "shop", "-w", "lake"], "'shop' does not name a table", 2),
    (["catalog", "rename-table", "shop.orders", "shop.orders", "-w", "lake"], "shop.orders already exists", 2),
    (["catalog", "rename-table", "shop.nope", "shop.x", "-w", "lake"], "table shop.nope does not exist", 2),
]


@pytest.mark.parametrize("args, message, status", CLI_ERRORS, ids=[" ".join(e[0][:3]) for e in CLI_ERRORS])
def test_cli_mistakes_are_one_line_with_their_exit_status(tmp_path, args, message, status):
    pq.write_table(pa.Table.from_pylist(ROWS, schema=SCHEMA), tmp_path / "in.parquet")
    catalog = mc.Catalog(tmp_path / "lake")
    catalog.create_database("shop")
    new_table(catalog, "shop.orders")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    result = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == status, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("merge-core"), result.stderr
    assert message in result.stderr
    assert "cascade=True" not in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


ACTIONS = [[], ["list"], ["create-database"], ["drop-database"], ["drop-table"], ["rename-table"]]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: " ".join(["catalog", *a]))
def test_the_catalog_command_and_each_action_have_their_own_help(action):
    result = run("catalog", *action, "--help")
    assert result.returncode == 0, result.stderr
    examples = result.stdout.split("examples:\n", 1)[1].splitlines()
    runs = [line.strip() for line in examples if line.strip().startswith("merge-core ")]
    assert runs and all(line.startswith(" ".join(["merge-core catalog", *action, ""])) for line in runs), runs
    assert "--warehouse" in result.stdout


# -- on S3 -------------------------------------------------------------------------------


def test_a_warehouse_on_s3_is_shared_with_pypaimon(bucket, endpoint):
    warehouse = f"s3://{bucket}/wh"
    ours = mc.Catalog(warehouse)
    ours.create_database("shop")
    ours.create_database("empty")
    new_table(ours, "shop.orders")
    other = theirs(
        warehouse,
        **{
            "fs.s3.endpoint": endpoint,
            "fs.s3.accessKeyId": s3.CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "fs.s3.accessKeySecret": s3.CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "fs.s3.region": "us-east-1",
        },
    )
    assert other.list_databases() == ["empty", "shop"]
    assert other.list_tables("shop") == ["orders"]
    assert read_theirs(other.get_table("shop.orders")) == ROWS
    other.create_database("sales", False)
    other.create_table(
        "sales.t", pypaimon.Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "1"}), False
    )
    pypaimon_commit(other.get_table("sales.t"), ROWS, SCHEMA)
    assert ours.list_databases() == ["empty", "sales", "shop"]
    assert read_ours(ours.get_table("sales.t")) == ROWS
    assert ours.get_table("sales.t").path == f"{warehouse}/sales.db/t"

    with pytest.raises(mc.UnsupportedFeatureError, match="renaming a table on s3 .*Paimon copies each file"):
        ours.rename_table("shop.orders", "shop.sales")
    assert read_ours(ours.get_table("shop.orders")) == ROWS
    ours.drop_table("shop.orders")
    assert ours.list_tables("shop") == other.list_tables("shop") == []
    assert not [key for key in s3.objects(bucket) if key.startswith("wh/shop.db/orders")]
    assert ours.drop_database("sales", cascade=True) == ["t"]
    ours.drop_database("shop")
    ours.drop_database("empty")
    assert ours.list_databases() == [] and s3.objects(bucket) == ["wh/"]  # the warehouse stays, empty
