//! Keys of one variable- or fixed-size byte column (strings and binaries), compared
//! bytewise as the contract states (UTF-8 byte order equals code point order).

use std::cmp::Ordering;
use std::marker::PhantomData;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryViewArray, FixedSizeBinaryArray, OffsetSizeTrait};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::DataType;

use super::{
    byte_prefix, digest_past, per_line, prefetch_line, prefetch_two_lines, shared_by_digests, shared_len,
    tie_is_exact, KeyEncoder, KeyValues, SharedHead,
};
use crate::error::{invalid, Result};

/// Offsets and values of a utf8/binary (or large) column: a value is a plain slice.
/// Each value's digest past the merge's shared head is kept beside it, so that most
/// comparisons (keys that differ early past the head, like hashes and UUIDs) are one
/// integer compare, and a tie of short tails needs none of the bytes.
pub(crate) struct ByteKeys<O: OffsetSizeTrait> {
    offsets: ScalarBuffer<O>,
    values: Buffer,
    /// Each value's [`digest_past`] the merge's shared head.
    prefixes: Vec<u64>,
    /// Length of that head.
    head_len: usize,
    /// Some key of the batch is longer than its digest holds, so a tie of its digest
    /// compares bytes (see [`tie_is_exact`]).
    ties_read_bytes: bool,
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
        // Unequal digests order the values as the bytes do (see `digest_past`); equal ones
        // settle only short tails (the values may differ later, or in length).
        let digest = self.prefixes[i];
        match digest.cmp(&other.prefixes[j]) {
            Ordering::Equal if tie_is_exact(digest) => Ordering::Equal,
            Ordering::Equal => {
                let skip = shared_len(self.head_len, digest);
                self.value(i)[skip..].cmp(&other.value(j)[skip..])
            }
            unequal => unequal,
        }
    }

    #[inline]
    fn digest(&self, i: usize) -> u64 {
        self.prefixes[i]
    }

    #[inline]
    fn tie_is_equal(digest: u64) -> bool {
        tie_is_exact(digest)
    }

    /// The line of digests after this row's, and, if this batch has keys longer than a
    /// digest holds (whose ties compare bytes), the next row's bytes past the head.
    #[inline]
    fn prefetch_ahead(&self, i: usize) {
        prefetch_line(&self.prefixes, i + per_line::<u64>());
        if self.ties_read_bytes {
            if let Some(start) = self.offsets.get(i + 1) {
                prefetch_two_lines(self.values.as_slice(), start.as_usize() + self.head_len);
            }
        }
    }

    const BYTE_ORDERED: bool = true;

    #[inline]
    fn ordered_bytes(&self, i: usize) -> Option<&[u8]> {
        Some(self.value(i))
    }

    #[inline]
    fn digests_settle(&self) -> bool {
        !self.ties_read_bytes
    }

    #[inline]
    fn known_shared(&self, i: usize, other: &Self, j: usize) -> usize {
        shared_by_digests(self.head_len, self.prefixes[i], other.prefixes[j])
    }
}

/// How many keys ahead of the one being encoded the encode asks for (on 128-byte keys,
/// 8 and 16 ahead measured as fast as each other, 4 slower).
const PREFETCH_AHEAD: usize = 16;

pub(crate) struct ByteEncoder<O> {
    head: SharedHead,
    offsets: PhantomData<fn() -> O>,
}

impl<O> ByteEncoder<O> {
    pub(crate) fn new() -> Self {
        Self { head: SharedHead::default(), offsets: PhantomData }
    }
}

impl<O: OffsetSizeTrait> KeyEncoder for ByteEncoder<O> {
    type Values = ByteKeys<O>;

