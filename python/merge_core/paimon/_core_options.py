"""Every option of Paimon's ``CoreOptions``, and what merge-core does with it: one table.

Each option is, for reads and for writes (compactions included), one of:

- **honoured**: merge-core produces Paimon's effect;
- **accepted**: it has no effect on the rows a read returns nor on the files others read
  (statistics, file sizes, compaction tuning, writer buffers, streaming jobs, ...);
- **refused** (for some values): it changes the rows a read returns, or what a writer must
  produce, and merge-core does not do it, so the read or write stops with an
  :class:`UnsupportedFeatureError` naming the option before anything is written.

Options that ``CoreOptions`` does not define (an engine's, a catalog's, the user's own)
are accepted, as Paimon accepts them. :func:`refuse` checks a table's options before a
read or a write; :func:`check_options` parses every option of a new table as Paimon would.
docs/table-format.md lists this table (:func:`markdown`); a test keeps the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError, UnsupportedFeatureError
from ._compact import top_level
from ._options import (
    bool_option,
    double_option,
    duration_ms,
    enum_option,
    int_option,
    long_option,
    map_option,
    memory_bytes,
)
from ._schema import TableSchema

HONOURED = "honoured"
ACCEPTED = "accepted"
READ, WRITE = "read", "write"

Parse = Callable[[Mapping[str, str], str], Any]


def _int(options: Mapping[str, str], key: str) -> int:
    return int_option(options, key, 0)


def _long(options: Mapping[str, str], key: str) -> int:
    return long_option(options, key, 0)


def _bool(options: Mapping[str, str], key: str) -> bool:
    return bool_option(options, key)


def _duration(options: Mapping[str, str], key: str) -> int:
    return duration_ms(options, key, "0")


def _memory(options: Mapping[str, str], key: str) -> int:
    return memory_bytes(options, key, "0")


def _double(options: Mapping[str, str], key: str) -> float:
    return double_option(options, key, 0.0)


def _string(options: Mapping[str, str], key: str) -> str:
    return options[key].strip()


def _map(options: Mapping[str, str], key: str) -> dict[str, str]:
    return map_option(options, key)


def _enum(*values: str) -> Parse:
    def parse(options: Mapping[str, str], key: str) -> str:
        return enum_option(options, key, values[0], values)

    return parse


@dataclass(frozen=True)
class Refusal:
    """The values of an option that stop an operation: ``when`` says which, in words;
    ``otherwise`` is what the operation does with the other values (``None``: any value
    is refused)."""

    when: str
    test: Callable[[Any], bool]
    why: str
    otherwise: str | None = None


def if_true(why: str, otherwise: str = ACCEPTED) -> Refusal:
    return Refusal("true", lambda value: value is True, why, otherwise)


def if_set(why: str) -> Refusal:
    return Refusal("any value", lambda value: value not in ("", None, {}), why)


def unless(allowed: Iterable[Any], why: str, otherwise: str = HONOURED) -> Refusal:
    allowed = tuple(allowed)
    return Refusal(f"other than {' or '.join(map(str, allowed))}", lambda value: value not in allowed, why, otherwise)


@dataclass(frozen=True)
class CoreOption:
    """One option (or a pattern: ``<field>`` stands for a column name) and what a read
    and a write do with it: :data:`HONOURED`, :data:`ACCEPTED` or a :class:`Refusal`."""

    name: str
    parse: Parse
    read: str | Refusal
    write: str | Refusal
    why: str

    def refusal(self, operation: str, append: bool = False) -> Refusal | None:
        verdict = self.verdicts(append)[operation]
        return verdict if isinstance(verdict, Refusal) else None

    def verdicts(self, append: bool = False) -> dict[str, str | Refusal]:
        """What a read and a write do with the option (of an append table: its own
        verdicts where :data:`APPEND` has them)."""
        found = APPEND.get(self.name) if append else None
        read, write = (found[0], found[1]) if found else (self.read, self.write)
        return {READ: read, WRITE: write}


def _options(*rows: tuple[str, Parse, str | Refusal, str | Refusal, str]) -> tuple[CoreOption, ...]:
    return tuple(CoreOption(*row) for row in rows)


H, A = HONOURED, ACCEPTED
STREAMING = "streaming reads and jobs only; a batch read does not use it"
UNIVERSAL = "writes and compact() pick a bucket's sorted runs by it, as Paimon's universal compaction does"
WRITER_MEMORY = "a writer's buffers and spilling; merge-core's writes take memory_limit instead"
LOOKUP = "lookup joins and lookup compaction; neither changes what a batch read returns"
LOOKUP_WAIT = "merge-core's writes always wait for their lookup compaction, whose files go in the same commit (as true)"
LOOKUP_COMPACT = "merge-core's writes compact their level-0 files by lookup at every commit (radical)"
EXPIRY = "when snapshots, changelogs or tags expire; no rows of a kept snapshot change"
EXPIRED = "which snapshots expire() removes, as Paimon's expiry decides (merge-core's commits expire none)"
CHANGELOG_EXPIRY = (
    "which changelogs expire() keeps as changelog/changelog-N once their snapshots expire, as Paimon's expiry does"
)
TAGS = "tags Paimon's commits create on a schedule; merge-core's commits create none"
INDEX_SEARCH = "global and primary-key indexes serve searches; a batch read does not use them"
VARIANT = "VARIANT columns, which merge-core refuses by their type"
POSTPONE_BUCKETS = "the number of buckets Paimon's engines give a new partition (merge-core: see postponed buckets)"
CROSS_PARTITION = (
    "cross-partition updates (bucket = -1 with a primary key that leaves out partition columns), "
    "whose writes merge-core refuses"
)
ASSIGNERS = (
    "how many bucket assigners a Flink or Spark job runs; merge-core assigns with one, as pypaimon does, "
    "and every key keeps the bucket the table's HASH index gives it"
)
CHANGELOG_FILES = "changelog files of the producers merge-core does not run (see changelog-producer)"
BLOB = "BLOB columns, which merge-core refuses by their type"
CHAIN = "chain tables (chain-table.enabled), which are refused"
FORMAT_TABLE = "format tables (type = format-table), which are refused"
CATALOG = "catalog and metastore metadata; the table's files are the same"
DATA_EVOLUTION = "data-evolution tables (data-evolution.enabled), which are refused"
CLUSTERING = (
    "append tables' clustering compaction, which sorts their rows by columns; merge-core's compaction keeps "
    "the written order (the same rows)"
)
NESTED_UPDATE = "options of Paimon's nested_update aggregate function, which merge-core does not have"

# Aggregate functions of Paimon merge-core does not have (the Rust fold names the same).
UNSUPPORTED_FUNCTIONS = (
    "merge_map_with_keytime",
    "nested_update",
    "nested_partial_update",
    "hll_sketch",
    "theta_sketch",
    "rbm32",
    "rbm64",
)
_FUNCTION = Refusal(
    "one of " + ", ".join(UNSUPPORTED_FUNCTIONS),
    lambda value: value.lower() in UNSUPPORTED_FUNCTIONS,
    "an aggregate function merge-core does not have",
    HONOURED,
)

STARTUP_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "latest-delta",
    "compacted-full",
    "from-timestamp",
    "from-creation-timestamp",
    "from-file-creation-time",
    "from-snapshot",
    "from-snapshot-full",
    "incremental",
)
TIME_TRAVEL = "a batch read takes the snapshot, tag or time it names, as read(snapshot=, tag=, as_of=) do"
NOT_ONE_SNAPSHOT = "a batch read of something else than one snapshot's rows (changes, files by creation time)"

OPTIONS: tuple[CoreOption, ...] = _options(
    # -- what the table is --------------------------------------------------------------
    (
        "type",
        _enum("table", "format-table", "materialized-table", "object-table", "lance-table", "iceberg-table"),
        unless(("table", "materialized-table"), "merge-core reads Paimon's own tables only"),
        unless(("table", "materialized-table"), "merge-core writes Paimon's own tables only"),
        "the kind of table: a normal Paimon table (a materialized table is one)",
    ),
    (
        "bucket",
        _int,
        H,
        H,
        "keys go to N fixed buckets by Paimon's hash; -1 to the bucket the table's HASH index gives them, "
        "new keys placed as Paimon's hash bucket assigner places them; -2 postpones them (see postponed buckets)",
    ),
    ("bucket-key", _string, H, H, "the columns whose hash picks a key's bucket"),
    (
        "bucket-append-ordered",
        _bool,
        A,
        A,
        "fixed-bucket append tables: streaming readers keep a bucket's order; merge-core writes and reads it in order",
    ),
    (
        "bucket-function.type",
        _enum("default", "mod", "hive"),
        A,
        unless(("default",), "merge-core hashes keys to buckets as Paimon's default function does"),
        "how a key's bucket is computed; a read takes each bucket's files as they are",
    ),
    ("path", _string, A, A, "the table's location, which the caller gives merge-core"),
    (
        "branch",
        _string,
        unless(("main",), "merge-core reads a branch opened as Table.open(path, branch=NAME), not by this option", A),
        unless(("main",), "merge-core writes a branch opened as Table.open(path, branch=NAME), not by this option", A),
        "the branch a job reads and writes",
    ),
    # -- files --------------------------------------------------------------------------
    (
        "file.format",
        _string,
        A,
        Refusal(
            "other than parquet",
            lambda v: v.lower() != "parquet",
            "merge-core writes Parquet data files only",
            H,
        ),
        "the format of new data files; a read takes each file by its own format (Parquet; others are refused when met)",
    ),
    (
        "file.format.per.level",
        _map,
        A,
        Refusal(
            "a level mapped to a format other than parquet",
            lambda v: any(f.strip().lower() != "parquet" for f in v.values()),
            "merge-core writes Parquet data files only",
            H,
        ),
        "the format of new data files by level",
    ),
    ("file.compression", _string, A, H, "the Parquet codec of new data files (lzo, which pyarrow lacks, is refused)"),
    (
        "file.compression.per.level",
        _map,
        A,
        A,
        "codecs by level: merge-core writes every level with file.compression, and every reader decodes any codec",
    ),
    ("file.compression.zstd-level", _int, A, H, "the zstd level of new data files"),
    ("file.block-size", _memory, A, A, "Parquet row-group size"),
    ("file.suffix.include.compression", _bool, A, A, "data file names only; a reader takes names from the manifests"),
    (
        "data-file.prefix",
        _string,
        A,
        A,
        "data file names only (merge-core names its files data-...); a reader takes names from the manifests",
    ),
    ("data-file.path-directory", _string, H, H, "the directory of the table that holds the data files"),
    (
        "data-file.thin-mode",
        _bool,
        A,
        H,
        "whether data files leave out the _KEY_ copies of the key (readers take the key from the table's columns)",
    ),
    (
        "data-file.external-paths",
        _string,
        A,
        A,
        "where Paimon's writers put data files; reads follow each file's path, merge-core writes in the table",
    ),
    (
        "data-file.external-paths.strategy",
        _enum("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin"),
        A,
        A,
        "see data-file.external-paths",
    ),
    ("data-file.external-paths.specific-fs", _string, A, A, "see data-file.external-paths"),
    ("data-file.external-paths.weights", _string, A, A, "see data-file.external-paths"),
    (
        "parquet.enable.dictionary",
        _bool,
        A,
        H,
        "dictionary encoding of new Parquet files (merge-core's default: off; see the differences below)",
    ),
    (
        "file-index.in-manifest-threshold",
        _memory,
        A,
        A,
        "file indexes only let a reader skip files; merge-core writes none",
    ),
    ("file-index.read.enabled", _bool, A, A, "file indexes only let a reader skip files"),
    (
        "file-index.<type>.columns",
        _string,
        A,
        A,
        "file indexes only let a reader skip files; merge-core writes none, which readers take as no index",
    ),
    ("file-index.<type>.<column>.<option>", _string, A, A, "see file-index.<type>.columns"),
    ("changelog-file.prefix", _string, A, H, "the name prefix of new changelog files (default changelog-)"),
    (
        "changelog-file.format",
        _string,
        A,
        Refusal(
            "other than parquet",
            lambda v: v.lower() != "parquet",
            "merge-core writes Parquet changelog files only",
            H,
        ),
        "the format of new changelog files (default: file.format); changes() reads Parquet",
    ),
    (
        "changelog-file.compression",
        _string,
        A,
        H,
        "the Parquet codec of new changelog files (default: file.compression)",
    ),
    ("changelog-file.stats-mode", _string, A, A, "statistics of changelog files, which no read skips by"),
    ("variant.shreddingSchema", _string, A, A, VARIANT),
    ("parquet.variant.shreddingSchema", _string, A, A, "an older name of variant.shreddingSchema"),
    ("variant.inferShreddingSchema", _bool, A, A, VARIANT),
    ("variant.shredding.inferenceMode", _enum("per-file", "adaptive"), A, A, VARIANT),
    ("variant.shredding.maxSchemaWidth", _int, A, A, VARIANT),
    ("variant.shredding.maxSchemaDepth", _int, A, A, VARIANT),
    ("variant.shredding.minFieldCardinalityRatio", _double, A, A, VARIANT),
    ("variant.shredding.maxInferBufferRow", _int, A, A, VARIANT),
    ("variant.shredding.adaptive.maxInferBufferRow", _int, A, A, VARIANT),
    ("variant.shredding.adaptive.retentionRatio", _double, A, A, VARIANT),
    # -- manifests ----------------------------------------------------------------------
    (
        "manifest.compression",
        _string,
        A,
        H,
        "the Avro codec of new manifests (zstd, snappy, deflate, none; others as zstd, which every reader reads)",
    ),
    ("manifest.target-file-size", _memory, A, A, "manifest sizes only"),
    ("manifest.full-compaction-threshold-size", _memory, A, A, "manifest sizes only"),
    ("manifest.merge-min-count", _int, A, A, "when manifests are folded (merge-core folds a base list of 30)"),
    ("manifest-sort.enabled", _bool, A, A, "the order of manifest entries only"),
    ("manifest-sort.partition-field", _string, A, A, "the order of manifest entries only"),
    ("manifest-sort.max-rewrite-size", _memory, A, A, "the order of manifest entries only"),
    ("manifest.merge-optimize.enabled", _bool, A, A, "how manifests are folded only"),
    ("manifest.delete-file-drop-stats", _bool, A, A, "statistics of DELETE manifest entries only"),
    # -- partitions ---------------------------------------------------------------------
    ("partition.default-name", _string, H, H, "the directory name of a null or empty partition value"),
    (
        "partition.legacy-name",
        _bool,
        H,
        H,
        "partition directories named by Java's toString of each value (true) or its cast to a string (false); "
        "a column whose directory Java names otherwise is refused by its type",
    ),
    (
        "partition",
        _string,
        A,
        A,
        "defines the partition columns when a table is created by options; Table.create takes partition_by",
    ),
    ("primary-key", _string, A, A, "defines the key when a table is created by options; Table.create takes key"),
    (
        "primary-key.nullable",
        _bool,
        if_true("null keys, equal by null-safe equality: merge-core's keys are never null"),
        if_true("null keys, equal by null-safe equality: merge-core's keys are never null"),
        "whether key columns may hold nulls",
    ),
    (
        "partition.expiration-strategy",
        _enum("values-time", "update-time"),
        A,
        A,
        "partition expiry, which Paimon's commits run and merge-core's do not: a later Paimon commit expires them",
    ),
    ("partition.expiration-time", _duration, A, A, "see partition.expiration-strategy"),
    ("partition.expiration-check-interval", _duration, A, A, "see partition.expiration-strategy"),
    ("partition.expiration-max-num", _int, A, A, "see partition.expiration-strategy"),
    ("partition.expiration-batch-size", _int, A, A, "see partition.expiration-strategy"),
    ("compaction.skip-expired-partitions", _bool, A, A, "see partition.expiration-strategy"),
    ("end-input.check-partition-expire", _bool, A, A, "see partition.expiration-strategy"),
    ("partition.timestamp-formatter", _string, A, A, "how partition values read as times (for expiry and tags)"),
    ("partition.timestamp-pattern", _string, A, A, "how partition values read as times (for expiry and tags)"),
    (
        "partition.timestamp-format.strict",
        _bool,
        A,
        if_true(
            "Paimon's writers refuse partition values that do not fit the timestamp pattern; merge-core's do not check"
        ),
        "whether writers check partition values against the timestamp pattern",
    ),
    ("partition.end-input-to-done", _bool, A, A, "engine jobs mark partitions done"),
    ("partition.mark-done-action", _string, A, A, "engine jobs mark partitions done"),
    ("partition.mark-done-action.custom.class", _string, A, A, "engine jobs mark partitions done"),
    ("partition.mark-done-action.http.url", _string, A, A, "engine jobs mark partitions done"),
    ("partition.mark-done-action.http.params", _string, A, A, "engine jobs mark partitions done"),
    (
        "partition.sink-strategy",
        _enum("none", "hash", "partition_dynamic"),
        A,
        A,
        "how engine jobs spread rows over their tasks",
    ),
    ("partition.idle-time-to-report-statistic", _duration, A, A, CATALOG),
    ("scan.plan-sort-partition", _bool, A, A, "merge-core plans splits in partition order anyway"),
    # -- merging ------------------------------------------------------------------------
    (
        "merge-engine",
        _enum("deduplicate", "partial-update", "aggregation", "first-row"),
        H,
        H,
        "the merge function (a first-row table's writes are compacted at once by lookup, as Paimon's)",
    ),
    ("ignore-delete", _bool, H, H, "retractions are ignored"),
    ("first-row.ignore-delete", _bool, H, H, "an older name of ignore-delete"),
    ("deduplicate.ignore-delete", _bool, H, H, "an older name of ignore-delete"),
    ("partial-update.ignore-delete", _bool, H, H, "an older name of ignore-delete"),
    ("ignore-update-before", _bool, A, H, "a write drops -U rows, as Paimon's writers do"),
    ("sequence.field", _string, H, H, "the columns that order the versions of a key (of any orderable type)"),
    ("sequence.field.sort-order", _enum("ascending", "descending"), H, H, "whether a greater sequence value is newer"),
    (
        "sequence.snapshot-ordering",
        _bool,
        if_true("versions ordered by the snapshot that committed them"),
        if_true("versions ordered by the snapshot that committed them"),
        "whether commits, not sequence values, order versions",
    ),
    ("aggregation.remove-record-on-delete", _bool, H, H, "a -D removes the key's row"),
    ("partial-update.remove-record-on-delete", _bool, H, H, "a -D removes the key's row"),
    (
        "partial-update.remove-record-on-sequence-group",
        _string,
        H,
        H,
        "a -D of these sequence groups removes the key's row",
    ),
    ("fields.default-aggregate-function", _string, _FUNCTION, _FUNCTION, "the function of columns without their own"),
    ("fields.<field>.aggregate-function", _string, _FUNCTION, _FUNCTION, "a column's aggregate function"),
    ("fields.<field>.ignore-retract", _bool, H, H, "a column's function ignores retractions"),
    ("fields.<field>.distinct", _bool, H, H, "collect and listagg keep distinct values"),
    ("fields.<field>.list-agg-delimiter", _string, H, H, "listagg's delimiter"),
    ("fields.<field>.sequence-group", _string, H, H, "partial-update's sequence groups"),
    ("fields.<field>.nested-key", _string, if_set(NESTED_UPDATE), if_set(NESTED_UPDATE), NESTED_UPDATE),
    (
        "fields.<field>.nested-key-null-strategy",
        _enum("merge", "ignore", "error"),
        if_set(NESTED_UPDATE),
        if_set(NESTED_UPDATE),
        NESTED_UPDATE,
    ),
    ("fields.<field>.nested-sequence-field", _string, if_set(NESTED_UPDATE), if_set(NESTED_UPDATE), NESTED_UPDATE),
    ("fields.<field>.count-limit", _int, if_set(NESTED_UPDATE), if_set(NESTED_UPDATE), NESTED_UPDATE),
    (
        "fields.<field>.ts-field",
        _string,
        if_set("merge_map_with_keytime's time column, a function merge-core does not have"),
        if_set("merge_map_with_keytime's time column, a function merge-core does not have"),
        "merge_map_with_keytime's time column",
    ),
    ("fields.<field>.stats-mode", _string, A, H, "the statistics a data file keeps of a column"),
    (
        "fields.<field>.map.storage-layout",
        _enum("default", "shared-shredding"),
        unless(("default",), "a MAP column stored as shredded columns"),
        unless(("default",), "a MAP column stored as shredded columns"),
        "how a MAP column is stored",
    ),
    ("fields.<field>.map.shared-shredding.max-columns", _int, A, A, "shredded MAP columns only (refused)"),
    (
        "fields.<field>.map.shared-shredding.column-placement-policy",
        _enum("plain", "sequential", "lru"),
        A,
        A,
        "shredded MAP columns only (refused)",
    ),
    ("fields.<field>.pk-vector.index.type", _string, A, A, INDEX_SEARCH),
    ("fields.<field>.pk-vector.index.options", _string, A, A, INDEX_SEARCH),
    ("fields.<field>.pk-vector.distance.metric", _string, A, A, INDEX_SEARCH),
    ("fields.<field>.pk-full-text.index.options", _string, A, A, INDEX_SEARCH),
    ("fields.<field>.pk-btree.index.options", _string, A, A, INDEX_SEARCH),
    ("fields.<field>.pk-bitmap.index.options", _string, A, A, INDEX_SEARCH),
    ("fields.<field>.pk-multivalue.index.options", _string, A, A, INDEX_SEARCH),
    (
        "rowkind.field",
        _string,
        A,
        H,
        "a write without row_kind takes row kinds from this column (kept as a column), as Paimon's writers do",
    ),
    ("sort-engine", _enum("min-heap", "loser-tree"), A, A, "the merge's algorithm; the result is the same"),
    (
        "record-level.expire-time",
        _duration,
        A,
        A,
        "Paimon's compaction drops rows older than this, promising no time; merge-core's compaction keeps them",
    ),
    ("record-level.time-field", _string, A, A, "see record-level.expire-time"),
    # -- deletion vectors ---------------------------------------------------------------
    (
        "deletion-vectors.enabled",
        _bool,
        H,
        H,
        "reads apply deletion vectors and skip uncompacted level-0 files; writes compact their level-0 files at "
        "once by lookup, marking the rows they replace in deletion vectors, as Paimon's writers do",
    ),
    ("deletion-vectors.merge-on-read", _bool, H, A, "batch reads merge level-0 files of a deletion-vector table"),
    ("deletion-vectors.modifiable", _bool, A, A, "whether the table's option may change (schema changes check it)"),
    (
        "deletion-vector.index-file.target-size",
        _memory,
        A,
        A,
        "a bucket's deletion vectors are in one index file, as Paimon's writers keep them",
    ),
    ("deletion-vectors.bitmap64", _bool, A, H, "the width of new deletion vectors (64-bit if true); reads take both"),
    (
        "index-file-in-data-file-dir",
        _bool,
        H,
        H,
        "index files (deletion vectors, dynamic buckets' HASH files) kept in the bucket's directory",
    ),
    # -- writing ------------------------------------------------------------------------
    (
        "changelog-producer",
        _enum("none", "input", "full-compaction", "lookup"),
        A,
        H,
        "the changelog files writes (input; lookup: by the lookup compaction of their level-0 files) and compactions "
        "(full-compaction) write for streaming reads and changes()",
    ),
    (
        "changelog-producer.row-deduplicate",
        _bool,
        A,
        H,
        "a full-compaction or lookup changelog leaves out updates that change no value",
    ),
    (
        "changelog-producer.row-deduplicate-ignore-fields",
        _string,
        A,
        H,
        "columns changelog-producer.row-deduplicate does not compare",
    ),
    ("delete.force-produce-changelog", _bool, A, A, CHANGELOG_FILES),
    (
        "write.sequence-number-init-mode",
        _enum("scan", "snapshot"),
        A,
        unless(
            ("scan",),
            "Paimon's writers would continue from the sequence number their snapshots record, which merge-core's "
            "commits do not record, and order their rows before merge-core's",
        ),
        "where a writer continues a bucket's sequence numbers (merge-core: from the bucket's files)",
    ),
    (
        "commit.callbacks",
        _string,
        A,
        if_set("Java classes Paimon's commits call, which merge-core cannot run"),
        "classes called after each commit",
    ),
    ("commit.callback.<n>.param", _string, A, A, "see commit.callbacks"),
    (
        "commit.strict-mode.last-safe-snapshot",
        _long,
        A,
        if_set("Paimon's commits then check other writers' snapshots; merge-core's do not"),
        "a commit checks other writers' snapshots",
    ),
    ("commit.timeout", _duration, A, A, "commit retries (merge-core retries a lost race up to 100 times)"),
    ("commit.max-retries", _int, A, A, "commit retries (merge-core retries a lost race up to 100 times)"),
    ("commit.min-retry-wait", _duration, A, A, "commit retries"),
    ("commit.max-retry-wait", _duration, A, A, "commit retries"),
    (
        "commit.force-compact",
        _bool,
        A,
        A,
        "Paimon's writers then wait for their compaction at each commit; merge-core's writes always do",
    ),
    ("commit.force-create-snapshot", _bool, A, A, STREAMING),
    ("commit.user-prefix", _string, A, A, "the name a commit is made under"),
    ("commit.discard-duplicate-files", _bool, A, A, "merge-core never commits a file twice"),
    ("snapshot.ignore-empty-commit", _bool, A, A, "merge-core commits nothing for an empty write"),
    (
        "write-only",
        _bool,
        A,
        H,
        "writes leave their level-0 files uncompacted (no universal pick, no lookup) for compact(); "
        "merge-core's writes never expire",
    ),
    ("write.compaction-skip", _bool, A, H, "an older name of write-only"),
    (
        "full-compaction.delta-commits",
        _int,
        A,
        A,
        "a streaming writer's full compaction every so many commits; merge-core's writes pick as Paimon's batch "
        "writes do, compact(full=True) compacts fully",
    ),
    (
        "target-file-size",
        _memory,
        A,
        H,
        "a write's level-0 files and a compaction's run go on in a new file once a file is this long (its "
        "encoded length, estimated while its rows are encoded; 128 mb by default)",
    ),
    (
        "target-file-row-num",
        _long,
        A,
        H,
        "a write's level-0 files go on in a new file at this many rows too (a compaction rolls by size only, as "
        "Paimon's)",
    ),
    ("write-buffer-size", _memory, A, A, WRITER_MEMORY),
    ("write-buffer-spill.max-disk-size", _memory, A, A, WRITER_MEMORY),
    ("write-buffer-spillable", _bool, A, A, WRITER_MEMORY),
    ("write-buffer-for-append", _bool, A, A, WRITER_MEMORY),
    ("write-max-writers-to-spill", _int, A, A, WRITER_MEMORY),
    ("local-sort.max-num-file-handles", _int, A, A, WRITER_MEMORY),
    ("page-size", _memory, A, A, WRITER_MEMORY),
    ("cache-page-size", _memory, A, A, WRITER_MEMORY),
    ("sort-spill-threshold", _int, A, A, WRITER_MEMORY),
    ("sort-spill-buffer-size", _memory, A, A, WRITER_MEMORY),
    ("spill-compression", _string, A, A, WRITER_MEMORY),
    ("spill-compression.zstd-level", _int, A, A, WRITER_MEMORY),
    ("local-merge-buffer-size", _memory, A, A, WRITER_MEMORY),
    ("write.batch-size", _int, A, A, "rows a file format encodes at once"),
    ("orc.write.batch-size", _int, A, A, "an older name of write.batch-size"),
    ("write.batch-memory", _memory, A, A, "memory a file format encodes at once"),
    ("read.batch-size", _int, A, A, "rows a reader decodes at once"),
    ("async-file-write", _bool, A, A, "how files are written, not what"),
    ("file-operation.thread-num", _int, A, A, "threads of file operations"),
    ("delete-file.thread-num", _int, A, A, "an older name of file-operation.thread-num"),
    ("file-reader-async-threshold", _memory, A, A, "how files are read, not what"),
    (
        "overwrite-upgrade",
        _bool,
        A,
        H,
        "an overwrite's new files of a bucket go to the top level if they do not overlap",
    ),
    (
        "dynamic-partition-overwrite",
        _bool,
        A,
        H,
        "an overwrite of a partitioned table replaces only the partitions it writes",
    ),
    ("auto-create", _bool, A, A, "merge-core creates tables with Table.create"),
    ("visibility-callback.enabled", _bool, A, A, "engine jobs wait for compactions"),
    ("visibility-callback.timeout", _duration, A, A, "engine jobs wait for compactions"),
    ("visibility-callback.check-interval", _duration, A, A, "engine jobs wait for compactions"),
    ("cross-partition-upsert.index-ttl", _duration, A, A, CROSS_PARTITION),
    ("cross-partition-upsert.bootstrap-parallelism", _int, A, A, CROSS_PARTITION),
    (
        "dynamic-bucket.target-row-num",
        _long,
        A,
        H,
        "keys a dynamic bucket takes before new keys go to the next one (the keys its HASH index file holds)",
    ),
    ("dynamic-bucket.initial-buckets", _int, A, A, ASSIGNERS),
    (
        "dynamic-bucket.max-buckets",
        _int,
        A,
        H,
        "buckets a partition of a dynamic-bucket table may have (-1: no limit); past them, new keys join "
        "existing buckets",
    ),
    ("dynamic-bucket.assigner-parallelism", _int, A, A, ASSIGNERS),
    (
        "postpone.batch-write-fixed-bucket",
        _bool,
        A,
        H,
        "whether a write to a postponed-bucket table goes to real buckets (true) or to bucket-postpone/",
    ),
    (
        "postpone.merge-on-read",
        _bool,
        if_true("a read merging postponed rows into the real buckets, which merge-core's read does not do"),
        A,
        "Flink's and Spark's reads then merge the rows waiting in bucket-postpone/; other batch reads skip them",
    ),
    ("postpone.batch-write-fixed-bucket.max-parallelism", _int, A, A, POSTPONE_BUCKETS),
    ("postpone.batch-write-fixed-bucket.rescale-load-factor", _int, A, A, POSTPONE_BUCKETS),
    (
        "postpone.default-bucket-num",
        _int,
        A,
        H,
        "the number of buckets of a partition that gets real buckets for the first time",
    ),
    (
        "postpone.target-row-num-per-bucket",
        _long,
        A,
        H,
        "compaction: postponed rows per bucket of a new partition, when set",
    ),
    (
        "postpone.target-size-per-bucket",
        _memory,
        A,
        H,
        "compaction: bytes of postponed files per bucket of a new partition",
    ),
    # -- compaction ---------------------------------------------------------------------
    (
        "num-sorted-run.compaction-trigger",
        _int,
        A,
        H,
        "the run count of the universal pick of writes and compact(); without num-levels, the top level",
    ),
    ("num-levels", _int, A, H, "the top level (num-levels - 1): a compaction of every run writes there"),
    (
        "num-sorted-run.stop-trigger",
        _int,
        A,
        A,
        "Paimon's writers wait for their compaction past this many runs; merge-core's writes always finish "
        "theirs before they commit, as Paimon's batch writes do",
    ),
    (
        "compaction.force-rewrite-all-files",
        _bool,
        A,
        A,
        "merge-core's compactions rewrite every file they take anyway",
    ),
    (
        "compaction.small-file-ratio",
        _double,
        A,
        A,
        "which picked files Paimon moves up a level without rewriting them; merge-core rewrites them (same rows)",
    ),
    ("compaction.max-size-amplification-percent", _int, A, H, UNIVERSAL),
    ("compaction.force-up-level-0", _bool, A, H, UNIVERSAL),
    ("compaction.size-ratio", _int, A, H, UNIVERSAL),
    ("compaction.offpeak.start.hour", _int, A, H, UNIVERSAL),
    ("compaction.offpeak.end.hour", _int, A, H, UNIVERSAL),
    ("compaction.offpeak-ratio", _int, A, H, UNIVERSAL),
    (
        "compaction.optimization-interval",
        _duration,
        A,
        H,
        "compact() takes a bucket whole once this long has passed since its top-level files were written",
    ),
    ("compaction.total-size-threshold", _memory, A, H, UNIVERSAL),
    ("compaction.incremental-size-threshold", _memory, A, H, UNIVERSAL),
    ("compaction.min.file-num", _int, A, A, "append tables only (see below)"),
    ("compaction.file-num-limit", _int, A, A, "how many files Paimon's append compaction plans in one go"),
    ("compaction.delete-ratio-threshold", _double, A, A, "append tables with deletion vectors (refused)"),
    ("sort-compaction.range-strategy", _enum("size", "quantity"), A, A, "append tables' sort compaction"),
    ("sort-compaction.local-sample.magnification", _int, A, A, "append tables' sort compaction"),
    ("force-lookup", _bool, A, A, LOOKUP),
    ("lookup-wait", _bool, A, A, LOOKUP_WAIT),
    ("changelog-producer.lookup-wait", _bool, A, A, f"an older name of lookup-wait: {LOOKUP_WAIT}"),
    ("lookup-compact", _enum("radical", "gentle"), A, A, LOOKUP_COMPACT),
    ("lookup-compact.max-interval", _int, A, A, LOOKUP_COMPACT),
    ("lookup.hash-load-factor", _double, A, A, LOOKUP),
    ("lookup.cache-rows", _long, A, A, LOOKUP),
    ("lookup.continuous.discovery-interval", _duration, A, A, LOOKUP),
    ("lookup.cache-file-retention", _duration, A, A, LOOKUP),
    ("lookup.cache-max-disk-size", _memory, A, A, LOOKUP),
    ("lookup.cache-spill-compression", _string, A, A, LOOKUP),
    (
        "lookup.cache-max-memory-size",
        _memory,
        A,
        H,
        "the rows of files above level 0 a Table keeps decoded between its writes' lookup compactions (256 mb)",
    ),
    ("lookup.blob-as-descriptor", _bool, A, A, LOOKUP),
    ("lookup.cache.high-priority-pool-ratio", _double, A, A, LOOKUP),
    ("lookup.cache.bloom.filter.enabled", _bool, A, A, LOOKUP),
    ("lookup.cache.bloom.filter.fpp", _double, A, A, LOOKUP),
    ("lookup.remote-file.enabled", _bool, A, A, LOOKUP),
    ("lookup.remote-file.level-threshold", _int, A, A, LOOKUP),
    ("lookup.merge-buffer-size", _memory, A, A, LOOKUP),
    ("lookup.merge-records-threshold", _int, A, A, LOOKUP),
    ("local-kv-db.block-size", _memory, A, A, LOOKUP),
    # -- reading ------------------------------------------------------------------------
    ("source.split.target-size", _memory, H, A, "the bytes of files a split packs"),
    ("source.split.open-file-cost", _memory, H, A, "what a file weighs in a split at least"),
    (
        "scan.mode",
        _enum(*STARTUP_MODES),
        Refusal(
            "latest-delta, incremental, from-file-creation-time or from-creation-timestamp",
            lambda v: v in ("latest-delta", "incremental", "from-file-creation-time", "from-creation-timestamp"),
            NOT_ONE_SNAPSHOT,
            H,
        ),
        A,
        "which snapshot a batch read takes (the latest, the latest compacted, or by the scan.* option it names)",
    ),
    (
        "log.scan",
        _enum(*STARTUP_MODES),
        unless(
            ("default", "latest-full", "full", "latest"), "an older name of scan.mode, which merge-core reads not", A
        ),
        A,
        "an older name of scan.mode",
    ),
    ("scan.snapshot-id", _long, H, A, TIME_TRAVEL),
    ("scan.tag-name", _string, H, A, TIME_TRAVEL),
    ("scan.version", _string, H, A, TIME_TRAVEL + " (a tag if one has that name, else a snapshot id)"),
    ("scan.timestamp", _string, H, A, TIME_TRAVEL),
    ("scan.timestamp-millis", _long, H, A, TIME_TRAVEL),
    (
        "log.scan.timestamp-millis",
        _long,
        if_set("an older name of scan.timestamp-millis, which merge-core reads not"),
        A,
        "an older name of scan.timestamp-millis",
    ),
    (
        "scan.watermark",
        _long,
        if_set("a batch read of the snapshot of a watermark"),
        A,
        "a scan reads from a watermark",
    ),
    ("scan.creation-time-millis", _long, if_set(NOT_ONE_SNAPSHOT), A, "a scan reads from a time of creation"),
    ("scan.file-creation-time-millis", _long, if_set(NOT_ONE_SNAPSHOT), A, "a scan reads only newer files"),
    ("scan.bucket", _int, if_set("a read of one bucket only"), A, "a scan reads one bucket"),
    (
        "incremental-between",
        _string,
        if_set("a batch read of the changes between two snapshots"),
        A,
        "a scan reads changes",
    ),
    (
        "incremental-between-timestamp",
        _string,
        if_set("a batch read of the changes between two times"),
        A,
        "a scan reads changes",
    ),
    (
        "incremental-to-auto-tag",
        _string,
        if_set("a batch read of the changes between two tags"),
        A,
        "a scan reads changes",
    ),
    ("incremental-between-scan-mode", _enum("auto", "delta", "changelog", "diff"), A, A, "see incremental-between"),
    ("incremental-between-tag-to-snapshot", _bool, if_set(NOT_ONE_SNAPSHOT), A, "see incremental-between"),
    (
        "batch-scan-mode",
        _enum("none", "compact"),
        unless(("none",), "an internal scan of the files to compact", A),
        A,
        "internal scans of Paimon's compaction jobs",
    ),
    ("stream-scan-mode", _enum("none", "compact-bucket-table", "file-monitor"), A, A, STREAMING),
    ("scan.bounded.watermark", _long, A, A, STREAMING),
    ("scan.max-splits-per-task", _int, A, A, STREAMING),
    ("scan.manifest.parallelism", _int, A, A, "threads that read manifests"),
    (
        "scan.ignore-corrupt-files",
        _bool,
        A,
        A,
        "a damaged file stops merge-core's read (CorruptTableError) rather than being skipped",
    ),
    (
        "scan.ignore-lost-files",
        _bool,
        A,
        A,
        "a missing file stops merge-core's read (CorruptTableError) rather than being skipped",
    ),
    (
        "scan.plan-auto-tag-for-read.time-retained",
        _duration,
        A,
        A,
        "a batch read tags its snapshot against expiry; merge-core's does not",
    ),
    (
        "scan.fallback-branch",
        _string,
        if_set("a read takes missing partitions from another branch"),
        A,
        "a read of another branch's partitions",
    ),
    ("scan.fallback-branch.read-fail-fast", _bool, A, A, "see scan.fallback-branch"),
    (
        "scan.primary-branch",
        _string,
        if_set("a read takes partitions from another branch first"),
        A,
        "a read of another branch's partitions",
    ),
    ("continuous.discovery-interval", _duration, A, A, STREAMING),
    ("streaming.read.snapshot.delay", _duration, A, A, STREAMING),
    ("streaming-read-overwrite", _bool, A, A, STREAMING),
    ("streaming-read-append-overwrite", _bool, A, A, STREAMING),
    ("consumer-id", _string, A, A, STREAMING),
    ("consumer.expiration-time", _duration, A, A, STREAMING),
    ("consumer.mode", _enum("exactly-once", "at-least-once"), A, A, STREAMING),
    ("consumer.ignore-progress", _bool, A, A, STREAMING),
    ("consumer.changelog-only", _bool, A, H, "whether consumers keep snapshots from expire(), or changelogs only"),
    ("table-read.sequence-number.enabled", _bool, A, A, "the audit_log and binlog system tables"),
    ("key-value.sequence_number.enabled", _bool, A, A, "internal to the audit_log and binlog system tables"),
    (
        "query-auth.enabled",
        _bool,
        if_true("a catalog checks the column and row permissions of every query; merge-core reads the files directly"),
        A,
        "permission checks of a catalog's queries",
    ),
    ("format-table.scan.list-parallelism", _int, A, A, FORMAT_TABLE),
    ("format-table.implementation", _enum("paimon", "engine"), A, A, FORMAT_TABLE),
    ("format-table.partition-path-only-value", _bool, A, A, FORMAT_TABLE),
    ("format-table.file.compression", _string, A, A, FORMAT_TABLE),
    ("format-table.commit-hive-sync-url", _string, A, A, FORMAT_TABLE),
    # -- branches and chain tables ------------------------------------------------------
    (
        "chain-table.enabled",
        _bool,
        if_true("a chain table reads partitions across branches"),
        if_true("a chain table writes across branches"),
        "whether the table is a chain table",
    ),
    (
        "scan.fallback-snapshot-branch",
        _string,
        if_set("a chain table's read takes partitions from this branch"),
        A,
        CHAIN,
    ),
    ("scan.fallback-delta-branch", _string, if_set("a chain table's read takes partitions from this branch"), A, CHAIN),
    ("chain-table.chain-partition-keys", _string, A, A, CHAIN),
    ("chain-table.streaming.merge-snapshot", _bool, A, A, CHAIN),
    ("chain-table.split.key-range-enabled", _bool, A, A, CHAIN),
    # -- expiry, tags, consumers ----------------------------------------------------------
    ("snapshot.num-retained.min", _int, A, H, EXPIRED),
    ("snapshot.num-retained.max", _int, A, H, EXPIRED),
    ("snapshot.time-retained", _duration, A, H, EXPIRED),
    ("snapshot.expire.limit", _int, A, H, EXPIRED),
    ("snapshot.expire.execution-mode", _enum("sync", "async"), A, A, EXPIRY),
    ("snapshot.clean-empty-directories", _bool, A, H, "expire() removes the directories it leaves empty"),
    ("snapshot.expire.clean-empty-directories", _bool, A, A, "an older name of snapshot.clean-empty-directories"),
    ("changelog.num-retained.min", _int, A, H, CHANGELOG_EXPIRY),
    ("changelog.num-retained.max", _int, A, H, CHANGELOG_EXPIRY),
    ("changelog.time-retained", _duration, A, H, CHANGELOG_EXPIRY),
    ("snapshot.watermark-idle-timeout", _duration, A, A, STREAMING),
    ("tag.automatic-creation", _enum("none", "process-time", "watermark", "batch"), A, A, TAGS),
    ("tag.create-success-file", _bool, A, A, TAGS),
    ("tag.creation-period", _enum("daily", "hourly", "two-hours"), A, A, TAGS),
    ("tag.creation-delay", _duration, A, A, TAGS),
    ("tag.period-formatter", _enum("with_dashes", "without_dashes", "without_dashes_and_spaces"), A, A, TAGS),
    ("tag.creation-period-duration", _duration, A, A, TAGS),
    ("tag.num-retained-max", _int, A, A, TAGS),
    ("tag.default-time-retained", _duration, A, A, TAGS),
    ("tag.time-expire-enabled", _bool, A, A, TAGS),
    ("tag.automatic-completion", _bool, A, A, TAGS),
    ("tag.batch.customized-name", _string, A, A, TAGS),
    ("tag.callbacks", _string, A, A, TAGS),
    ("tag.callback.<n>.param", _string, A, A, TAGS),
    ("sink.watermark-time-zone", _string, A, A, TAGS),
    ("sink.process-time-zone", _string, A, A, TAGS),
    # -- statistics ---------------------------------------------------------------------
    (
        "metadata.stats-mode",
        _string,
        A,
        H,
        "the statistics data files keep of each column (none, counts, full, truncate(N))",
    ),
    ("metadata.stats-mode.per.level", _map, A, H, "value statistics by level"),
    ("metadata.stats-dense-store", _bool, A, H, "how statistics are stored (columns of mode none left out)"),
    ("metadata.stats-keep-first-n-columns", _int, A, H, "which columns have statistics"),
    # -- catalogs and engines -------------------------------------------------------------
    ("metastore.partitioned-table", _bool, A, A, CATALOG),
    ("metastore.tag-to-partition", _string, A, A, CATALOG),
    ("metastore.tag-to-partition.preview", _enum("none", "process-time", "watermark", "batch"), A, A, CATALOG),
    ("materialized-table.definition-query", _string, A, A, CATALOG),
    ("materialized-table.interval-freshness", _string, A, A, CATALOG),
    ("materialized-table.interval-freshness.time-unit", _enum("second", "minute", "hour", "day"), A, A, CATALOG),
    ("materialized-table.logical-refresh-mode", _enum("continuous", "full", "automatic"), A, A, CATALOG),
    ("materialized-table.refresh-mode", _enum("continuous", "full", "automatic"), A, A, CATALOG),
    ("materialized-table.refresh-status", _enum("initializing", "activated", "suspended"), A, A, CATALOG),
    ("materialized-table.refresh-handler-description", _string, A, A, CATALOG),
    ("materialized-table.refresh-handler-bytes", _string, A, A, CATALOG),
    ("alter-column-null-to-not-null.disabled", _bool, H, H, "whether `alter_column` may make a column NOT NULL"),
    ("disable-explicit-type-casting", _bool, H, H, "whether `alter_column` may change a type beyond widenings"),
    ("add-column-before-partition", _bool, H, H, "where `add_column` puts a column without `after`"),
    ("zorder.var-length-contribution", _int, A, A, "append tables' sort compaction"),
    # -- clustering, row tracking, data evolution -----------------------------------------
    (
        "pk-clustering-override",
        _bool,
        if_true("data files sorted by other columns than the key"),
        if_true("data files sorted by other columns than the key"),
        "whether data files are sorted by clustering.columns",
    ),
    ("clustering.columns", _string, A, A, CLUSTERING + " (and pk-clustering-override, refused)"),
    ("sink.clustering.by-columns", _string, A, A, "an older name of clustering.columns"),
    ("clustering.strategy", _string, A, A, "see clustering.columns"),
    ("sink.clustering.strategy", _string, A, A, "an older name of clustering.strategy"),
    ("clustering.incremental", _bool, A, A, CLUSTERING),
    ("clustering.history-partition.limit", _int, A, A, CLUSTERING),
    ("clustering.history-partition.idle-to-full-sort", _duration, A, A, CLUSTERING),
    ("clustering.incremental.optimize-write", _bool, A, A, CLUSTERING),
    ("clustering.incremental.mode", _enum("global-sort", "local-sort"), A, A, CLUSTERING),
    (
        "row-tracking.enabled",
        _bool,
        if_true("row ids kept in the files (append tables only in Paimon)"),
        if_true("row ids kept in the files (append tables only in Paimon)"),
        "whether rows carry ids",
    ),
    ("row-tracking.partition-group-on-commit", _bool, A, A, "row-tracking tables (refused)"),
    (
        "data-evolution.enabled",
        _bool,
        if_true("rows whose columns are spread over several files"),
        if_true("rows whose columns are spread over several files"),
        "whether a row's columns may live in several files",
    ),
    ("data-evolution.reassign.skip-contiguous-row-count", _long, A, A, DATA_EVOLUTION),
    ("data-evolution.row-id-conflict-rewrite.max-size", _memory, A, A, DATA_EVOLUTION),
    ("data-evolution.row-sidecar.enabled", _bool, A, A, DATA_EVOLUTION),
    ("data-evolution.row-sidecar.max-selected-rows", _long, A, A, DATA_EVOLUTION),
    ("data-evolution.row-sidecar.max-selection-ratio", _double, A, A, DATA_EVOLUTION),
    ("data-evolution.merge-into.file-pruning", _bool, A, A, DATA_EVOLUTION),
    ("data-evolution.merge-into.source-persist", _bool, A, A, DATA_EVOLUTION),
    ("data-evolution.compaction.rewrite-row-ids", _bool, A, A, DATA_EVOLUTION),
    ("blob-compaction.enabled", _bool, A, A, DATA_EVOLUTION),
    # -- blobs, vectors and indexes -------------------------------------------------------
    (
        "blob-field",
        _string,
        if_set("columns stored in blob files of their own"),
        if_set("columns stored in blob files of their own"),
        "which columns are blobs",
    ),
    (
        "blob-descriptor-field",
        _string,
        if_set("columns holding references to blobs stored elsewhere"),
        if_set("columns holding references to blobs stored elsewhere"),
        "which columns are blob references",
    ),
    (
        "blob.stored-descriptor-fields",
        _string,
        if_set("columns holding references to blobs stored elsewhere"),
        if_set("columns holding references to blobs stored elsewhere"),
        "an older name of blob-descriptor-field",
    ),
    (
        "blob-view-field",
        _string,
        if_set("columns resolved from other tables at read time"),
        if_set("columns resolved from other tables at read time"),
        "which columns are blob views",
    ),
    ("blob-view.resolve.enabled", _bool, A, A, BLOB),
    ("blob-as-descriptor", _bool, A, A, BLOB),
    ("blob-descriptor.source-table", _string, A, A, BLOB),
    ("blob-write-null-on-missing-file", _bool, A, A, BLOB),
    ("blob-write-null-on-fetch-failure", _bool, A, A, BLOB),
    ("blob.target-file-size", _memory, A, A, BLOB),
    ("blob.split-by-file-size", _bool, A, A, BLOB),
    ("blob.copy-buffer-size", _memory, A, A, BLOB),
    (
        "vector-field",
        _string,
        if_set("VECTOR columns stored in files of their own"),
        if_set("VECTOR columns stored in files of their own"),
        "which columns are vectors",
    ),
    ("vector.file.format", _string, A, A, "VECTOR columns (vector-field, refused)"),
    ("vector.target-file-size", _memory, A, A, "VECTOR columns (vector-field, refused)"),
    ("vector-search.distribute.enabled", _bool, A, A, INDEX_SEARCH),
    ("vector-search.lateral-join.batch-size", _int, A, A, INDEX_SEARCH),
    *(
        (
            f"pk-{kind}.index.columns",
            _string,
            A,
            if_set("a write must update the table's primary-key index files; merge-core writes none"),
            INDEX_SEARCH,
        )
        for kind in ("vector", "btree", "bitmap", "multivalue", "full-text")
    ),
    ("global-index.enabled", _bool, A, A, INDEX_SEARCH),
    ("global-index.external-path", _string, A, A, INDEX_SEARCH),
    ("global-index.column-update-action", _enum("throw_error", "drop_partition_index"), A, A, INDEX_SEARCH),
    ("global-index.row-count-per-shard", _long, A, A, INDEX_SEARCH),
    ("global-index.build.max-shard", _int, A, A, INDEX_SEARCH),
    ("global-index.build.max-parallelism", _int, A, A, INDEX_SEARCH),
    ("global-index.search-mode", _enum("fast", "full", "detail"), A, A, INDEX_SEARCH),
    ("scalar-index.search-mode", _enum("fast", "full", "detail"), A, A, INDEX_SEARCH),
    ("vector-index.search-mode", _enum("fast", "full", "detail"), A, A, INDEX_SEARCH),
    ("full-text-index.search-mode", _enum("fast", "full", "detail"), A, A, INDEX_SEARCH),
    ("global-index.thread-num", _int, A, A, INDEX_SEARCH),
)


# Options that pick the snapshot a batch read takes, or what of it: a read that names its
# snapshot (read(snapshot=, tag=, as_of=)) overrides them, as a scan's own options do.
SNAPSHOT_CHOICE = frozenset(
    {
        "scan.mode",
        "log.scan",
        "scan.snapshot-id",
        "scan.tag-name",
        "scan.version",
        "scan.timestamp",
        "scan.timestamp-millis",
        "log.scan.timestamp-millis",
        "scan.watermark",
        "scan.creation-time-millis",
        "scan.file-creation-time-millis",
        "incremental-between",
        "incremental-between-timestamp",
        "incremental-to-auto-tag",
        "incremental-between-tag-to-snapshot",
        "incremental-between-scan-mode",
    }
)


# Options whose verdict differs on an append table (no primary key): read, write, why.
APPEND_DV = (
    "deletion vectors of an append table (rows a Paimon DELETE or UPDATE removed in place), which merge-core "
    "neither reads nor writes"
)
NOTHING_MERGES = "an append table merges nothing: Paimon ignores the merge options of a table without a key"
APPEND: dict[str, tuple[str | Refusal, str | Refusal, str]] = {
    "deletion-vectors.enabled": (if_true(APPEND_DV), if_true(APPEND_DV), "deletion vectors of append tables"),
    "deletion-vectors.merge-on-read": (A, A, "tables with deletion vectors (refused on append tables)"),
    "merge-engine": (A, A, NOTHING_MERGES),
    "fields.default-aggregate-function": (A, A, NOTHING_MERGES),
    "fields.<field>.aggregate-function": (A, A, NOTHING_MERGES),
    "sequence.field": (A, A, NOTHING_MERGES),
    "ignore-delete": (A, H, "a write drops -U and -D rows, which an append table otherwise refuses"),
    "ignore-update-before": (A, H, "a write drops -U rows, which an append table otherwise refuses"),
    "target-file-size": (A, H, "compact() takes the files below target-file-size * compaction.small-file-ratio"),
    "compaction.small-file-ratio": (A, H, "compact() takes the files below target-file-size * this ratio"),
    "compaction.min.file-num": (A, H, "compact() takes a bucket once it has this many small files"),
}


def _pattern(name: str) -> re.Pattern[str]:
    """A pattern's regular expression: ``<field>`` (any placeholder) is one dotless name."""
    parts = re.split(r"(<[^>]+>)", name)
    return re.compile("".join("[^.]+" if part.startswith("<") else re.escape(part) for part in parts))


