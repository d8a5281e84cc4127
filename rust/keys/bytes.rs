//! Keys of one variable- or fixed-size byte column (strings and binaries), compared
//! bytewise as the contract states (UTF-8 byte order equals code point order).

use std::cmp::Ordering;
use std::marker::PhantomData;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryViewArray, FixedSizeBinaryArray, OffsetSizeTrait};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::DataType;

use super::{KeyEncoder, KeyValues};
use crate::error::Result;

/// Offsets and values of a utf8/binary (or large) column: a value is a plain slice.
pub(crate) struct ByteKeys<O: OffsetSizeTrait> {
    offsets: ScalarBuffer<O>,
    values: Buffer,
}

impl<O: OffsetSizeTrait> ByteKeys<O> {
    #[inline]
    fn value(&self, i: usize) -> &[u8] {
        let start = self.offsets[i].as_usize();
        let end = self.offsets[i + 1].as_usize();
        // SAFETY: the offsets come from a valid arrow array, so they are monotonic and
        // in bounds of `values`; `i < len` is the caller's contract as for any index.
        debug_assert!(start <= end && end <= self.values.len());
        unsafe { self.values.as_slice().get_unchecked(start..end) }
    }
}

impl<O: OffsetSizeTrait> KeyValues for ByteKeys<O> {
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        self.value(i).cmp(other.value(j))
    }
}

pub(crate) struct ByteEncoder<O>(PhantomData<fn() -> O>);

impl<O> ByteEncoder<O> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<O: OffsetSizeTrait> KeyEncoder for ByteEncoder<O> {
    type Values = ByteKeys<O>;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        let data = columns[0].to_data();
        Ok(ByteKeys {
            offsets: ScalarBuffer::new(data.buffers()[0].clone(), data.offset(), data.len() + 1),
            values: data.buffers()[1].clone(),
        })
    }
}

/// A utf8_view/binary_view column, compared through its views.
pub(crate) struct ViewKeys(BinaryViewArray);

impl KeyValues for ViewKeys {
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        self.0.value(i).cmp(other.0.value(j))
    }
}

pub(crate) struct ViewEncoder;

impl KeyEncoder for ViewEncoder {
    type Values = ViewKeys;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        let column = &columns[0];
        let views = match column.data_type() {
            DataType::Utf8View => column.as_string_view().clone().to_binary_view(),
            _ => column.as_binary_view().clone(),
        };
        Ok(ViewKeys(views))
    }
}

/// A fixed_size_binary column.
pub(crate) struct FixedKeys(FixedSizeBinaryArray);

impl KeyValues for FixedKeys {
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn compare(&self, i: usize, other: &Self, j: usize) -> Ordering {
        self.0.value(i).cmp(other.0.value(j))
    }
}

pub(crate) struct FixedEncoder;

impl KeyEncoder for FixedEncoder {
    type Values = FixedKeys;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        Ok(FixedKeys(columns[0].as_fixed_size_binary().clone()))
    }
}
