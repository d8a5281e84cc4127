//! Keys of one fixed-width column (integers, floats, decimals, dates, times, timestamps).

use std::cmp::Ordering;
use std::marker::PhantomData;

use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp};
use arrow_buffer::ScalarBuffer;

use super::{KeyEncoder, KeyValues};
use crate::error::Result;

/// The values buffer of one primitive column, reinterpreted as its native type `N`
/// (a date32 column as `i32`, a timestamp as `i64`, a decimal128 as `i128`).
pub(crate) struct PrimitiveKeys<N: ArrowNativeTypeOp>(ScalarBuffer<N>);

impl<N: ArrowNativeTypeOp> KeyValues for PrimitiveKeys<N> {
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        debug_assert!(i < self.0.len() && j < other.0.len());
        // SAFETY: cursors only compare their current row, which is below the batch length
        // (`Runs::advance` moves to the next batch when the position reaches it).
        let (a, b) = unsafe { (*self.0.get_unchecked(i), *other.0.get_unchecked(j)) };
        // `ArrowNativeTypeOp::compare` is the IEEE total order for floats.
        a.compare(b)
    }
}

pub(crate) struct PrimitiveEncoder<N>(PhantomData<fn() -> N>);

impl<N> PrimitiveEncoder<N> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<N: ArrowNativeTypeOp> KeyEncoder for PrimitiveEncoder<N> {
    type Values = PrimitiveKeys<N>;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        Ok(PrimitiveKeys(native_values::<N>(columns[0].as_ref())))
    }
}

/// The values of a fixed-width array as `N`, without copying; `N` must have the array's
/// byte width (the caller's dispatch on the data type guarantees it).
pub(crate) fn native_values<N: ArrowNativeTypeOp>(array: &dyn Array) -> ScalarBuffer<N> {
    let data = array.to_data();
    ScalarBuffer::new(data.buffers()[0].clone(), data.offset(), data.len())
}
