//! Single values read from columns, for the aggregates that compute (sum, product,
//! listagg, bool_and/or) or compare (min, max), and the buffers their results go to.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeStringArray, StringArray, StringViewArray, UInt16Array, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};

use crate::error::{MergeError, Result};

/// A non-null value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    /// Any integer, decimal (unscaled), date, time or timestamp.
    Int(i128),
    Float(f64),
    /// Strings (UTF-8 bytes) and binaries.
    Bytes(&'a [u8]),
    Bool(bool),
}

impl Value<'_> {
    /// Numbers by value (floats by IEEE total order), bytes lexicographically (min and
    /// max use the fold's `java_compare`, which orders NaNs as Java does).
    pub(crate) fn compare(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            _ => Ordering::Equal, // one column has one type
        }
    }
}

/// What kind of values a column holds, as far as aggregates care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// Integers and decimals: sum and product apply.
    Number,
    Float,
    /// Dates, times, timestamps, durations: ordered, but summing them means nothing.
    Temporal,
    Text,
    Binary,
    Bool,
    Other,
}

pub(crate) fn kind_of(data_type: &DataType) -> ValueKind {
    use DataType::*;
    match data_type {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Decimal128(_, _) => {
            ValueKind::Number
        }
        Float32 | Float64 => ValueKind::Float,
        Date32 | Date64 | Time32(_) | Time64(_) | Timestamp(_, _) | Duration(_) => ValueKind::Temporal,
        Utf8 | LargeUtf8 | Utf8View => ValueKind::Text,
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => ValueKind::Binary,
        Boolean => ValueKind::Bool,
        _ => ValueKind::Other,
    }
}

/// The value at `row`, `None` for a null (or a type aggregates cannot read).
pub(crate) fn read(array: &dyn Array, row: usize) -> Option<Value<'_>> {
    if array.is_null(row) {
        return None;
    }
    macro_rules! int {
        ($t:ty) => {
            Value::Int(array.as_primitive::<$t>().value(row) as i128)
        };
    }
    use DataType::*;
    Some(match array.data_type() {
        Int8 => int!(Int8Type),
        Int16 => int!(Int16Type),
        Int32 => int!(Int32Type),
        Int64 => int!(Int64Type),
        UInt8 => int!(UInt8Type),
        UInt16 => int!(UInt16Type),
        UInt32 => int!(UInt32Type),
        UInt64 => int!(UInt64Type),
        Decimal128(_, _) => int!(Decimal128Type),
        Date32 => int!(Date32Type),
        Date64 => int!(Date64Type),
        Time32(TimeUnit::Second) => int!(Time32SecondType),
        Time32(_) => int!(Time32MillisecondType),
        Time64(TimeUnit::Microsecond) => int!(Time64MicrosecondType),
        Time64(_) => int!(Time64NanosecondType),
        Timestamp(TimeUnit::Second, _) => int!(TimestampSecondType),
        Timestamp(TimeUnit::Millisecond, _) => int!(TimestampMillisecondType),
        Timestamp(TimeUnit::Microsecond, _) => int!(TimestampMicrosecondType),
        Timestamp(TimeUnit::Nanosecond, _) => int!(TimestampNanosecondType),
        Duration(TimeUnit::Second) => int!(DurationSecondType),
        Duration(TimeUnit::Millisecond) => int!(DurationMillisecondType),
        Duration(TimeUnit::Microsecond) => int!(DurationMicrosecondType),
        Duration(TimeUnit::Nanosecond) => int!(DurationNanosecondType),
        Float32 => Value::Float(array.as_primitive::<Float32Type>().value(row) as f64),
        Float64 => Value::Float(array.as_primitive::<Float64Type>().value(row)),
        Utf8 => Value::Bytes(array.as_string::<i32>().value(row).as_bytes()),
        LargeUtf8 => Value::Bytes(array.as_string::<i64>().value(row).as_bytes()),
        Utf8View => Value::Bytes(array.as_string_view().value(row).as_bytes()),
        Binary => Value::Bytes(array.as_binary::<i32>().value(row)),
        LargeBinary => Value::Bytes(array.as_binary::<i64>().value(row)),
        BinaryView => Value::Bytes(array.as_binary_view().value(row)),
        FixedSizeBinary(_) => Value::Bytes(array.as_fixed_size_binary().value(row)),
        Boolean => Value::Bool(array.as_boolean().value(row)),
        _ => return None,
    })
}

/// A column of a stored batch as the fold reads it: typed slices for the common
/// types, so reading a value is a match and a null-bit test, not a run of virtual calls.
/// Every view keeps its column's null bits (testing for null is what folds do most).
pub(crate) enum ColumnView {
    Int64 { values: ScalarBuffer<i64>, nulls: Option<NullBuffer> },
    Float64 { values: ScalarBuffer<f64>, nulls: Option<NullBuffer> },
    Other { array: ArrayRef, nulls: Option<NullBuffer> },
}

impl ColumnView {
    pub(crate) fn new(array: &ArrayRef) -> Self {
        let nulls = array.logical_nulls();
        match array.data_type() {
            DataType::Int64 => {
                Self::Int64 { values: array.as_primitive::<Int64Type>().values().clone(), nulls }
            }
            DataType::Float64 => {
                Self::Float64 { values: array.as_primitive::<Float64Type>().values().clone(), nulls }
            }
            _ => Self::Other { array: array.clone(), nulls },
        }
    }

