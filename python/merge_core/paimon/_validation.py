"""Paimon's schema rules, for the primary-key tables merge-core creates and reads.

Paimon refuses a schema that breaks one of these before any file is written (its
``SchemaValidation``, and the checks of ``Schema`` and ``TableSchema``): a bucket key
outside the primary key would spread one key over several buckets, which every reader
then returns as several rows, forever. merge-core checks the same rules when a table is
created (:func:`check_new`: ``InvalidInputError``) and when one is opened or an older
schema is read (:func:`check_stored`: ``CorruptTableError`` naming the schema file), so a
table that breaks them is never written nor read wrongly.

Each rule is one function of the schema, named after what it checks, that returns what
is wrong (``None``: nothing); :data:`RULES` lists them in the order they are checked.
Rules about features merge-core does not write (append tables, blobs, vectors, indexes,
streaming scan modes) are left to Paimon. The merge function's own options are checked
where they are read (``merge_from_paimon_options``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import pyarrow as pa

from ..errors import CorruptTableError, InvalidInputError
from ._schema import TableSchema

SYSTEM_COLUMNS = ("_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID")
KEY_PREFIX = "_KEY_"
DEFAULT_AGGREGATE = "default-aggregate-function"
POSTPONE_BUCKET = -2
DYNAMIC_BUCKET = -1

Rule = Callable[[TableSchema], "str | None"]


def check_new(schema: TableSchema) -> None:
    """Refuses a schema about to be created that breaks a rule (``InvalidInputError``)."""
    broken = broken_rule(schema)
    if broken:
        rule, problem = broken
        raise InvalidInputError(f"the table breaks Paimon's schema rule '{rule}': {problem}")


def check_stored(schema: TableSchema, where: str) -> None:
    """Refuses a table's stored schema (``where``: its file) that breaks a rule
    (``CorruptTableError``): no reader can read such a table right."""
    broken = broken_rule(schema)
    if broken:
        rule, problem = broken
        raise CorruptTableError(f"{where} breaks Paimon's schema rule '{rule}': {problem}")


def broken_rule(schema: TableSchema) -> tuple[str, str] | None:
    """The first rule ``schema`` breaks, as its name and what is wrong; ``None`` if none."""
    for rule in RULES:
        problem = rule(schema)
        if problem:
            return rule.__name__.replace("_", " "), problem
    return None


# -- columns and keys ----------------------------------------------------------------


def column_names_unique(schema: TableSchema) -> str | None:
    repeated = _repeated(f.name for f in schema.fields)
    return f"columns {repeated} appear more than once" if repeated else None


def column_names_not_reserved(schema: TableSchema) -> str | None:
    reserved = [f.name for f in schema.fields if f.name in SYSTEM_COLUMNS or f.name.startswith(KEY_PREFIX)]
    if reserved:
        return f"column names {reserved} are reserved by Paimon ({list(SYSTEM_COLUMNS)}, and the prefix {KEY_PREFIX})"
    return None


def partition_columns_known_and_unique(schema: TableSchema) -> str | None:
    return _known_and_unique(schema, schema.partition_keys, "partition")


def primary_key_columns_known_and_unique(schema: TableSchema) -> str | None:
    return _known_and_unique(schema, schema.primary_keys, "primary key")


def key_columns_atomic(schema: TableSchema) -> str | None:
    for what, columns in (("primary key", schema.primary_keys), ("partition", schema.partition_keys)):
        nested = [c for c in columns if pa.types.is_nested(schema.field(c).type)]
        if nested:
            return f"{what} columns {nested} have nested types (arrays, maps and rows cannot be keys)"
    return None


def primary_key_beyond_partition(schema: TableSchema) -> str | None:
    if schema.primary_keys and not schema.trimmed_keys:
        return (
            f"the primary key {list(schema.primary_keys)} has no column outside the partition columns "
            f"{list(schema.partition_keys)}: each partition would hold one row"
        )
    return None


# -- buckets -------------------------------------------------------------------------


def bucket_number_valid(schema: TableSchema) -> str | None:
    bucket = _int_option(schema, "bucket", DYNAMIC_BUCKET)
    if isinstance(bucket, str):
        return bucket
    if bucket == DYNAMIC_BUCKET and _bucket_key_option(schema) is not None:
        return "a 'bucket-key' needs a fixed number of buckets ('bucket' = -1 makes them dynamic)"
    if bucket < 1 and bucket != DYNAMIC_BUCKET and not (bucket == POSTPONE_BUCKET and schema.primary_keys):
        return f"'bucket' must be a number of buckets (at least 1), -1 (dynamic) or -2 (postponed), not {bucket}"
    return None


def bucket_key_within_primary_key(schema: TableSchema) -> str | None:
    keys = _bucket_key_option(schema)
    if keys is None:
        return None
    names = [f.name for f in schema.fields]
    unknown = [k for k in keys if k not in names]
    if unknown:
        return f"'bucket-key' names {unknown}, which are not columns of the table ({names})"
    partitioned = [k for k in keys if k in schema.partition_keys]
    if partitioned:
        return f"'bucket-key' names partition columns {partitioned}"
    outside = [k for k in keys if k not in schema.primary_keys]
    if outside and schema.primary_keys:
        return (
            f"'bucket-key' names {outside}, outside the primary key {list(schema.primary_keys)}: "
            "the versions of one key would land in different buckets and read as several rows"
        )
    return None


def append_buckets_keyed(schema: TableSchema) -> str | None:
    """An append table's fixed buckets need a 'bucket-key' of atomic columns (Paimon's
    'You should define a bucket-key for bucketed append mode')."""
    if schema.primary_keys:
        return None
    bucket = _int_option(schema, "bucket", DYNAMIC_BUCKET)
    if isinstance(bucket, str) or bucket < 1:
        if bucket == DYNAMIC_BUCKET and "full-compaction.delta-commits" in schema.options:
            return "a bucket-unaware append table takes no 'full-compaction.delta-commits'"
        return None
    keys = _bucket_key_option(schema)
    if not keys:
        return f"an append table with fixed buckets ('bucket' = {bucket}) needs a 'bucket-key'"
    nested = [f.name for f in schema.fields if f.name in keys and pa.types.is_nested(f.type)]
    if nested:
        return f"'bucket-key' names nested columns {nested}"
    return None


def append_without_changelog(schema: TableSchema) -> str | None:
    if schema.primary_keys:
        return None
    producer = _changelog_producer(schema)
    if producer != "none":
        return f"an append table (no primary key) takes no 'changelog-producer' ({producer!r})"
    if _bool_option(schema, "streaming-read-overwrite"):
        return "an append table takes 'streaming-read-append-overwrite', not 'streaming-read-overwrite'"
    return None


# -- sequence and option columns -------------------------------------------------------


def sequence_columns_valid(schema: TableSchema) -> str | None:
    option = schema.options.get("sequence.field")
    if option is None:
        return None
    fields = [s.strip() for s in option.split(",")]
    names = {f.name for f in schema.fields}
    unknown = [s for s in fields if s not in names]
    if unknown:
        return f"'sequence.field' names {unknown}, which are not columns of the table"
    repeated = _repeated(fields)
    if repeated:
        return f"'sequence.field' names {repeated} more than once"
    aggregated = [s for s in fields if f"fields.{s}.aggregate-function" in schema.options]
    if aggregated:
        return f"sequence columns {aggregated} have an aggregate function"
    if _engine(schema) == "first-row":
        return "the first-row merge engine takes no 'sequence.field'"
    if schema.primary_keys and not set(schema.partition_keys) <= set(schema.primary_keys):
        return (
            f"a 'sequence.field' with a primary key {list(schema.primary_keys)} that leaves out partition "
            f"columns {list(schema.partition_keys)} (cross-partition updates)"
        )
    return None


def field_options_name_columns(schema: TableSchema) -> str | None:
    names = {f.name for f in schema.fields}
    for option, columns in _field_options(schema):
        for column in columns:
            if column != DEFAULT_AGGREGATE and column not in names:
                return f"option {option!r} names {column!r}, which is not a column of the table"
    return None


def field_options_not_into_rows(schema: TableSchema) -> str | None:
    rows = {f.name for f in schema.fields if pa.types.is_struct(f.type)}
    for option, columns in _field_options(schema):
        if len(option.split(".")) > 3 and len(columns) == 1 and columns[0] in rows:
            return f"option {option!r} reaches into the fields of row column {columns[0]!r}, which Paimon ignores"
    return None


def row_kind_column_known(schema: TableSchema) -> str | None:
    column = schema.options.get("rowkind.field")
    if column is not None and column not in {f.name for f in schema.fields}:
        return f"'rowkind.field' names {column!r}, which is not a column of the table"
    return None


def record_time_column_valid(schema: TableSchema) -> str | None:
    column = schema.options.get("record-level.time-field")
    if column is None:
        return None
    found = [f for f in schema.fields if f.name == column]
    if not found:
        return f"'record-level.time-field' names {column!r}, which is not a column of the table"
    t = found[0].type
    if not (pa.types.is_int32(t) or pa.types.is_int64(t) or pa.types.is_timestamp(t)):
        return f"'record-level.time-field' {column!r} has type {t}; it must be INT, BIGINT or a timestamp"
    return None


# -- option combinations ---------------------------------------------------------------


def first_row_changelog_producer(schema: TableSchema) -> str | None:
    producer = _changelog_producer(schema)
    if _engine(schema) == "first-row" and producer not in ("none", "lookup"):
        return f"the first-row merge engine takes 'changelog-producer' none or lookup, not {producer!r}"
    return None


def deletion_vectors_changelog_and_engine(schema: TableSchema) -> str | None:
    if not _bool_option(schema, "deletion-vectors.enabled"):
        return None
    producer = _changelog_producer(schema)
    if producer not in ("none", "input", "lookup"):
        return f"deletion vectors take 'changelog-producer' none, input or lookup, not {producer!r}"
    if _engine(schema) == "first-row" and not _bool_option(schema, "pk-clustering-override"):
        return "the first-row merge engine deletes nothing: it takes no deletion vectors"
    return None


def lookup_changelog_without_full_compaction_commits(schema: TableSchema) -> str | None:
    if "full-compaction.delta-commits" in schema.options and _changelog_producer(schema) == "lookup":
        return "'full-compaction.delta-commits' does not go with 'changelog-producer' = lookup"
    return None


def overwrite_streaming_without_compaction_changelog(schema: TableSchema) -> str | None:
    producer = _changelog_producer(schema)
    if _bool_option(schema, "streaming-read-overwrite") and producer in ("full-compaction", "lookup"):
        return f"'streaming-read-overwrite' with 'changelog-producer' = {producer} would read changes twice"
    return None


def retained_counts_ordered(schema: TableSchema) -> str | None:
    counts = {}
    for option, default in (
        ("snapshot.num-retained.min", 10),
        ("snapshot.num-retained.max", 2**31 - 1),
        ("changelog.num-retained.min", None),
        ("changelog.num-retained.max", None),
    ):
        value = _int_option(schema, option, default)
        if isinstance(value, str):
            return value
        counts[option] = value
    for kind in ("snapshot", "changelog"):
        low, high = counts[f"{kind}.num-retained.min"], counts[f"{kind}.num-retained.max"]
        low = counts["snapshot.num-retained.min"] if low is None else low  # changelog: the snapshot's
        high = counts["snapshot.num-retained.max"] if high is None else high
        if low < 1:
            return f"'{kind}.num-retained.min' must be at least 1, not {low}"
        if low > high:
            return f"'{kind}.num-retained.min' ({low}) is above '{kind}.num-retained.max' ({high})"
    return None


def target_file_rows_positive(schema: TableSchema) -> str | None:
    rows = _int_option(schema, "target-file-row-num", 1)
    if isinstance(rows, str):
        return rows
    return None if rows > 0 else f"'target-file-row-num' must be at least 1, not {rows}"


RULES: tuple[Rule, ...] = (
    column_names_unique,
    column_names_not_reserved,
    partition_columns_known_and_unique,
    primary_key_columns_known_and_unique,
    key_columns_atomic,
    primary_key_beyond_partition,
    bucket_number_valid,
    bucket_key_within_primary_key,
    append_buckets_keyed,
    append_without_changelog,
    sequence_columns_valid,
    field_options_name_columns,
    field_options_not_into_rows,
    row_kind_column_known,
    record_time_column_valid,
    first_row_changelog_producer,
    deletion_vectors_changelog_and_engine,
    lookup_changelog_without_full_compaction_commits,
    overwrite_streaming_without_compaction_changelog,
    retained_counts_ordered,
    target_file_rows_positive,
)


# -- helpers ---------------------------------------------------------------------------


def _repeated(names: Iterable[str]) -> list[str]:
    return [name for name, count in Counter(names).items() if count > 1]


def _known_and_unique(schema: TableSchema, columns: tuple[str, ...], what: str) -> str | None:
    names = [f.name for f in schema.fields]
    unknown = [c for c in columns if c not in names]
    if unknown:
        return f"{what} columns {unknown} are not columns of the table ({names})"
    repeated = _repeated(columns)
    return f"{what} columns {repeated} appear more than once" if repeated else None


def _field_options(schema: TableSchema) -> list[tuple[str, list[str]]]:
    """The ``fields.<columns>.<option>`` options, each with the columns it names (as Java
    splits them: trailing empty names dropped)."""
    out = []
    for option in schema.options:
        parts = option.split(".")
        if option.startswith("fields") and len(parts) > 1 and parts[0] == "fields":
            columns = parts[1].split(",")
            while columns and not columns[-1]:
                columns.pop()
            out.append((option, columns))
    return out


def _bucket_key_option(schema: TableSchema) -> list[str] | None:
    """The ``bucket-key`` columns as Paimon reads them (split at commas, untrimmed), or
    ``None`` when there is none."""
    option = schema.options.get("bucket-key")
    if option is None or not option.strip():
        return None
    return option.split(",")


def _engine(schema: TableSchema) -> str:
    return schema.options.get("merge-engine", "deduplicate").strip().lower()


def _changelog_producer(schema: TableSchema) -> str:
    return schema.options.get("changelog-producer", "none").strip().lower()


def _bool_option(schema: TableSchema, option: str) -> bool:
    return schema.options.get(option, "false").strip().lower() == "true"


def _int_option(schema: TableSchema, option: str, default: int | None) -> int | str | None:
    """An integer option's value (``default`` when absent), or what is wrong with it."""
    text = schema.options.get(option)
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        return f"option {option!r} must be an integer, not {text!r}"
