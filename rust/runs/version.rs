//! The version order of the rows of one key, and Paimon's row kinds.
//!
//! Contract (Paimon's): the versions of a key are ordered, oldest first, by
//! 1. the sequence columns (`sequence.field`), compared one after the other, ascending or
//!    all descending; a null is older than every value in either direction. A column of
//!    any orderable type may order versions, as in Paimon (strings by their UTF-8 bytes,
//!    floats as Java's `Float.compare`: -0 below +0, every NaN one value above +inf);
//! 2. the system sequence column, if any (Paimon's `_SEQUENCE_NUMBER`), ascending, and on
//!    equal system sequence numbers a retract before an add;
//! 3. run, then row position (the order of writing).
//!
//! The order is total, so every algorithm produces the same output. [`compare_versions`]
//! is the only implementation of it; the engines and the group sort all call it.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, Int16Array, Int32Array, Int64Array, Int8Array};
use arrow_array::{
    LargeStringArray, StringArray, StringViewArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;

use crate::error::{invalid, Result, RowLocation};
use crate::keys::{canonical_nans, per_line, prefetch_line, primitive_values as native_values};

/// Paimon's row kinds, with Paimon's byte codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RowKind {
    /// `+I`
    Insert = 0,
    /// `-U`
    UpdateBefore = 1,
    /// `+U`
    UpdateAfter = 2,
    /// `-D`
    Delete = 3,
}

impl RowKind {
    /// The short string form (`+I`, `-U`, `+U`, `-D`).
    pub fn as_str(self) -> &'static str {
        ["+I", "-U", "+U", "-D"][self as usize]
    }

    /// The kind of a code (0 `+I`, 1 `-U`, 2 `+U`, 3 `-D`).
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => Self::Insert,
            1 => Self::UpdateBefore,
            2 => Self::UpdateAfter,
            3 => Self::Delete,
            _ => return None,
        })
    }

    fn from_str(s: &str) -> Option<Self> {
        Some(match s {
            "+I" => Self::Insert,
            "-U" => Self::UpdateBefore,
            "+U" => Self::UpdateAfter,
            "-D" => Self::Delete,
            _ => return None,
        })
    }

    /// `-U` and `-D` take a version back; `+I` and `+U` add one.
    #[inline]
    pub fn is_retract(self) -> bool {
        matches!(self, Self::UpdateBefore | Self::Delete)
    }
}

/// The columns that order and classify the versions of a key (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionColumns {
    /// Sequence columns (Paimon's `sequence.field`); empty: arrival order decides.
    pub sequence: Vec<String>,
    /// The sequence columns order descending (`sequence.field.sort-order = descending`).
    pub descending: bool,
    /// A column ordering versions after the sequence columns whose value is the newest
    /// version's in every merge function (Paimon's `_SEQUENCE_NUMBER`); never null.
    pub system_sequence: Option<String>,
    /// Column of row kinds (`+I`, `-U`, `+U`, `-D` or codes 0..3).
    pub row_kind: Option<String>,
}

impl VersionColumns {
    /// Rows carry neither row kinds nor sequence numbers: every row is an add, in arrival order.
    pub(crate) fn plain(&self) -> bool {
        self.sequence.is_empty() && self.system_sequence.is_none() && self.row_kind.is_none()
    }
}

/// How the sequence columns of a batch order its versions (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SequenceOrder {
    /// How many of the batch's sequence columns are user sequence columns; a column after
    /// them is the system sequence.
    pub user_fields: usize,
    /// User sequence columns order descending (a smaller value is newer).
    pub descending: bool,
}

/// How the values of one sequence column compare, the same for every batch of a merge.
pub(crate) enum SequenceType {
    /// Integers, dates, times and timestamps: values as order-preserving `i64`.
    Integer,
    /// Any other orderable type (strings, decimals, floats, booleans, binary) in arrow's
    /// row format, by one converter that every batch of the merge shares: rows of
    /// different converters do not compare.
    Rows(RowConverter),
}

