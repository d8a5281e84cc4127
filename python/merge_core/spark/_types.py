"""A table's Arrow types as Spark's, and the Arrow form Spark takes them back in.

``mc.Table`` reads Paimon's types as Arrow (``paimon._schema.arrow_type``); Spark's Python
data sources hand Spark Arrow batches whose schema must equal, field for field, the Arrow
form of the Spark schema they declared (``to_arrow_schema(..., timezone="UTC")``). So the
source declares :func:`spark_schema` and casts each batch to :func:`arrow_form`.

============================  ===========================  ================================
Paimon                        Arrow (merge-core)           Spark
============================  ===========================  ================================
BOOLEAN, TINYINT .. BIGINT    bool, int8 .. int64          Boolean, Byte .. Long
FLOAT, DOUBLE                 float32, float64             Float, Double
DECIMAL(p, s)                 decimal128(p, s)             Decimal(p, s)
CHAR, VARCHAR, STRING         string                       String
BINARY, VARBINARY, BYTES      binary                       Binary
DATE                          date32                       Date
TIMESTAMP(p)                  timestamp(ms|us|ns)          TimestampNTZ (microseconds)
TIMESTAMP(p) WITH LOCAL TZ    timestamp(ms|us|ns, UTC)     Timestamp (microseconds)
TIME(p)                       time32(ms)                   refused: Spark's TIME is off by
                                                           default (spark.sql.timeType)
ARRAY, MAP, ROW               list, map, struct            Array, Map, Struct (nullability
                                                           of elements, values and fields
                                                           kept)
============================  ===========================  ================================

Spark keeps microseconds: a TIMESTAMP(7..9) value is cut to the microsecond on the way
in, as Paimon's own Spark connector does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of a read whose Arrow schema is ``schema``; a column of a type
    Spark cannot hold is refused by name."""
    from pyspark.sql.types import StructField, StructType

    fields = []
    for field in schema:
        try:
            fields.append(StructField(field.name, spark_type(field.type), field.nullable))
        except UnsupportedFeatureError as e:
            raise UnsupportedFeatureError(f"column {field.name!r}: {e}") from None
    return StructType(fields)


def spark_type(arrow: pa.DataType) -> DataType:
    """One Arrow type of merge-core's reads as Spark's (see the module's table)."""
    from pyspark.sql import types as T

    atomic = {
        pa.bool_(): T.BooleanType(),
        pa.int8(): T.ByteType(),
        pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(),
        pa.string(): T.StringType(),
        pa.large_string(): T.StringType(),
        pa.binary(): T.BinaryType(),
        pa.large_binary(): T.BinaryType(),
        pa.date32(): T.DateType(),
    }
    if arrow in atomic:
        return atomic[arrow]
    if pa.types.is_decimal(arrow) and arrow.precision <= 38:
        return T.DecimalType(arrow.precision, arrow.scale)
    if pa.types.is_timestamp(arrow):
        return T.TimestampType() if arrow.tz else T.TimestampNTZType()
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return T.ArrayType(spark_type(arrow.value_type), arrow.value_field.nullable)
    if pa.types.is_map(arrow):
        return T.MapType(spark_type(arrow.key_type), spark_type(arrow.item_type), arrow.item_field.nullable)
    if pa.types.is_struct(arrow):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in arrow])
    raise UnsupportedFeatureError(f"Arrow type {arrow} has no Spark type merge-core reads into")


def arrow_form(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects of batches for ``schema``: timestamps in
    microseconds (with the zone UTC when they are instants), Spark's names for list
    elements and map entries."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def to_spark(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` (a read's, columns in ``target``'s order) cast to ``target``. Only
    timestamps change value: nanoseconds are cut to microseconds (unsafe cast)."""
    if batch.schema.equals(target):
        return batch
    return batch.cast(target, safe=False)