    fn encode(&self, columns: &[ArrayRef]) -> Result<Self::Values> {
        let data = columns[0].to_data();
        let offsets: ScalarBuffer<O> =
            ScalarBuffer::new(data.buffers()[0].clone(), data.offset(), data.len() + 1);
        let values = data.buffers()[1].clone();
        // Every value's range is checked once here, so that comparisons need not: offsets
        // that never decrease, from a first one that is not negative (a negative one is
        // huge as a usize) to a last one inside the values.
        let in_range = |o: &O| o.as_usize() <= values.len();
        let ordered = offsets.windows(2).all(|w| w[0] <= w[1]);
        if !(ordered && offsets.first().is_some_and(in_range) && offsets.last().is_some_and(in_range)) {
            return Err(invalid!("a key column's offsets point outside its values: the array is malformed"));
        }
        let value = |w: &[O]| &values.as_slice()[w[0].as_usize()..w[1].as_usize()];
        let head = self.head.learn(offsets.windows(2).map(value));
        // The bytes of a key a few ahead are asked for early: long keys are read once,
        // in order, and the hardware prefetcher alone leaves the head checks waiting on
        // memory (see `prefetch_line`). Past the last one, the values' start is asked again.
        let ahead = offsets.iter().skip(PREFETCH_AHEAD).map(|o| o.as_usize()).chain(std::iter::repeat(0));
        let prefixes: Vec<u64> = (offsets.windows(2).zip(ahead))
            .map(|(w, ahead)| {
                prefetch_two_lines(values.as_slice(), ahead);
                digest_past(head, value(w))
            })
            .collect();
        let head_len = head.len();
        let ties_read_bytes = prefixes.iter().any(|&digest| !tie_is_exact(digest));
        Ok(ByteKeys { offsets, values, prefixes, head_len, ties_read_bytes })
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

    // Not BYTE_ORDERED: offset-value codes are measured only on string and binary keys
    // (benches/merge.rs); these keep the digest path until a bench shows codes pay here.
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

    // Not BYTE_ORDERED: offset-value codes are measured only on string and binary keys
    // (benches/merge.rs); these keep the digest path until a bench shows codes pay here.
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

    /// Byte strings over a few bytes (zeros equal the padding) that often share a head,
    /// with tails from empty to several words past what a digest holds.
    fn values() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let byte = prop::sample::select(vec![0u8, 1, 7, 255]);
        let tail = prop_oneof![
            prop::collection::vec(byte.clone(), 0..12),
            (20..40usize, prop::collection::vec(byte, 0..4))
                .prop_map(|(n, end)| [vec![7u8; n], end].concat()),
        ];
        let value = (0..12usize, tail).prop_map(|(shared, tail)| [vec![7u8; shared], tail].concat());
        prop::collection::vec(value, 1..24)
    }

    proptest! {
        /// The digest shortcut never changes an order, within a batch or across two
        /// batches of one encoder (the head is learnt from the first): short values,
        /// shared heads, values that stop inside the head, zero bytes (which equal the
        /// padding) and values longer than the digest.
        #[test]
        fn byte_keys_compare_as_their_bytes(first in values(), second in values()) {
            let encoder = ByteEncoder::<i32>::new();
            let encode = |values: &Vec<Vec<u8>>| {
                let array: ArrayRef = Arc::new(BinaryArray::from_iter_values(values));
                encoder.encode(&[array])
            };
            let batches = [(&first, encode(&first)?), (&second, encode(&second)?)];
            for (values_a, keys_a) in &batches {
                for (values_b, keys_b) in &batches {
                    for (i, a) in values_a.iter().enumerate() {
                        for (j, b) in values_b.iter().enumerate() {
                            prop_assert_eq!(keys_a.compare(i, keys_b, j), a.cmp(b), "{:?} vs {:?}", a, b);
                            let (da, db) = (keys_a.digest(i), keys_b.digest(j));
                            prop_assert!(da == db || da.cmp(&db) == a.cmp(b), "{:?} vs {:?}", a, b);
                            let settled = da == db && ByteKeys::<i32>::tie_is_equal(da);
                            prop_assert!(!settled || a == b, "{:?} vs {:?}", a, b);
                        }
                    }
                }
            }
        }
    }
}