impl SequenceType {
    /// The form of a sequence column of type `data_type`.
    pub(crate) fn of(name: &str, data_type: &DataType) -> Result<Self> {
        if integer_like(data_type) {
            return Ok(Self::Integer);
        }
        let field = SortField::new(data_type.clone());
        if !RowConverter::supports_fields(std::slice::from_ref(&field)) {
            return Err(invalid!(
                "sequence column '{name}' has type {data_type}, whose values have no order"
            ));
        }
        Ok(Self::Rows(RowConverter::new(vec![field])?))
    }
}

/// The values of one sequence column of a batch, in a form whose order is the column's.
enum SequenceValues {
    Integers(ScalarBuffer<i64>),
    Rows(Rows),
}

/// One sequence column of a batch: its values and its nulls.
struct SequenceColumn {
    values: SequenceValues,
    nulls: Option<NullBuffer>,
}

impl SequenceColumn {
    #[inline]
    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|nulls| nulls.is_null(row))
    }

    /// The order of the (non-null) values at `row` and at `other`'s `other_row`.
    #[inline]
    fn compare(&self, row: usize, other: &Self, other_row: usize) -> Ordering {
        match (&self.values, &other.values) {
            (SequenceValues::Integers(x), SequenceValues::Integers(y)) => x[row].cmp(&y[other_row]),
            (SequenceValues::Rows(x), SequenceValues::Rows(y)) => x.row(row).cmp(&y.row(other_row)),
            _ => unreachable!("every batch of a merge reads a sequence column with its layout's one type"),
        }
    }
}

/// The version columns of one batch: sequence values and row kinds, each present only
/// when the merge was given that column.
#[derive(Default)]
pub(crate) struct BatchVersions {
    sequence: Vec<SequenceColumn>,
    order: SequenceOrder,
    kinds: Option<Arc<[RowKind]>>,
    /// Some row is a retract.
    any_retract: bool,
}

impl BatchVersions {
    /// Reads the sequence and row-kind columns of a batch (each sequence column in the
    /// form of its type in `types`), rejecting unknown row kinds and nulls in the system
    /// sequence. `first_row` is the batch's offset in its run, for error messages.
    pub(crate) fn read(
        sequence: &[(&str, &ArrayRef)],
        types: &[SequenceType],
        order: SequenceOrder,
        row_kind: Option<(&str, &ArrayRef)>,
        run: usize,
        first_row: u64,
    ) -> Result<Self> {
        let at = |i: usize| RowLocation { run, row: first_row + i as u64 };
        let sequence = sequence
            .iter()
            .zip(types)
            .enumerate()
            .map(|(i, ((name, column), kind))| {
                let nulls = column.logical_nulls().filter(|n| n.null_count() > 0);
                if let (true, Some(nulls)) = (i >= order.user_fields, &nulls) {
                    let row = nulls.iter().position(|valid| !valid).unwrap_or_default();
                    return Err(invalid!("{}: null in system sequence column '{name}'", at(row)));
                }
                let values = match kind {
                    SequenceType::Integer => SequenceValues::Integers(sequence_values(column.as_ref())?),
                    // Floats in Java's order, as keys are: every NaN one value.
                    SequenceType::Rows(converter) => SequenceValues::Rows(
                        converter.convert_columns(&canonical_nans(std::slice::from_ref(*column)))?,
                    ),
                };
                Ok(SequenceColumn { values, nulls })
            })
            .collect::<Result<_>>()?;
        let kinds = match row_kind {
            None => None,
            Some((name, column)) => Some(read_row_kinds(name, column.as_ref(), &at)?),
        };
        let any_retract = kinds.as_ref().is_some_and(|k| k.iter().any(|k| k.is_retract()));
        Ok(Self { sequence, order, kinds, any_retract })
    }

    /// The row kind of `row` (`+I` when the merge has no row-kind column).
    #[inline]
    pub(crate) fn kind(&self, row: usize) -> RowKind {
        self.kinds.as_ref().map_or(RowKind::Insert, |k| k[row])
    }

    /// Whether `row` is a retract; a batch without any retract answers from its flag,
    /// without reading the row's kind.
    #[inline]
    pub(crate) fn is_retract(&self, row: usize) -> bool {
        self.kinds_with_retracts().is_some_and(|k| k[row].is_retract())
    }