_BY_NAME = {option.name: option for option in OPTIONS if "<" not in option.name}
_PATTERNS = [(_pattern(option.name), option) for option in OPTIONS if "<" in option.name]


def lookup(key: str) -> CoreOption | None:
    """The option ``key`` is, or whose pattern it matches (``None``: not Paimon's)."""
    found = _BY_NAME.get(key)
    if found is not None:
        return found
    return next((option for pattern, option in _PATTERNS if pattern.fullmatch(key)), None)


def refuse(options: Mapping[str, str], operation: str, keys: Iterable[str] | None = None, append: bool = False) -> None:
    """Stops a read or a write (``operation``: :data:`READ` or :data:`WRITE`) of a table
    whose options ask for what merge-core does not do, naming the first such option of
    ``keys`` (default: every option); ``append``: the table has no primary key. A value
    Paimon would not parse is an :class:`InvalidInputError` naming the option."""
    for key in sorted(options if keys is None else keys):
        option = lookup(key)
        refusal = option.refusal(operation, append) if option is not None else None
        if refusal is not None and refusal.test(option.parse(options, key)):
            raise UnsupportedFeatureError(
                f"merge-core does not {operation} tables with option '{key}' = '{options[key]}': {refusal.why}"
            )


def parse_all(options: Mapping[str, str]) -> None:
    """Parses every Paimon option of ``options`` as Paimon would (InvalidInputError naming
    the first that does not parse)."""
    for key in sorted(options):
        option = lookup(key)
        if option is not None:
            option.parse(options, key)


