//! The version order of the rows of one key, and Paimon's row kinds.
//!
//! Contract: without a sequence column a version is `(run, row position)`; with sequence
//! columns it is `(sequence values, retract before add, run, row position)`. The order
//! is total, so every algorithm produces the same output. [`compare_versions`] is the
//! only implementation of it; the engines and the group sort all call it.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, Int16Array, Int32Array, Int64Array, Int8Array};
use arrow_array::{
    LargeStringArray, StringArray, StringViewArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_buffer::ScalarBuffer;
use arrow_schema::DataType;

use crate::error::{invalid, Result, RowLocation};
use crate::keys::primitive_values as native_values;

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

    fn from_code(code: i64) -> Option<Self> {
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

/// The version columns of one batch: sequence values (as order-preserving `i64`) and
/// row kinds, each present only when the merge was given that column.
#[derive(Default)]
pub(crate) struct BatchVersions {
    sequence: Vec<ScalarBuffer<i64>>,
    kinds: Option<Arc<[RowKind]>>,
    /// Some row is a retract.
    any_retract: bool,
}

impl BatchVersions {
    /// Reads the sequence and row-kind columns of a batch, rejecting nulls and unknown
    /// row kinds. `first_row` is the batch's offset in its run, for error messages.
    pub(crate) fn read(
        sequence: &[(&str, &ArrayRef)],
        row_kind: Option<(&str, &ArrayRef)>,
        run: usize,
        first_row: u64,
    ) -> Result<Self> {
        let at = |i: usize| RowLocation { run, row: first_row + i as u64 };
        let sequence = sequence
            .iter()
            .map(|(name, column)| {
                if let Some(i) = first_null(column.as_ref()) {
                    return Err(invalid!("{}: null in sequence column '{name}'", at(i)));
                }
                sequence_values(column.as_ref())
            })
            .collect::<Result<_>>()?;
        let kinds = match row_kind {
            None => None,
            Some((name, column)) => Some(read_row_kinds(name, column.as_ref(), &at)?),
        };
        let any_retract = kinds.as_ref().is_some_and(|k| k.iter().any(|k| k.is_retract()));
        Ok(Self { sequence, kinds, any_retract })
    }

    /// The row kind of `row` (`+I` when the merge has no row-kind column).
    #[inline]
    pub(crate) fn kind(&self, row: usize) -> RowKind {
        self.kinds.as_ref().map_or(RowKind::Insert, |k| k[row])
    }

    /// Every row's kind, if some row is a retract (`None`: every row is an add).
    pub(crate) fn kinds_with_retracts(&self) -> Option<&[RowKind]> {
        self.kinds.as_deref().filter(|_| self.any_retract)
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
    if a.versions.has_sequence() {
        for (sa, sb) in a.versions.sequence.iter().zip(&b.versions.sequence) {
            match sa[a.row].cmp(&sb[b.row]) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        // Retract before add: `true` (add) sorts after `false` (retract).
        let add_a = !a.versions.kind(a.row).is_retract();
        let add_b = !b.versions.kind(b.row).is_retract();
        if add_a != add_b {
            return add_a.cmp(&add_b);
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

/// Sequence values as `i64` in the same order as the column's own.
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
        other => {
            return Err(invalid!(
                "a sequence column must be an integer, date, time or timestamp column, not {other}"
            ))
        }
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