    /// Every row's kind, if some row is a retract (`None`: every row is an add).
    pub(crate) fn kinds_with_retracts(&self) -> Option<&[RowKind]> {
        self.kinds.as_deref().filter(|_| self.any_retract)
    }

    /// A cursor stands at `row`: asks for the line of sequence values after this one's.
    #[inline]
    pub(crate) fn prefetch_ahead(&self, row: usize) {
        for column in &self.sequence {
            if let SequenceValues::Integers(values) = &column.values {
                prefetch_line(values, row + per_line::<i64>());
            }
        }
    }

    /// Bytes of the sequence values kept in row format (strings, decimals, ...), beyond
    /// the 8 a value costs as an integer.
    pub(crate) fn encoded_bytes(&self) -> usize {
        let rows = |c: &SequenceColumn| match &c.values {
            SequenceValues::Rows(rows) => rows.size(),
            SequenceValues::Integers(_) => 0,
        };
        self.sequence.iter().map(rows).sum()
    }

    /// Does the version order of this merge depend on more than arrival order?
    pub(crate) fn has_sequence(&self) -> bool {
        !self.sequence.is_empty()
    }
}

/// One row's place in the version order.
#[derive(Clone, Copy)]
pub(crate) struct Version<'a> {
    pub versions: &'a BatchVersions,
    pub row: usize,
    pub run: usize,
    /// Position of the row in its run.
    pub position: u64,
}

/// The contract's total version order (older first).
#[inline]
pub(crate) fn compare_versions(a: Version<'_>, b: Version<'_>) -> Ordering {
    let (va, vb) = (a.versions, b.versions);
    if va.has_sequence() {
        let order = va.order;
        for (i, (sa, sb)) in va.sequence.iter().zip(&vb.sequence).enumerate() {
            let user = i < order.user_fields;
            let ordering = match (sa.is_null(a.row), sb.is_null(b.row)) {
                (false, false) if user && order.descending => sb.compare(b.row, sa, a.row),
                (false, false) => sa.compare(a.row, sb, b.row),
                // A null is the oldest version, in either direction.
                (null_a, null_b) => null_b.cmp(&null_a),
            };
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        if va.sequence.len() > order.user_fields {
            // Equal system sequence numbers: a retract before an add (`false` sorts first).
            let add_a = !va.is_retract(a.row);
            let add_b = !vb.is_retract(b.row);
            if add_a != add_b {
                return add_a.cmp(&add_b);
            }
        }
    }
    (a.run, a.position).cmp(&(b.run, b.position))
}

/// Index of the first null of `array`, if any.
pub(crate) fn first_null(array: &dyn Array) -> Option<usize> {
    let nulls = array.logical_nulls()?;
    if nulls.null_count() == 0 {
        return None;
    }
    nulls.iter().position(|valid| !valid)
}

/// Whether [`sequence_values`] takes a column of this type.
fn integer_like(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int64
            | Date64
            | Timestamp(_, _)
            | Time64(_)
            | Duration(_)
            | Int32
            | Date32
            | Time32(_)
            | Int16
            | Int8
            | UInt32
            | UInt16
            | UInt8
            | UInt64
    )
}

/// Integer-like values (see [`integer_like`]) as `i64` in the same order as the column's own.
fn sequence_values(column: &dyn Array) -> Result<ScalarBuffer<i64>> {
    use DataType::*;
    fn widen<N: ArrowNativeTypeOp>(column: &dyn Array, f: impl Fn(N) -> i64) -> ScalarBuffer<i64> {
        native_values::<N>(column).iter().map(|v| f(*v)).collect()
    }
    Ok(match column.data_type() {
        Int64 | Date64 | Timestamp(_, _) | Time64(_) | Duration(_) => native_values::<i64>(column),
        Int32 | Date32 | Time32(_) => widen::<i32>(column, i64::from),
        Int16 => widen::<i16>(column, i64::from),
        Int8 => widen::<i8>(column, i64::from),
        UInt32 => widen::<u32>(column, i64::from),
        UInt16 => widen::<u16>(column, i64::from),
        UInt8 => widen::<u8>(column, i64::from),
        // Flipping the top bit maps u64 order onto i64 order.
        UInt64 => widen::<u64>(column, |v| (v ^ (1 << 63)) as i64),
        other => return Err(invalid!("a column of type {other} has no integer values")),
    })
}