    #[inline(always)]
    pub(crate) fn is_null(&self, row: usize) -> bool {
        self.nulls().is_some_and(|n| n.is_null(row))
    }

    /// The column's null bits (`None`: no nulls).
    #[inline(always)]
    pub(crate) fn nulls(&self) -> Option<&NullBuffer> {
        let (Self::Int64 { nulls, .. } | Self::Float64 { nulls, .. } | Self::Other { nulls, .. }) = self;
        nulls.as_ref()
    }

    /// The value at `row`, `None` for a null.
    #[inline(always)]
    pub(crate) fn get(&self, row: usize) -> Option<Value<'_>> {
        match self {
            _ if self.is_null(row) => None,
            Self::Int64 { values, .. } => Some(Value::Int(values[row] as i128)),
            Self::Float64 { values, .. } => Some(Value::Float(values[row])),
            Self::Other { array, .. } => read(array.as_ref(), row),
        }
    }
}

/// Results of a computing aggregate, one per output row, until the batch is built.
pub(crate) enum Computed {
    Int(Vec<Option<i128>>),
    Float(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    Bool(Vec<Option<bool>>),
}

impl Computed {
    pub(crate) fn for_type(data_type: &DataType) -> Self {
        match kind_of(data_type) {
            ValueKind::Float => Self::Float(Vec::new()),
            ValueKind::Text => Self::Text(Vec::new()),
            ValueKind::Bool => Self::Bool(Vec::new()),
            _ => Self::Int(Vec::new()),
        }
    }

    pub(crate) fn is_text(&self) -> bool {
        matches!(self, Self::Text(_))
    }

    /// Appends a value read from an input row (a key seen once).
    pub(crate) fn push_value(&mut self, value: Option<Value<'_>>) {
        match (self, value) {
            (Self::Int(v), Some(Value::Int(x))) => v.push(Some(x)),
            (Self::Float(v), Some(Value::Float(x))) => v.push(Some(x)),
            (Self::Text(v), Some(Value::Bytes(x))) => v.push(Some(String::from_utf8_lossy(x).into_owned())),
            (Self::Bool(v), Some(Value::Bool(x))) => v.push(Some(x)),
            (Self::Int(v), _) => v.push(None),
            (Self::Float(v), _) => v.push(None),
            (Self::Text(v), _) => v.push(None),
            (Self::Bool(v), _) => v.push(None),
        }
    }

    /// Bytes of the first `n` values of a text buffer.
    pub(crate) fn text_bytes(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        let texts = match self {
            Self::Text(v) => &v[..n.min(v.len())],
            _ => &[][..],
        };
        texts.iter().map(|t| t.as_ref().map_or(0, String::len))
    }

    /// Builds the column (of the input column's type) of the first `n` values and
    /// removes them from the buffer.
    pub(crate) fn finish(&mut self, data_type: &DataType, n: usize) -> Result<ArrayRef> {
        use DataType::*;
        macro_rules! ints {
            ($v:expr, $arr:ty, $t:ty) => {
                Arc::new($v.map(|x| x.map(|x| x as $t)).collect::<$arr>()) as ArrayRef
            };
        }
        Ok(match (self, data_type) {
            (Self::Int(v), Int8) => ints!(v.drain(..n), Int8Array, i8),
            (Self::Int(v), Int16) => ints!(v.drain(..n), Int16Array, i16),
            (Self::Int(v), Int32) => ints!(v.drain(..n), Int32Array, i32),
            (Self::Int(v), Int64) => ints!(v.drain(..n), Int64Array, i64),
            (Self::Int(v), UInt8) => ints!(v.drain(..n), UInt8Array, u8),
            (Self::Int(v), UInt16) => ints!(v.drain(..n), UInt16Array, u16),
            (Self::Int(v), UInt32) => ints!(v.drain(..n), UInt32Array, u32),
            (Self::Int(v), UInt64) => ints!(v.drain(..n), UInt64Array, u64),
            (Self::Int(v), Decimal128(p, s)) => {
                Arc::new(v.drain(..n).collect::<Decimal128Array>().with_precision_and_scale(*p, *s)?)
            }
            (Self::Float(v), Float32) => {
                Arc::new(v.drain(..n).map(|x| x.map(|x| x as f32)).collect::<Float32Array>())
            }
            (Self::Float(v), Float64) => Arc::new(v.drain(..n).collect::<Float64Array>()),
            (Self::Text(v), Utf8) => {
                if let Some(big) = v[..n].iter().flatten().find(|t| t.len() > i32::MAX as usize) {
                    return Err(MergeError::InvalidInput(format!(
                        "a computed string of {} bytes exceeds the 2 GiB a string (utf8) column holds; \
                         use a large_string column",
                        big.len()
                    )));
                }
                Arc::new(v.drain(..n).collect::<StringArray>())
            }
            (Self::Text(v), LargeUtf8) => Arc::new(v.drain(..n).collect::<LargeStringArray>()),
            (Self::Text(v), Utf8View) => Arc::new(v.drain(..n).collect::<StringViewArray>()),
            (Self::Bool(v), Boolean) => Arc::new(v.drain(..n).collect::<BooleanArray>()),
            (_, other) => return Err(MergeError::Internal(format!("no computed column of type {other}"))),
        })
    }
}