def check_options(schema: TableSchema) -> None:
    """Checks the options of a new table before anything is written: every one parses as
    Paimon parses it, the LSM tree has two levels at least, and merge-core can read the
    table (the rules Paimon's ``SchemaValidation`` checks across options and columns are
    ``_validation``'s). A table merge-core does not write may be made for other writers:
    its writes are refused when they come."""
    options = schema.options
    parse_all(options)
    for key, argument in (("primary-key", "key"), ("partition", "partition_by")):
        if key in options:
            raise InvalidInputError(f"option '{key}' names a table's columns in Paimon's DDL; give {argument}= instead")
    top_level(schema)
    refuse(options, READ, append=not schema.primary_keys)


def markdown() -> str:
    """The table as docs/table-format.md lists it: honoured, accepted, refused."""
    groups: dict[str, list[str]] = {HONOURED: [], ACCEPTED: [], "refused": []}
    for option in sorted(OPTIONS, key=lambda o: o.name):
        verdicts = {READ: option.read, WRITE: option.write}
        # An option refused for every value but its "off" one is listed as refused only.
        classes = {
            op: v if isinstance(v, str) else v.otherwise if v.otherwise == H else None for op, v in verdicts.items()
        }
        for group in (HONOURED, ACCEPTED):
            if group in classes.values():
                ops = [op for op, c in classes.items() if c == group]
                groups[group].append(f"- `{option.name}`{_qualifier(ops, ' ({})')}: {option.why}")
                break
        refusals = {op: v for op, v in verdicts.items() if isinstance(v, Refusal)}
        if refusals and len(set(refusals.values())) == 1:
            refusal = next(iter(refusals.values()))
            groups["refused"].append(
                f"- `{option.name}` ({refusal.when}; {_qualifier(list(refusals), '{}')}): {refusal.why}"
            )
        else:
            for op, refusal in refusals.items():
                groups["refused"].append(f"- `{option.name}` ({refusal.when}; {op}s): {refusal.why}")
    titles = {HONOURED: "Honoured", ACCEPTED: "Accepted without effect", "refused": "Refused"}
    sections = [f"### {titles[group]}\n\n" + "\n".join(lines) for group, lines in groups.items()]
    sections.append("### On append tables (no primary key), instead\n\n" + "\n".join(_append_lines()))
    return "\n\n".join(sections) + "\n"


def _append_lines() -> list[str]:
    """The options whose verdict differs on an append table, one line each."""
    lines = []
    for name, (read, write, why) in sorted(APPEND.items()):
        words = []
        for operation, verdict in ((READ, read), (WRITE, write)):
            if isinstance(verdict, Refusal):
                words.append(f"refused in {operation}s ({verdict.when})")
                why = verdict.why
            else:
                words.append(f"{verdict} in {operation}s")
        lines.append(f"- `{name}`: {', '.join(words)}: {why}")
    return lines


def _qualifier(operations: list[str], form: str) -> str:
    """``reads``, ``writes`` or (both) nothing, in ``form``; both read as ``reads and writes`` in a refusal."""
    if len(operations) == 2:
        return "" if form != "{}" else "reads and writes"
    return form.format(f"{operations[0]}s")


if __name__ == "__main__":
    print(markdown(), end="")