/// Checks that `column` can be a row-kind column.
pub(crate) fn check_row_kind_type(name: &str, data_type: &DataType) -> Result<()> {
    use DataType::*;
    match data_type {
        Utf8 | LargeUtf8 | Utf8View | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => {
            Ok(())
        }
        other => Err(invalid!(
            "row-kind column '{name}' must hold strings (+I, -U, +U, -D) or integer codes 0..3, not {other}"
        )),
    }
}

fn read_row_kinds(
    name: &str,
    column: &dyn Array,
    at: &dyn Fn(usize) -> RowLocation,
) -> Result<Arc<[RowKind]>> {
    if let Some(i) = first_null(column) {
        return Err(invalid!("{}: null in row-kind column '{name}'", at(i)));
    }
    let bad = |i: usize, shown: String| {
        invalid!("{}: unknown row kind {shown} in column '{name}' (expected +I, -U, +U, -D or 0..3)", at(i))
    };
    let from_strs = |values: &mut dyn Iterator<Item = Option<&str>>| -> Result<Arc<[RowKind]>> {
        values
            .enumerate()
            .map(|(i, s)| {
                let s = s.unwrap_or_default();
                RowKind::from_str(s).ok_or_else(|| bad(i, format!("'{s}'")))
            })
            .collect()
    };
    let from_codes = |values: &mut dyn Iterator<Item = i64>| -> Result<Arc<[RowKind]>> {
        values
            .enumerate()
            .map(|(i, code)| RowKind::from_code(code).ok_or_else(|| bad(i, code.to_string())))
            .collect()
    };
    use DataType::*;
    match column.data_type() {
        Utf8 => from_strs(&mut column.as_string::<i32>().iter()),
        LargeUtf8 => from_strs(&mut column.as_string::<i64>().iter()),
        Utf8View => from_strs(&mut column.as_string_view().iter()),
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 => {
            from_codes(&mut sequence_values(column)?.iter().copied())
        }
        UInt64 => from_codes(&mut native_values::<u64>(column).iter().map(|v| (*v).min(99) as i64)),
        other => Err(invalid!("row-kind column '{name}' has unsupported type {other}")),
    }
}

/// Whether each row of a row-kind column is a retract (`-U`, `-D`); `None` when none is.
/// Nulls and unknown kinds are refused, naming the row (`at`).
pub(crate) fn retracts(
    name: &str,
    column: &dyn Array,
    at: &dyn Fn(usize) -> RowLocation,
) -> Result<Option<Vec<bool>>> {
    let kinds = read_row_kinds(name, column, at)?;
    Ok(kinds.iter().any(|k| k.is_retract()).then(|| kinds.iter().map(|k| k.is_retract()).collect()))
}

/// Builds an output row-kind column of `data_type` (the input's representation).
pub(crate) fn row_kind_array(data_type: &DataType, kinds: &[RowKind]) -> ArrayRef {
    use DataType::*;
    let codes = kinds.iter().map(|k| *k as u8);
    let strs = kinds.iter().map(|k| Some(k.as_str()));
    match data_type {
        Utf8 => Arc::new(strs.collect::<StringArray>()),
        LargeUtf8 => Arc::new(strs.collect::<LargeStringArray>()),
        Utf8View => Arc::new(strs.collect::<StringViewArray>()),
        Int8 => Arc::new(codes.map(|c| c as i8).collect::<Int8Array>()),
        Int16 => Arc::new(codes.map(i16::from).collect::<Int16Array>()),
        Int32 => Arc::new(codes.map(i32::from).collect::<Int32Array>()),
        Int64 => Arc::new(codes.map(i64::from).collect::<Int64Array>()),
        UInt8 => Arc::new(codes.collect::<UInt8Array>()),
        UInt16 => Arc::new(codes.map(u16::from).collect::<UInt16Array>()),
        UInt32 => Arc::new(codes.map(u32::from).collect::<UInt32Array>()),
        _ => Arc::new(codes.map(u64::from).collect::<UInt64Array>()),
    }
}
