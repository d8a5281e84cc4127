//! Keys of one variable- or fixed-size byte column (strings and binaries), compared
//! bytewise as the contract states (UTF-8 byte order equals code point order).

use std::cmp::Ordering;
use std::marker::PhantomData;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryViewArray, FixedSizeBinaryArray, OffsetSizeTrait};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::DataType;

use super::{byte_prefix, KeyEncoder, KeyValues};
use crate::error::{invalid, Result};

/// Offsets and values of a utf8/binary (or large) column: a value is a plain slice.
/// Each value's first eight bytes are also kept as a big-endian integer, so that most
/// comparisons (keys that differ early, like hashes and UUIDs) are one integer compare.
pub(crate) struct ByteKeys<O: OffsetSizeTrait> {
    offsets: ScalarBuffer<O>,
    values: Buffer,
    prefixes: Vec<u64>,
}

impl<O: OffsetSizeTrait> ByteKeys<O> {
    #[inline]
    fn value(&self, i: usize) -> &[u8] {
        let start = self.offsets[i].as_usize();
        let end = self.offsets[i + 1].as_usize();
        // SAFETY: `ByteEncoder::encode` checked every value's range `offsets[i]..offsets[i + 1]`
        // against `values` (an array from a C stream is not validated on import); an
        // `i >= len` panics at the offsets' bounds check above.
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
        // Unequal prefixes order the values as the bytes do (see `byte_prefix`); equal ones
        // say nothing (the values may differ later, or in length).
        match self.prefixes[i].cmp(&other.prefixes[j]) {
            Ordering::Equal => self.value(i).cmp(other.value(j)),
            unequal => unequal,
        }
    }

    #[inline]
    fn digest(&self, i: usize) -> u64 {
        self.prefixes[i]
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
        let offsets: ScalarBuffer<O> =
            ScalarBuffer::new(data.buffers()[0].clone(), data.offset(), data.len() + 1);
        let values = data.buffers()[1].clone();
        // Every value's range is checked once here, so that comparisons need not.
        let prefixes = offsets
            .windows(2)
            .map(|w| {
                let value = values.as_slice().get(w[0].as_usize()..w[1].as_usize());
                value.map(byte_prefix).ok_or_else(|| {
                    invalid!("a key column's offsets point outside its values: the array is malformed")
                })
            })
            .collect::<Result<_>>()?;
        Ok(ByteKeys { offsets, values, prefixes })
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

    fn digest(&self, i: usize) -> u64 {
        byte_prefix(self.0.value(i))
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

    fn digest(&self, i: usize) -> u64 {
        byte_prefix(self.0.value(i))
    }
}

pub(crate) struct FixedEncoder;

impl KeyEncoder for FixedEncoder {
    type Values = FixedKeys;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        Ok(FixedKeys(columns[0].as_fixed_size_binary().clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::BinaryArray;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The prefix shortcut never changes an order: short values, shared heads,
        /// zero bytes (which equal the padding) and values longer than the prefix.
        #[test]
        fn byte_keys_compare_as_their_bytes(
            values in prop::collection::vec(prop::collection::vec(prop::sample::select(vec![0u8, 1, 7, 255]), 0..12), 1..24),
        ) {
            let array: ArrayRef = Arc::new(BinaryArray::from_iter_values(&values));
            let keys = ByteEncoder::<i32>::new().encode(&[array])?;
            for (i, a) in values.iter().enumerate() {
                for (j, b) in values.iter().enumerate() {
                    prop_assert_eq!(keys.compare(i, &keys, j), a.cmp(b), "{:?} vs {:?}", a, b);
                }
            }
        }
    }
}
